package translator

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// TestIncrementalMatchesBuild is the property that makes Incremental safe to use: after any
// sequence of changes, its Result is the one a full Build of the same snapshot gives (the
// same rendered bytes, State, problems and object graph). Starting points are every golden
// case's input and a benchmark cluster; the changes are random edits of Ingresses, Services,
// EndpointSlices and the other kinds.
func TestIncrementalMatchesBuild(t *testing.T) {
	starts := goldenStarts(t)
	starts = append(starts, translationStart{"benchdata", benchdata.Snapshot(40), Options{}})

	steps := 60
	if testing.Short() {
		steps = 20
	}
	// Squash the graphs' chains often, so that squashing is tested too.
	defer func(d int) { objgraph.MaxDepth = d }(objgraph.MaxDepth)
	objgraph.MaxDepth = 3
	var partial, full int
	reasons := map[string]int{}
	for _, s := range starts {
		t.Run(s.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(startSeed(s.name), 13))
			ed := &editor{rng: rng, snap: s.snap}
			inc := &Incremental{noSizeLimit: true}
			renderer := &kongstate.Renderer{}
			requireSameResult(t, "start", renderer, inc.Build(s.snap, s.opts), Build(s.snap, s.opts))
			opts := s.opts
			for step := 0; step < steps; step++ {
				what := ed.edit()
				if step%7 == 6 {
					// A gateway's router flavor learnt or changed.
					opts.RustRegexes = !opts.RustRegexes
					what += ", RustRegexes flipped"
				}
				snap := ed.snap
				before := inc.Stats.Full
				requireSameResult(t, fmt.Sprintf("step %d (%s)", step, what), renderer, inc.Build(snap, opts), Build(snap, opts))
				if inc.Stats.Full > before {
					reasons[inc.Stats.LastReason]++
				}
			}
			partial += inc.Stats.Partial
			full += inc.Stats.Full
		})
	}
	t.Logf("%d partial and %d full translations; full because: %v", partial, full, reasons)
	// The property would hold trivially if everything fell back to a full Build.
	require.Greater(t, partial, full, "the partial path was hardly taken")
}

// The Results an Incremental handed out stay as they were after later rounds, though each
// splice merges its Kong services' parts into the array of the round before last
// (spareParts): every State renders the bytes it rendered when it was handed out.
func TestIncrementalResultsHandedOutStayUnchanged(t *testing.T) {
	snap := benchdata.Snapshot(40)
	ed := &editor{rng: rand.New(rand.NewPCG(45, 13)), snap: snap}
	inc := &Incremental{noSizeLimit: true}
	type handedOut struct {
		step     int
		res      Result
		rendered string
	}
	var results []handedOut
	for step := range 40 {
		if step > 0 {
			ed.edit()
		}
		res := inc.Build(ed.snap, Options{})
		b, err := res.State.DeclarativeConfig()
		require.NoError(t, err)
		results = append(results, handedOut{step, res, string(b)})
	}
	require.Greater(t, inc.Stats.Partial, 10, "the splice was hardly taken")
	for _, h := range results {
		b, err := h.res.State.DeclarativeConfig()
		require.NoError(t, err)
		require.Equal(t, h.rendered, string(b), "the State of step %d changed after later rounds", h.step)
	}
}

// startSeed seeds a start's edits by its name, not its place among the starts: a golden case
// added before it would otherwise give every later start other edits.
func startSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// matchBuildRounds makes steps random edits (by an editor that configure sets up) from each
// start, and requires after each that Incremental's result is a full Build's. It returns each
// start's Incremental statistics, by name, and how many full Builds each reason caused.
func matchBuildRounds(t *testing.T, starts []translationStart, steps int, seed uint64, configure func(*editor)) (map[string]IncrementalStats, map[string]int) {
	t.Helper()
	defer func(d int) { objgraph.MaxDepth = d }(objgraph.MaxDepth)
	objgraph.MaxDepth = 3 // squash the graphs' chains often, so that squashing is tested too
	stats := map[string]IncrementalStats{}
	reasons := map[string]int{}
	for _, s := range starts {
		t.Run(s.name, func(t *testing.T) {
			ed := &editor{rng: rand.New(rand.NewPCG(startSeed(s.name), seed)), snap: s.snap}
			configure(ed)
			inc := &Incremental{noSizeLimit: true}
			renderer := &kongstate.Renderer{}
			prev := inc.Build(s.snap, s.opts)
			requireSameResult(t, "start", renderer, prev, Build(s.snap, s.opts))
			for step := 0; step < steps; step++ {
				what := ed.edit()
				before := inc.Stats
				got := inc.Build(ed.snap, s.opts)
				requireSameResult(t, fmt.Sprintf("step %d (%s)", step, what), renderer, got, Build(ed.snap, s.opts))
				if inc.Stats.Full > before.Full {
					reasons[inc.Stats.LastReason]++
				}
				if ed.observe != nil {
					ed.observe(s, what, before, inc.Stats, prev, got)
				}
				prev = got
			}
			t.Logf("%d partial translations (%d of Gateway API routes, %d of KongConsumers, %d of plugins, %d of certificates), %d full",
				inc.Stats.Partial, inc.Stats.PartialRoutes, inc.Stats.PartialConsumers, inc.Stats.PartialPlugins, inc.Stats.PartialCertificates, inc.Stats.Full)
			stats[s.name] = inc.Stats
		})
	}
	return stats, reasons
}

// translationStart is a snapshot and the options to translate it with.
type translationStart struct {
	name string
	snap *store.Snapshot
	opts Options
}

// goldenStarts are the golden cases' inputs as snapshots, with their options.
func goldenStarts(t *testing.T) []translationStart {
	var starts []translationStart
	dirs, err := filepath.Glob("testdata/*/in.yaml")
	require.NoError(t, err)
	for _, in := range dirs {
		dir := filepath.Dir(in)
		var opts goldenOptions
		if b, err := os.ReadFile(filepath.Join(dir, "options.yaml")); err == nil {
			require.NoError(t, sigsyaml.UnmarshalStrict(b, &opts))
		}
		objs, err := manifest.Load(in)
		require.NoError(t, err)
		st, err := store.NewForObjects(objs, store.Options{IngressClass: opts.IngressClass})
		require.NoError(t, err)
		snap, err := st.Snapshot(context.Background())
		require.NoError(t, err)
		starts = append(starts, translationStart{filepath.Base(dir), snap, opts.Translator})
	}
	return starts
}

// A router flavor learnt after the first round (Options.RustRegexes) translates nothing again
// when no regex was checked, and everything when one was.
func TestIncrementalRustRegexesOnlyMatterWithRegexes(t *testing.T) {
	snap := benchdata.Snapshot(20)
	inc := &Incremental{}
	inc.Build(snap, Options{})
	inc.Build(snap, Options{RustRegexes: true})
	require.Equal(t, 1, inc.Stats.Full, inc.Stats.LastReason)

	regex := *snap
	regex.Ingresses = append([]*netv1.Ingress(nil), snap.Ingresses...)
	ing := regex.Ingresses[0].DeepCopy()
	ing.ResourceVersion = "2"
	ing.Spec.Rules[0].HTTP.Paths[0].Path = "/~/v1/(?=a)[a-z]+" // PCRE takes look-ahead, Rust does not
	ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptrTo(netv1.PathTypeImplementationSpecific)
	regex.Ingresses[0] = ing
	inc.Build(&regex, Options{RustRegexes: true})
	require.Equal(t, 1, inc.Stats.Full, "Rust refused the regex under the options it was translated with")
	requireSameResult(t, "flipped", &kongstate.Renderer{}, inc.Build(&regex, Options{}), Build(&regex, Options{}))
	require.Equal(t, 2, inc.Stats.Full)
	require.Equal(t, "options changed", inc.Stats.LastReason)
	inc.Build(&regex, Options{RustRegexes: true})
	require.Equal(t, 3, inc.Stats.Full, "Rust would refuse the regex")
}

func ptrTo[T any](v T) *T { return &v }

// requireSameResult: got (Incremental's, rendered by a Renderer that rendered the previous
// steps) is want (a full Build's, rendered without cache).
func requireSameResult(t *testing.T, step string, renderer *kongstate.Renderer, got, want Result) {
	t.Helper()
	gotCfg, err := renderer.DeclarativeConfig(got.State)
	require.NoError(t, err)
	wantCfg, err := want.State.DeclarativeConfig()
	require.NoError(t, err)
	require.Equal(t, string(wantCfg), string(gotCfg), "%s: rendered configuration", step)
	gotQuoted, err := renderer.QuotedDeclarativeConfig(got.State, "", "")
	require.NoError(t, err)
	wantDBLess, err := want.State.DBLessConfig()
	require.NoError(t, err)
	require.Equal(t, string(kongstate.AppendJSONStringContent(nil, wantDBLess)), gotQuoted.String(), "%s: rendered configuration, quoted", step)
	require.Equal(t, want.Problems, got.Problems, "%s: problems", step)
	require.Equal(t, graphString(want.Graph), graphString(got.Graph), "%s: graph", step)
	if !reflect.DeepEqual(want.State.Plugins, got.State.Plugins) {
		// Which entities differ, for the State.Plugins failure below.
		for i := range max(len(want.State.Plugins), len(got.State.Plugins)) {
			d := func(ps []*file.FPlugin) string {
				if i >= len(ps) {
					return "-"
				}
				b, _ := json.Marshal(ps[i])
				return string(b)
			}
			if w, g := d(want.State.Plugins), d(got.State.Plugins); w != g {
				t.Logf("%s: plugin %d\n want %s\n got  %s", step, i, w, g)
			}
		}
	}
	ws, gs := reflect.ValueOf(want.State).Elem(), reflect.ValueOf(got.State).Elem()
	for i := 0; i < ws.NumField(); i++ {
		require.True(t, reflect.DeepEqual(ws.Field(i).Interface(), gs.Field(i).Interface()), "%s: State.%s differs", step, ws.Type().Field(i).Name)
	}
	// What the next round splices into: each Kong service's Ingresses and routes, in order.
	require.Equal(t, partsString(want.parts.services), partsString(got.parts.services), "%s: parts", step)
	require.Equal(t, objectNames(want.parts.consumers.objs), objectNames(got.parts.consumers.objs), "%s: consumer parts", step)
	require.Equal(t, pluginPartsString(want.parts.plugins), pluginPartsString(got.parts.plugins), "%s: plugin parts", step)
	require.Equal(t, attachmentString(want.Gateway), attachmentString(got.Gateway), "%s: Gateway API attachment", step)
}

// pluginPartsString is what the next round's plugin splices read of pp: each entity's origin
// (its plugin object, source, first referrer and Ingress) and the plugins read.
func pluginPartsString(pp pluginParts) string {
	var lines []string
	name := func(ing *netv1.Ingress) string {
		if ing == nil {
			return "-"
		}
		return ing.Namespace + "/" + ing.Name
	}
	for _, o := range pp.origins {
		lines = append(lines, fmt.Sprintf("%s %q global=%v first=%d,%s by=%s", o.obj, o.source, o.global, o.first.phase, name(o.first.ingress), name(o.by)))
	}
	var read []string
	for n, ok := range pp.read {
		read = append(read, fmt.Sprintf("read %s %v", n, ok))
	}
	for n := range pp.dups {
		read = append(read, fmt.Sprintf("dup %s", n))
	}
	sort.Strings(read)
	return strings.Join(append(lines, read...), "\n")
}

func graphString(g *objgraph.Graph) string {
	g = g.Flat()
	var lines []string
	for from := range g.Edges() {
		for _, to := range g.References(from.Ref()) {
			lines = append(lines, from.String()+" -> "+to.String())
		}
	}
	for to := range g.Referred() {
		for _, from := range g.ReferredBy(to.Ref()) {
			lines = append(lines, to.String()+" <- "+from.String())
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// editor makes random changes to a snapshot, each as a new snapshot (the previous one is not
// modified) with new object versions, as the store would list them.
type editor struct {
	rng  *rand.Rand
	snap *store.Snapshot
	rv   int
	// routesMostly makes most edits of Gateway API objects (editRoutes); otherRoutesMostly
	// makes most of those of GRPCRoutes and L4 routes (editOtherRoutes) rather than of
	// HTTPRoutes.
	routesMostly, otherRoutesMostly bool
	// consumersMostly makes most edits of KongConsumers and their Secrets (editConsumers).
	consumersMostly bool
	// pluginsMostly makes most edits of plugins and what they read (editPlugins).
	pluginsMostly bool
	// ingressPluginsMostly makes most edits of Ingresses' konghq.com/plugins
	// (editIngressPlugins).
	ingressPluginsMostly bool
	// certificatesMostly makes most edits of TLS Secrets and Ingresses' spec.tls
	// (editCertificates), with certs as the certificates Secrets hold.
	certificatesMostly bool
	certs              []testCertPEM

	// observe, when set, is told of each round matchBuildRounds makes: its start, the edit,
	// the Incremental's statistics before and after the round, and its results before and
	// after it.
	observe func(s translationStart, what string, before, after IncrementalStats, prev, got Result)
}

func (e *editor) version() string { e.rv++; return fmt.Sprintf("rv-%d", e.rv) }

// next copies the snapshot's slices so that edits do not reach the previous snapshot.
func (e *editor) next() *store.Snapshot {
	c := *e.snap
	v := reflect.ValueOf(&c).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Slice && !f.IsNil() {
			f.Set(reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f))
		}
	}
	return &c
}

// ingressVersion is a new version of a random Ingress of s, the j-th, for the caller to
// change and put back (ok is false when s has none).
func (e *editor) ingressVersion(s *store.Snapshot) (ing *netv1.Ingress, j int, ok bool) {
	if j, ok = pick(e, s.Ingresses); !ok {
		return nil, 0, false
	}
	ing = s.Ingresses[j].DeepCopy()
	ing.ResourceVersion = e.version()
	ing.Generation++
	return ing, j, true
}

func pick[T any](e *editor, l []T) (int, bool) {
	if len(l) == 0 {
		return 0, false
	}
	return e.rng.IntN(len(l)), true
}

func (e *editor) serviceName(ns string) string {
	var names []string
	for _, s := range e.snap.Services {
		if s.Namespace == ns {
			names = append(names, s.Name)
		}
	}
	names = append(names, "missing")
	return names[e.rng.IntN(len(names))]
}

func (e *editor) edit() string {
	s := e.next()
	defer func() { e.snap = s }()
	ingress := func() (*netv1.Ingress, func(*netv1.Ingress), bool) {
		c, i, ok := e.ingressVersion(s)
		return c, func(n *netv1.Ingress) { s.Ingresses[i] = n }, ok
	}
	if e.routesMostly && e.rng.IntN(4) > 0 || e.rng.IntN(10) == 0 {
		if what := e.editRoutes(s); what != "" {
			return what
		}
	}
	if e.certificatesMostly && e.rng.IntN(4) > 0 {
		if what := e.editCertificates(s); what != "" {
			return what
		}
	}
	if e.consumersMostly && e.rng.IntN(4) > 0 || e.rng.IntN(10) == 0 {
		return e.editConsumers(s)
	}
	if e.ingressPluginsMostly && e.rng.IntN(4) > 0 {
		return e.editIngressPlugins(s)
	}
	if e.pluginsMostly && e.rng.IntN(4) > 0 || e.rng.IntN(12) == 0 {
		return e.editPlugins(s)
	}
	switch e.rng.IntN(17) {
	case 0, 1:
		if ing, put, ok := ingress(); ok && len(ing.Spec.Rules) > 0 {
			ing.Spec.Rules[0].Host = []string{"", "a.example.com", "b.example.com", "*.example.com", "bad host"}[e.rng.IntN(5)]
			put(ing)
			return "Ingress host"
		}
	case 2, 3:
		if ing, put, ok := ingress(); ok {
			for _, r := range ing.Spec.Rules {
				if r.HTTP != nil && len(r.HTTP.Paths) > 0 {
					p := &r.HTTP.Paths[e.rng.IntN(len(r.HTTP.Paths))]
					ports := []netv1.ServiceBackendPort{{Number: 80}, {Number: 8080}, {Name: "http"}, {}}
					p.Backend = netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: e.serviceName(ing.Namespace), Port: ports[e.rng.IntN(len(ports))]}}
					break
				}
			}
			put(ing)
			return "Ingress backend"
		}
	case 4:
		if ing, put, ok := ingress(); ok {
			for _, r := range ing.Spec.Rules {
				if r.HTTP != nil {
					pt := netv1.PathTypePrefix
					paths := []string{"/x", "/api//v2", "/~/re[", "/", "/y/"}
					r.HTTP.Paths = append(r.HTTP.Paths, netv1.HTTPIngressPath{Path: paths[e.rng.IntN(len(paths))], PathType: &pt,
						Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: e.serviceName(ing.Namespace), Port: netv1.ServiceBackendPort{Number: 80}}}})
					if len(r.HTTP.Paths) > 3 {
						r.HTTP.Paths = r.HTTP.Paths[1:]
					}
					break
				}
			}
			put(ing)
			return "Ingress paths"
		}
	case 5:
		if ing, put, ok := ingress(); ok {
			if ing.Annotations == nil {
				ing.Annotations = map[string]string{}
			}
			anns := []struct{ k, v string }{
				{"konghq.com/strip-path", "true"}, {"konghq.com/methods", "GET,POST"}, {"konghq.com/protocols", "tcp"},
				{"konghq.com/plugins", "rate-limit"}, {"konghq.com/rewrite", "/new"}, {"konghq.com/tags", "a,b"},
				{"konghq.com/regex-priority", "10"}, {"konghq.com/override", "ki"},
			}
			a := anns[e.rng.IntN(len(anns))]
			if _, on := ing.Annotations[a.k]; on {
				delete(ing.Annotations, a.k)
			} else {
				ing.Annotations[a.k] = a.v
			}
			put(ing)
			return "Ingress annotation " + a.k
		}
	case 6:
		if i, ok := pick(e, s.Ingresses); ok {
			c := s.Ingresses[i].DeepCopy()
			c.Name = fmt.Sprintf("%s-copy%d", c.Name, e.rv)
			c.UID = types.UID(fmt.Sprintf("uid-%d", e.rv))
			c.ResourceVersion = e.version()
			s.Ingresses = append(s.Ingresses, c)
			return "Ingress added"
		}
	case 7:
		if i, ok := pick(e, s.Ingresses); ok {
			s.Ingresses = append(s.Ingresses[:i], s.Ingresses[i+1:]...)
			return "Ingress deleted"
		}
	case 8:
		if i, ok := pick(e, s.Ingresses); ok {
			c := s.Ingresses[i].DeepCopy()
			c.ResourceVersion = e.version()
			c.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}}
			s.Ingresses[i] = c
			return "Ingress status"
		}
	case 9:
		if ing, put, ok := ingress(); ok {
			switch {
			case ing.Spec.DefaultBackend != nil:
				ing.Spec.DefaultBackend = nil
			case len(ing.Spec.TLS) > 0:
				ing.Spec.TLS = nil
			case e.rng.IntN(2) == 0:
				ing.Spec.DefaultBackend = &netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: e.serviceName(ing.Namespace), Port: netv1.ServiceBackendPort{Number: 80}}}
			default:
				ing.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{"a.example.com"}, SecretName: "cert"}}
			}
			put(ing)
			return "Ingress default backend or TLS"
		}
	case 10:
		if i, ok := pick(e, s.Services); ok {
			c := s.Services[i].DeepCopy()
			c.ResourceVersion = e.version()
			switch e.rng.IntN(3) {
			case 0:
				if len(c.Spec.Ports) > 0 {
					c.Spec.Ports[0].Port = []int32{80, 8080, 443}[e.rng.IntN(3)]
				}
			case 1:
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations["konghq.com/protocol"] = []string{"grpc", "https", "bogus"}[e.rng.IntN(3)]
			default:
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations["konghq.com/path"] = []string{"/p", "/q"}[e.rng.IntN(2)]
			}
			s.Services[i] = c
			return "Service changed"
		}
	case 11:
		if e.rng.IntN(2) == 0 {
			if i, ok := pick(e, s.Services); ok {
				s.Services = append(s.Services[:i], s.Services[i+1:]...)
				return "Service deleted"
			}
		}
		ns := "default"
		if i, ok := pick(e, s.Ingresses); ok {
			ns = s.Ingresses[i].Namespace
		}
		name := "missing"
		for _, x := range s.Services {
			if x.Namespace == ns && x.Name == name {
				name = fmt.Sprintf("svc-new-%d", e.rv)
			}
		}
		s.Services = append(s.Services, &corev1.Service{ObjectMeta: objectMeta(ns, name, e.version()),
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
		return "Service added"
	case 12, 13:
		if i, ok := pick(e, s.EndpointSlices); ok && e.rng.IntN(4) > 0 {
			c := s.EndpointSlices[i].DeepCopy()
			c.ResourceVersion = e.version()
			if len(c.Endpoints) > 0 {
				ep := &c.Endpoints[e.rng.IntN(len(c.Endpoints))]
				ready := e.rng.IntN(2) == 0
				ep.Conditions.Ready = &ready
				if len(ep.Addresses) > 0 {
					ep.Addresses[0] = fmt.Sprintf("10.9.%d.%d", e.rng.IntN(3), e.rng.IntN(300))
				}
			}
			s.EndpointSlices[i] = c
			return "EndpointSlice changed"
		}
		if i, ok := pick(e, s.EndpointSlices); ok && e.rng.IntN(2) == 0 {
			s.EndpointSlices = append(s.EndpointSlices[:i], s.EndpointSlices[i+1:]...)
			return "EndpointSlice deleted"
		}
		if i, ok := pick(e, s.Services); ok {
			svc := s.Services[i]
			port, proto, name := int32(8080), corev1.ProtocolTCP, "http"
			ready := true
			s.EndpointSlices = append(s.EndpointSlices, &discoveryv1.EndpointSlice{
				ObjectMeta:  objectMeta(svc.Namespace, fmt.Sprintf("%s-%d", svc.Name, e.rv), e.version()),
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.8.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			})
			s.EndpointSlices[len(s.EndpointSlices)-1].Labels = map[string]string{discoveryv1.LabelServiceName: svc.Name}
			return "EndpointSlice added"
		}
	case 14:
		// Another kind: a label on some object that is not an Ingress, Service or slice.
		var others []client.Object
		for _, l := range [][]client.Object{objects(s.Secrets), objects(s.KongPlugins), objects(s.KongConsumers), objects(s.KongClusterPlugins)} {
			others = append(others, l...)
		}
		if i, ok := pick(e, others); ok {
			o := others[i].DeepCopyObject().(client.Object)
			o.SetResourceVersion(e.version())
			o.SetLabels(map[string]string{"touched": e.version()})
			replaceObject(s, others[i], o)
			return "other kind changed"
		}
	case 15:
		// Secrets: one nothing reads added, or any one changed or deleted.
		switch i, ok := pick(e, s.Secrets); {
		case !ok || e.rng.IntN(3) == 0:
			s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: objectMeta("default", fmt.Sprintf("unread-%d", e.rv), e.version()),
				Data: map[string][]byte{"release": []byte("v1")}})
			return "Secret added"
		case e.rng.IntN(2) == 0:
			s.Secrets = append(s.Secrets[:i], s.Secrets[i+1:]...)
			return "Secret deleted"
		default:
			c := s.Secrets[i].DeepCopy()
			c.ResourceVersion = e.version()
			if c.Data == nil {
				c.Data = map[string][]byte{}
			}
			for k := range c.Data {
				c.Data[k] = append(c.Data[k], 'x')
				break
			}
			c.Data["release"] = []byte(e.version())
			s.Secrets[i] = c
			return "Secret changed"
		}
	default:
		return "nothing"
	}
	return "nothing to edit"
}

func objectMeta(ns, name, rv string) (m metav1.ObjectMeta) {
	m.Namespace, m.Name, m.ResourceVersion, m.UID = ns, name, rv, types.UID("uid-"+rv)
	return m
}

// replaceObject puts n where old is in s's slices.
func replaceObject(s *store.Snapshot, old, n client.Object) {
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		for j := 0; j < f.Len(); j++ {
			if f.Index(j).Kind() == reflect.Pointer && !f.Index(j).IsNil() && f.Index(j).Interface() == any(old) {
				f.Index(j).Set(reflect.ValueOf(n))
				return
			}
		}
	}
}

// TestIncrementalSettlesAfterAFullTranslation: a full translation leaves the indexes the
// next round splices with to Settle (the start's first push does not wait for them), and the
// next round splices whether Settle ran in between or not.
func TestIncrementalSettlesAfterAFullTranslation(t *testing.T) {
	snap := benchdata.Snapshot(20)
	changed := *snap
	changed.Ingresses = append([]*netv1.Ingress(nil), snap.Ingresses...)
	ing := changed.Ingresses[3].DeepCopy()
	ing.ResourceVersion = "2"
	ing.Spec.Rules[0].Host = "settled.example.com"
	changed.Ingresses[3] = ing

	for _, settle := range []bool{true, false} {
		inc := &Incremental{noSizeLimit: true}
		inc.Build(snap, Options{})
		require.Nil(t, inc.prev, "indexes built before Settle")
		require.NotNil(t, inc.settling)
		if settle {
			inc.Settle()
			require.NotNil(t, inc.prev)
			require.Nil(t, inc.settling)
			inc.Settle() // nothing left to do
		}
		requireSameResult(t, fmt.Sprintf("settled %v", settle), &kongstate.Renderer{}, inc.Build(&changed, Options{}), Build(&changed, Options{}))
		require.Equal(t, 1, inc.Stats.Full, inc.Stats.LastReason)
		require.Equal(t, 1, inc.Stats.Partial)
	}
}

// TestIncrementalNamespacesMatterOnlyWhereRead: a Namespace created, deleted or relabelled
// is a full translation only when the previous one read it (relevanceRule, the wake
// filter's): an ExternalName of another namespace's Service name (<svc>.<ns>) is told to
// the Service's owner once that namespace exists, and a Gateway that admits routes by
// namespace labels reads every Namespace's; otherwise the change is no change.
func TestIncrementalNamespacesMatterOnlyWhereRead(t *testing.T) {
	snap := benchdata.Snapshot(20)
	snap.NamespaceLabels = map[string]map[string]string{"default": nil}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext", UID: "u-ext", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.billing",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)}}}}
	pt := netv1.PathTypePrefix
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext", UID: "u-ing-ext", ResourceVersion: "1"},
		Spec: netv1.IngressSpec{IngressClassName: ptrTo("kong"), Rules: []netv1.IngressRule{{Host: "ext.example.com",
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &pt,
				Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "ext", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	snap.Services = append(slices.Clip(snap.Services), ext)
	snap.Ingresses = append(slices.Clip(snap.Ingresses), ing)
	inc := &Incremental{noSizeLimit: true}
	renderer := &kongstate.Renderer{}
	requireSameResult(t, "first", renderer, inc.Build(snap, Options{}), Build(snap, Options{}))

	step := func(name string, labels map[string]map[string]string) {
		t.Helper()
		next := *snap
		next.NamespaceLabels = labels
		requireSameResult(t, name, renderer, inc.Build(&next, Options{}), Build(&next, Options{}))
		snap = &next
	}
	full := inc.Stats.Full
	step("a namespace nothing reads", map[string]map[string]string{"default": nil, "team-a": {"env": "dev"}})
	step("relabelled", map[string]map[string]string{"default": nil, "team-a": {"env": "prod"}})
	step("deleted", map[string]map[string]string{"default": nil})
	require.Equal(t, full, inc.Stats.Full, "namespaces nothing reads: no full translation (%s)", inc.Stats.LastReason)

	billing := map[string]map[string]string{"default": nil, "billing": nil}
	step("the namespace an ExternalName names", billing)
	require.Equal(t, full+1, inc.Stats.Full, "the ExternalName Service read that namespace")
	require.NotEmpty(t, Build(snap, Options{}).Problems, "the Service's owner is told")
}
