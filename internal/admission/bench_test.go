package admission

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// fixedSource hands out one snapshot: the benchmark measures the webhook's own work, not the
// cache's List.
type fixedSource struct{ snap *store.Snapshot }

func (f fixedSource) Snapshot(context.Context) (*store.Snapshot, error) { return f.snap, nil }

// BenchmarkReview is the time of one review of a new Ingress with 3,000 Ingresses (each with
// its Service and EndpointSlice) in the cache: "warm" when the cache has not changed since
// the last review (one translation), "cold" after an informer event (two). p50 and p99 are
// reported (ms) besides the mean.
func BenchmarkReview(b *testing.B) {
	const n = 3000
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(fmt.Sprintf("ingresses=%d/%s", n, name), func(b *testing.B) {
			v := NewValidator(Options{Source: fixedSource{benchdata.Snapshot(n)}})
			obj := objects(b, ingress("new", "kong", "new.example.com", "/api", "Prefix"))[0]
			obj.SetNamespace("ns-1")
			req := request(b, store.KindIngress, admissionv1.Create, obj)
			if resp := v.Review(context.Background(), req); !resp.Allowed {
				b.Fatalf("denied: %s", resp.Result.Message)
			}
			took := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					v.generation.Add(1)
				}
				start := time.Now()
				resp := v.Review(context.Background(), req)
				took = append(took, time.Since(start))
				if !resp.Allowed {
					b.Fatal("denied")
				}
			}
			b.StopTimer()
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkHostileReviews is the memory a validator keeps after reviews that name made-up
// namespaces (the attack of issue #44: an unauthenticated caller growing a per-scope cache),
// with 3,000 Ingresses and 1,000 KongConsumers (which every scope's translation holds) in the
// cache. retained-MiB is the heap after the reviews, less the heap before them, after a
// collection each time: it must not grow with namespaces=.
func BenchmarkHostileReviews(b *testing.B) {
	snap := benchdata.Snapshot(3000)
	for i := range 1000 {
		snap.KongConsumers = append(snap.KongConsumers, &kongv1.KongConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i), Namespace: "ns-0",
				Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			Username: fmt.Sprintf("user-%d", i), CustomID: fmt.Sprintf("id-%d", i)})
	}
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("namespaces=%d", n), func(b *testing.B) {
			obj := objects(b, ingress("new", "kong", "new.example.com", "/api", "Prefix"))[0]
			var retained float64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				v := NewValidator(Options{Source: fixedSource{snap}})
				for j := range n {
					obj.SetNamespace(fmt.Sprintf("made-up-%d", j))
					v.Review(context.Background(), request(b, store.KindIngress, admissionv1.Create, obj))
				}
				for j := range 10 { // and every namespace that exists
					obj.SetNamespace(fmt.Sprintf("ns-%d", j))
					v.Review(context.Background(), request(b, store.KindIngress, admissionv1.Create, obj))
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
				runtime.KeepAlive(v)
			}
			b.ReportMetric(retained, "retained-MiB")
		})
	}
}
