package translator

import (
	"context"
	"fmt"
	"runtime"
	"runtime/trace"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

var benchSizes = []int{100, 1000, 3000, 10000}

// BenchmarkTranslate measures Translate alone: snapshot in, Kong state out.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range benchSizes {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				state, problems := Translate(snap, Options{})
				if len(problems) != 0 || len(state.Services) != n {
					b.Fatalf("unexpected result: %d services, problems %v", len(state.Services), problems)
				}
			}
		})
	}
}

// BenchmarkDeclarativeConfig measures rendering the DB-less /config body of a translated state.
func BenchmarkDeclarativeConfig(b *testing.B) {
	for _, n := range benchSizes {
		state, _ := Translate(benchdata.Snapshot(n), Options{})
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				out, err := state.DeclarativeConfig()
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "bytes/config")
		})
	}
}

// BenchmarkTranslateAndRender is the work of one DB-less sync: translate then render.
func BenchmarkTranslateAndRender(b *testing.B) {
	for _, n := range benchSizes {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				state, _ := Translate(snap, Options{})
				if _, err := state.DeclarativeConfig(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchConsumers adds n KongConsumers to snap, each with a key-auth and a basic-auth
// credential Secret and a rate-limiting plugin on every tenth consumer.
func benchConsumers(snap *store.Snapshot, n int) {
	snap.KongPlugins = append(snap.KongPlugins, &kongv1.KongPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: "limit", Namespace: "ns-0", UID: "aaaaaaaa-0000-4000-8000-000000000001"},
		PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: []byte(`{"minute":10}`)},
	})
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("consumer-%d", i)
		kc := &kongv1.KongConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns-0", UID: types.UID(fmt.Sprintf("cccccccc-0000-4000-8000-%012x", i)),
				Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			Username: name, Credentials: []string{name + "-key", name + "-basic"},
		}
		if i%10 == 0 {
			kc.Annotations["konghq.com/plugins"] = "limit"
		}
		snap.KongConsumers = append(snap.KongConsumers, kc)
		for _, cred := range []struct{ suffix, typ, field string }{{"-key", "key-auth", "key"}, {"-basic", "basic-auth", "username"}} {
			snap.Secrets = append(snap.Secrets, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name + cred.suffix, Namespace: "ns-0", UID: types.UID(fmt.Sprintf("dddddddd-%04x-4000-8000-%012x", len(cred.suffix), i)),
					Labels: map[string]string{CredentialLabel: cred.typ}},
				Data: map[string][]byte{cred.field: []byte(name + cred.suffix), "password": []byte("p")},
			})
		}
	}
}

// BenchmarkTranslateConsumers: 1,000 Ingresses plus 1,000 consumers with two credentials
// each (issue #9's measure), against the same Ingresses alone.
func BenchmarkTranslateConsumers(b *testing.B) {
	snap := benchdata.Snapshot(1000)
	benchConsumers(snap, 1000)
	b.ReportAllocs()
	for b.Loop() {
		state, problems := Translate(snap, Options{})
		if len(problems) != 0 || len(state.Consumers) != 1000 {
			b.Fatalf("unexpected result: %d consumers, problems %v", len(state.Consumers), problems)
		}
	}
}

// BenchmarkIncrementalOneIngressChanged measures a round after one Ingress's host changed:
// Incremental.Build of the new snapshot (the previous one translated) and rendering of the
// body of POST /config with a kongstate.Renderer (the previous body rendered), against a full Build and
// State.DeclarativeConfig ("full"). Each iteration edits another Ingress, as the store would list it: a new
// object with a new resourceVersion in a new snapshot; the other objects are the same.
func BenchmarkIncrementalOneIngressChanged(b *testing.B) {
	for _, n := range benchdata.Sizes(1000, 3000, 10000) {
		base := benchdata.Snapshot(n)
		for _, mode := range []string{"incremental", "full"} {
			b.Run(fmt.Sprintf("ingresses=%d/%s", n, mode), func(b *testing.B) {
				benchIncrementalRounds(b, mode, base, func(snap *store.Snapshot, i int) *store.Snapshot {
					next := *snap
					next.Ingresses = append([]*netv1.Ingress(nil), snap.Ingresses...)
					if i < 0 {
						return &next
					}
					k := i % n
					ing := next.Ingresses[k].DeepCopy()
					ing.ResourceVersion = fmt.Sprint(i + 1)
					ing.Spec.Rules[0].Host = fmt.Sprintf("changed-%d.example.com", i)
					next.Ingresses[k] = ing
					return &next
				}, func(res Result) {
					if len(res.Problems) != 0 || len(res.State.Services) != n {
						b.Fatalf("unexpected result: %d services, problems %v", len(res.State.Services), res.Problems)
					}
				})
			})
		}
	}
}

// benchIncrementalRounds measures rounds of changes from base: edit makes the i-th
// iteration's snapshot from the previous one (a new object with a new resourceVersion, as
// the store would list it; the other objects the same), check looks at the result. mode
// "incremental" is Incremental.Build (the previous snapshot translated) and the body of
// POST /config rendered by a kongstate.Renderer (the previous body rendered); "full" is a
// full Build and State.DeclarativeConfig. It reports the CPU time per round, which the
// machine's other load does not inflate as it does ns/op, and fails when an incremental
// round was a full translation.
func benchIncrementalRounds(b *testing.B, mode string, base *store.Snapshot, edit func(*store.Snapshot, int) *store.Snapshot, check func(Result)) {
	benchIncrementalRoundsWith(b, mode, Options{}, base, edit, check)
}

// benchIncrementalRoundsWith is benchIncrementalRounds with options.
func benchIncrementalRoundsWith(b *testing.B, mode string, opts Options, base *store.Snapshot, edit func(*store.Snapshot, int) *store.Snapshot, check func(Result)) {
	if full := benchRounds(b, mode, opts, base, edit, check); mode == "incremental" && full != 0 {
		b.Fatalf("%d full translations", full)
	}
}

// benchRounds is benchIncrementalRoundsWith, returning how many incremental rounds were a
// full translation instead of failing on one.
func benchRounds(b *testing.B, mode string, opts Options, base *store.Snapshot, edit func(*store.Snapshot, int) *store.Snapshot, check func(Result)) (full int) {
	snap := edit(base, -1) // copies what edit changes
	inc := &Incremental{}
	renderer := &kongstate.Renderer{}
	if _, err := renderer.QuotedDeclarativeConfig(inc.Build(snap, opts).State, `{"config":"`, `"}`); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	cpu := benchdata.ProcessCPU()
	for b.Loop() {
		snap = edit(snap, i)
		i++
		var res Result
		var err error
		if mode == "full" {
			res = Build(snap, opts)
			_, err = res.State.DeclarativeConfig()
		} else {
			// What the loop renders for a DB-less Kong: the body of POST /config.
			res = inc.Build(snap, opts)
			_, err = renderer.QuotedDeclarativeConfig(res.State, `{"config":"`, `"}`)
		}
		if err != nil {
			b.Fatal(err)
		}
		check(res)
	}
	b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	if mode == "incremental" && inc.Stats.Full != 1 {
		b.Logf("full translations: %d (last: %s)", inc.Stats.Full-1, inc.Stats.LastReason)
	}
	return inc.Stats.Full - 1
}

// BenchmarkFirstRound is the work of the controller's first round once the cache synced
// (issue #13, start -> first complete push): a full Incremental.Build of every object and the
// first body of POST /config, nothing rendered before. cpu-ms/op is the CPU time of all
// goroutines per round: work spread over both cores shows as wall time (ns/op) below it.
func BenchmarkFirstRound(b *testing.B) {
	for _, n := range []int{3000, 10000} {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchdata.ProcessCPU()
			var size int
			for b.Loop() {
				inc := &Incremental{}
				res := inc.Build(snap, Options{})
				body, err := (&kongstate.Renderer{}).QuotedDeclarativeConfig(res.State, `{"config":"`, `"}`)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Problems) != 0 || len(res.State.Services) != n {
					b.Fatalf("unexpected result: %d services, problems %v", len(res.State.Services), res.Problems)
				}
				size = body.Len()
			}
			b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(size), "bytes/body")
		})
	}
}

// BenchmarkGraphRetained measures what a translation's object graph keeps alive: the heap
// after a collection with the graph held, less the heap once it is dropped (graph-MB). The
// graph lives as long as the controller's latest result.
func BenchmarkGraphRetained(b *testing.B) {
	for _, n := range []int{3000, 10000} {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			var retained float64
			for b.Loop() {
				g := Build(snap, Options{}).Graph
				with := liveHeap()
				if len(g.ReferredBy(kongstate.ObjectRef{Kind: "Service", Namespace: snap.Services[0].Namespace, Name: snap.Services[0].Name})) != 1 {
					b.Fatal("the Service's Ingress is not in the graph")
				}
				g = nil
				retained += float64(with - liveHeap())
			}
			b.ReportMetric(retained/float64(b.N)/1e6, "graph-MB")
		})
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkRendererRetained measures what a kongstate.Renderer keeps of the last body of
// POST /config it rendered (the escaped bytes of every entity, which the next body re-uses):
// the heap after a collection with the renderer held, less the heap without it
// (renderer-MB), and the body's size (body-MB).
func BenchmarkRendererRetained(b *testing.B) {
	for _, c := range []struct {
		name string
		snap *store.Snapshot
	}{{"ingresses=3000", benchdata.Snapshot(3000)}, {"ingresses=10000", benchdata.Snapshot(10000)},
		{"ingresses=3000/consumers=10000", consumerCluster(3000, 10000)}} {
		state := Build(c.snap, Options{}).State
		b.Run(c.name, func(b *testing.B) {
			var retained, size float64
			for b.Loop() {
				r := &kongstate.Renderer{}
				body, err := r.QuotedDeclarativeConfig(state, `{"config":"`, `"}`)
				if err != nil {
					b.Fatal(err)
				}
				size += float64(body.Len())
				body = kongstate.Body{}
				with := liveHeap()
				if _, err := r.QuotedDeclarativeConfig(state, `{"config":"`, `"}`); err != nil {
					b.Fatal(err)
				}
				r = nil
				retained += float64(with - liveHeap())
			}
			b.ReportMetric(retained/float64(b.N)/1e6, "renderer-MB")
			b.ReportMetric(size/float64(b.N)/1e6, "body-MB")
		})
	}
}

// BenchmarkIncrementalRetained measures what an Incremental translator keeps between rounds
// (the previous result with its object graph, and its indexes of the snapshot, built by
// Settle as the controller does after a sync): the heap after a collection with it held, less the heap without it (incremental-MB). The snapshot's
// objects, which the cache holds anyway, are not counted. B/ingress is the same per Ingress
// (each with its Service and EndpointSlice), the figure issue #13's memory work tracks.
func BenchmarkIncrementalRetained(b *testing.B) {
	for _, n := range []int{3000, 10000} {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			var retained float64
			for b.Loop() {
				inc := &Incremental{}
				inc.Build(snap, Options{})
				inc.Settle() // the indexes, which the controller builds after the sync
				with := liveHeap()
				if inc.Build(snap, Options{}).State == nil {
					b.Fatal("no state")
				}
				inc = nil
				retained += float64(with - liveHeap())
			}
			b.ReportMetric(retained/float64(b.N)/1e6, "incremental-MB")
			b.ReportMetric(retained/float64(b.N)/float64(n), "B/ingress")
		})
	}
}

// BenchmarkFullBuild compares a full translation on one goroutine (Build) with the same
// spread over GOMAXPROCS goroutines (buildParallel, what Incremental does with a large
// cluster): cpu-ms/op is what spreading costs in CPU, ns/op what it saves in wall time when
// the cores are free.
func BenchmarkFullBuild(b *testing.B) {
	snap := benchdata.Snapshot(3000)
	for _, spread := range []bool{false, true} {
		b.Run(fmt.Sprintf("ingresses=3000/spread=%v", spread), func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchdata.ProcessCPU()
			for b.Loop() {
				if !spread {
					Build(snap, Options{})
				} else if _, why := buildParallel(snap, Options{}, runtime.GOMAXPROCS(0), nil); why != "" {
					b.Fatal("not spread: ", why)
				}
			}
			b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkBuildHTTPRoutes is the translation and rendering of a round after an HTTPRoute
// changed (a full Build: Incremental splices Ingresses only) with 1,000 HTTPRoutes on one
// listener, each with its host name and the same backend Service: the cluster of
// `make bench-attached`. It is what a Gateway's status write after a route change waits
// for at the sync gate, the push aside.
func BenchmarkBuildHTTPRoutes(b *testing.B) {
	port := gatewayv1.PortNumber(80)
	section := gatewayv1.SectionName("http")
	snap := &store.Snapshot{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong"},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayapi.DefaultControllerName}}},
		Gateways: []*gatewayv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kong"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong", Listeners: []gatewayv1.Listener{{Name: section, Protocol: gatewayv1.HTTPProtocolType, Port: 80}}}}},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
	}
	for i := range 1000 {
		name := fmt.Sprintf("r%04d", i)
		snap.HTTPRoutes = append(snap.HTTPRoutes, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", SectionName: &section}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}}},
		}})
	}
	opts := Options{GatewayControllerName: gatewayapi.DefaultControllerName}
	b.ReportAllocs()
	cpu := benchdata.ProcessCPU()
	for b.Loop() {
		res := Build(snap, opts)
		if len(res.State.Services) == 0 || len(res.Problems) != 0 {
			b.Fatalf("%d services, problems %v", len(res.State.Services), res.Problems)
		}
		if _, err := res.State.DeclarativeConfig(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkFirstRender is the render part of BenchmarkFirstRound: the first body of a
// translated state (nothing rendered before), as the body of DB-less POST /config ("quoted")
// and as the plain configuration database mode and the diagnostics read ("plain").
func BenchmarkFirstRender(b *testing.B) {
	for _, n := range []int{3000} {
		state, _ := Translate(benchdata.Snapshot(n), Options{})
		for _, form := range []string{"quoted", "plain"} {
			b.Run(fmt.Sprintf("ingresses=%d/%s", n, form), func(b *testing.B) {
				b.ReportAllocs()
				cpu := benchdata.ProcessCPU()
				var size int
				for b.Loop() {
					// Each render a trace region (-test.trace): how long it took and how
					// long a core stood idle in it (docs/performance.md).
					region := trace.StartRegion(context.Background(), "render")
					r := &kongstate.Renderer{}
					if form == "quoted" {
						body, err := r.QuotedDeclarativeConfig(state, `{"config":"`, `"}`)
						if err != nil {
							b.Fatal(err)
						}
						size = body.Len()
					} else {
						body, err := r.DeclarativeConfig(state)
						if err != nil {
							b.Fatal(err)
						}
						size = len(body)
					}
					region.End()
				}
				b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
				b.ReportMetric(float64(size), "bytes/body")
			})
		}
	}
}

// BenchmarkDBLessBody is the first body of POST /config at 10,000 and 30,000 Ingresses (each
// with its Service and EndpointSlice, benchdata): body-bytes is what is sent (issue #45: without
// the fields Kong fills with the value they hold), unreduced-bytes the same configuration as
// DeclarativeConfig renders it (KIC's rendering, the goldens'), escaped the same way.
func BenchmarkDBLessBody(b *testing.B) {
	for _, n := range []int{10000, 30000} {
		res := (&Incremental{}).Build(benchdata.Snapshot(n), Options{})
		config, err := res.State.DeclarativeConfig()
		if err != nil {
			b.Fatal(err)
		}
		unreduced := len(kongstate.QuotedBody(config, `{"config":"`, `"}`))
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				body, err := (&kongstate.Renderer{}).QuotedDeclarativeConfig(res.State, `{"config":"`, `"}`)
				if err != nil {
					b.Fatal(err)
				}
				size = body.Len()
			}
			b.ReportMetric(float64(size), "body-bytes")
			b.ReportMetric(float64(unreduced), "unreduced-bytes")
		})
	}
}
