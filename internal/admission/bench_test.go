package admission

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

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
