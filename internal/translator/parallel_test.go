package translator

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// TestParallelBuildMatchesBuild is the property that makes buildParallel safe: whatever the
// cluster and however many goroutines, its Result is Build's (the same rendered bytes, State,
// problems, object graph and Gateway API attachment). Clusters are every golden case's input,
// benchmark clusters, and random clusters of every kind (the fuzz generator's), each alone and
// several side by side in namespaces of their own (so that they are cut into groups and some
// groups' Services are also used by HTTPRoutes, facades or plugins of the rest).
func TestParallelBuildMatchesBuild(t *testing.T) {
	type cluster struct {
		name string
		snap *store.Snapshot
		opts Options
		// several makes it count among the clusters most of which must be spread.
		several bool
	}
	var clusters []cluster
	for _, s := range goldenStarts(t) {
		clusters = append(clusters, cluster{s.name, s.snap, s.opts, false})
	}
	clusters = append(clusters, cluster{"benchdata", benchdata.Snapshot(60), Options{}, true},
		cluster{"benchdata, expressions", benchdata.Snapshot(30), Options{ExpressionRoutes: true}, true})
	cert, err := newTestCertPEM()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 17))
	random := 150
	if testing.Short() {
		random = 60
	}
	for i := range random {
		data := make([]byte, 16+rng.IntN(1200))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		g := &objectGen{data: data, cert: cert}
		opts := g.options()
		clusters = append(clusters, cluster{fmt.Sprintf("random %d", i), g.snapshot(), opts, false})
	}
	for i := range random {
		var snaps []*store.Snapshot
		var opts Options
		for k := range 3 + rng.IntN(10) {
			data := make([]byte, 16+rng.IntN(1200))
			for j := range data {
				data[j] = byte(rng.IntN(256))
			}
			g := &objectGen{data: data, cert: cert}
			if k == 0 {
				opts = g.options()
			}
			snaps = append(snaps, g.snapshot())
		}
		clusters = append(clusters, cluster{fmt.Sprintf("random side by side %d", i), sideBySide(snaps), opts, true})
	}

	taken, tries, reasons := 0, 0, map[string]int{}
	for _, c := range clusters {
		want := Build(c.snap, c.opts)
		for _, procs := range []int{2, 3, 5} {
			got, notSpread := buildSpread(c.snap, c.opts, procs, 0, nil)
			requireSameTranslation(t, fmt.Sprintf("%s, %d goroutines", c.name, procs), got, want)
			hinted, _ := buildSpread(c.snap, c.opts, procs, 0, want.Graph)
			requireSameTranslation(t, fmt.Sprintf("%s, %d goroutines, with the graph", c.name, procs), hinted, want)
			if c.several {
				tries++
			}
			if notSpread == "" {
				if c.several {
					taken++
				}
			} else {
				reasons[notSpread]++
			}
		}
	}
	t.Logf("clusters side by side spread %d times of %d; one Build because: %v", taken, tries, reasons)
	// The property would hold trivially if every cluster fell back to one Build. (A random
	// cluster alone is mostly one group: its Ingresses share Services, or have TLS, plugins
	// or a default backend, which keep them in the rest.)
	require.Greater(t, 3*taken, tries, "the parallel path was hardly taken")
}

// requireSameTranslation: got is want, rendered too when want renders.
func requireSameTranslation(t *testing.T, step string, got, want Result) {
	t.Helper()
	if _, err := want.State.DeclarativeConfig(); err == nil {
		requireSameResult(t, step, &kongstate.Renderer{}, got, want)
	} else {
		require.Equal(t, want.Problems, got.Problems, "%s: problems", step)
		require.Equal(t, graphString(want.Graph), graphString(got.Graph), "%s: graph", step)
		ws, gs := reflect.ValueOf(want.State).Elem(), reflect.ValueOf(got.State).Elem()
		for i := 0; i < ws.NumField(); i++ {
			require.True(t, reflect.DeepEqual(ws.Field(i).Interface(), gs.Field(i).Interface()), "%s: State.%s differs", step, ws.Type().Field(i).Name)
		}
	}
	require.True(t, reflect.DeepEqual(want.Gateway, got.Gateway), "%s: Gateway API attachment", step)
	require.Equal(t, want.parts.readClock, got.parts.readClock, "%s: read the clock", step)
	require.Equal(t, want.parts.nameTaken, got.parts.nameTaken, "%s: a route name taken", step)
	require.Equal(t, want.parts.readRustRegexes, got.parts.readRustRegexes, "%s: checked a regex", step)
	// What the next Incremental round splices into: each Kong service's Ingresses.
	require.Equal(t, partsString(want.parts.services), partsString(got.parts.services), "%s: parts", step)
}

// partsString is each Kong service part's name, whether it holds other routes than
// Ingresses' and Gateway API routes', and its Ingresses and routes in order.
func partsString(ps []servicePart) []string {
	var out []string
	for _, p := range ps {
		line := fmt.Sprintf("%s foreign=%v upstream=%v:", p.name, p.foreign(), p.upstream != nil)
		for _, o := range p.owners {
			line += " " + o.Namespace + "/" + o.Name
		}
		for _, o := range p.routes() {
			line += " " + o.Kind + " " + o.Namespace + "/" + o.Name
		}
		out = append(out, line)
	}
	return out
}

// sideBySide is one snapshot of several: the objects of the i-th (i > 0) in namespaces of
// their own (suffixed "-i"), so that they meet only through references across namespaces
// (which still name the first one's namespaces) and cluster-scoped objects (the first of each
// name is kept). The first snapshot's class and IngressClass parameters are the cluster's.
func sideBySide(snaps []*store.Snapshot) *store.Snapshot {
	out := *snaps[0]
	out.NamespaceLabels = maps.Clone(out.NamespaceLabels)
	ov := reflect.ValueOf(&out).Elem()
	for i, s := range snaps[1:] {
		suffix := fmt.Sprintf("-%d", i+1)
		sv := reflect.ValueOf(s).Elem()
		for f := 0; f < sv.NumField(); f++ {
			field := sv.Field(f)
			if field.Kind() != reflect.Slice || !field.Type().Elem().Implements(objectType) {
				continue
			}
			for j := 0; j < field.Len(); j++ {
				if o := field.Index(j).Interface().(client.Object); o.GetNamespace() != "" {
					o.SetNamespace(o.GetNamespace() + suffix)
				}
			}
			ov.Field(f).Set(reflect.AppendSlice(ov.Field(f), field))
		}
		for ns, labels := range s.NamespaceLabels {
			out.NamespaceLabels[ns+suffix] = labels
		}
	}
	unique(&out)
	return &out
}

// TestParallelBuildKeepsServicesWithPluginsInTheRest: a Service's konghq.com/plugins may name
// a KongPlugin of another namespace, which only a ReferenceGrant there allows; a group's
// snapshot holds no grants, and a plugin without a grant is reported with no edge in the
// graph, so nothing in the group's result would show what it missed. Such a Service's
// Ingresses are translated with the rest.
func TestParallelBuildKeepsServicesWithPluginsInTheRest(t *testing.T) {
	snap := benchdata.Snapshot(20)
	svc := snap.Services[3]
	grantServicesPlugin(snap, svc.Namespace)
	svc.Annotations = map[string]string{annPlugins: "shared:auth"}
	want := Build(snap, Options{})
	require.Len(t, want.State.Plugins, 1, "the plugin applies to the Service")
	got, notSpread := buildSpread(snap, Options{}, 2, 0, nil)
	require.Empty(t, notSpread)
	requireSameResult(t, "spread", &kongstate.Renderer{}, got, want)
}

// grantServicesPlugin adds KongPlugin shared/auth and a ReferenceGrant that lets the Services
// of namespace ns use it.
func grantServicesPlugin(snap *store.Snapshot, ns string) {
	snap.KongPlugins = append(snap.KongPlugins, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "shared"}, PluginName: "key-auth"})
	snap.ReferenceGrants = append(snap.ReferenceGrants, &gatewayv1beta1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "services", Namespace: "shared"},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: "", Kind: "Service", Namespace: gatewayv1beta1.Namespace(ns)}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "configuration.konghq.com", Kind: "KongPlugin"}},
		}})
}

// TestIncrementalTranslatesAllWhenAServiceGainsAGrantedPlugin: the splice translates the
// closure without the cluster's ReferenceGrants, and a plugin of another namespace that no
// grant allows leaves no edge in the graph; a Service of the change that names plugins is a
// full Build.
func TestIncrementalTranslatesAllWhenAServiceGainsAGrantedPlugin(t *testing.T) {
	snap := benchdata.Snapshot(20)
	old := snap.Services[3]
	grantServicesPlugin(snap, old.Namespace)
	inc := &Incremental{noSizeLimit: true}
	inc.Build(snap, Options{})

	next := *snap
	next.Services = slices.Clone(snap.Services)
	svc := old.DeepCopy()
	svc.ResourceVersion = "2"
	svc.Annotations = map[string]string{annPlugins: "shared:auth"}
	replaceObject(&next, old, svc)
	want := Build(&next, Options{})
	require.Len(t, want.State.Plugins, 1, "the plugin applies to the Service")
	requireSameResult(t, "the Service names the plugin", &kongstate.Renderer{}, inc.Build(&next, Options{}), want)
}

// TestIncrementalAfterASpreadBuild: an Incremental whose full translation was spread splices
// its next rounds into that result as into Build's.
func TestIncrementalAfterASpreadBuild(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	snap := benchdata.Snapshot(parallelMinIngresses + 100)
	_, notSpread := buildParallel(snap, Options{}, runtime.GOMAXPROCS(0), nil)
	require.Empty(t, notSpread, "the snapshot is spread")
	inc := &Incremental{}
	renderer := &kongstate.Renderer{}
	requireSameResult(t, "start", renderer, inc.Build(snap, Options{}), Build(snap, Options{}))
	ed := &editor{rng: rand.New(rand.NewPCG(7, 1)), snap: snap}
	for step := range 12 {
		what := ed.edit()
		requireSameResult(t, fmt.Sprintf("step %d (%s)", step, what), renderer, inc.Build(ed.snap, Options{}), Build(ed.snap, Options{}))
	}
	require.Positive(t, inc.Stats.Partial, "no round was spliced")
}

// TestParallelBuildLearnsFromTheLastGraph: a TCPIngress that names an Ingress's Service makes
// the spread translation fall back to one Build (the rest refers to a group's object); given
// the graph of that translation, the next one keeps that Service's Ingresses in the rest and
// is spread, with Build's result.
func TestParallelBuildLearnsFromTheLastGraph(t *testing.T) {
	snap := benchdata.Snapshot(20)
	svc := snap.Services[3]
	snap.TCPIngresses = append(snap.TCPIngresses, &kongv1beta1.TCPIngress{
		ObjectMeta: metav1.ObjectMeta{Name: "tcp", Namespace: svc.Namespace},
		Spec: kongv1beta1.TCPIngressSpec{Rules: []kongv1beta1.IngressRule{{Port: 9000,
			Backend: kongv1beta1.IngressBackend{ServiceName: svc.Name, ServicePort: 80}}}},
	})
	want := Build(snap, Options{})
	first, notSpread := buildSpread(snap, Options{}, 2, 0, nil)
	require.Equal(t, "the rest refers to a group's object", notSpread)
	requireSameResult(t, "without a hint", &kongstate.Renderer{}, first, want)
	next, notSpread := buildSpread(snap, Options{}, 2, 0, first.Graph)
	require.Empty(t, notSpread)
	requireSameResult(t, "with the last graph", &kongstate.Renderer{}, next, want)
}

// A spread build that checked a regex says so, as Build does: Incremental translates
// everything again when a gateway's router flavor is learnt only when a result read
// Options.RustRegexes, so a spread first build that lost the flag kept a regex Rust refuses
// (PCRE takes look-ahead, Rust does not) after the flavor was learnt.
func TestSpreadBuildKeepsThatItCheckedARegex(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	snap := benchdata.Snapshot(parallelMinIngresses + 100)
	snap.Ingresses = slices.Clone(snap.Ingresses)
	ing := snap.Ingresses[0].DeepCopy()
	ing.Spec.Rules[0].HTTP.Paths[0].Path = "/~/v1/(?=a)[a-z]+"
	ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptrTo(netv1.PathTypeImplementationSpecific)
	snap.Ingresses[0] = ing

	spread, notSpread := buildParallel(snap, Options{}, runtime.GOMAXPROCS(0), nil)
	require.Empty(t, notSpread, "the snapshot is spread")
	require.True(t, Build(snap, Options{}).parts.readRustRegexes)
	require.True(t, spread.parts.readRustRegexes, "the spread build checked the regex too")

	inc := &Incremental{}
	inc.Build(snap, Options{})
	requireSameResult(t, "router flavor learnt", &kongstate.Renderer{}, inc.Build(snap, Options{RustRegexes: true}), Build(snap, Options{RustRegexes: true}))
}
