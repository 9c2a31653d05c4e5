package store_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// BenchmarkRoundOneIngressChanged is one whole sync loop round after one Ingress's host
// changed, from the cache to the body of POST /config: the snapshot (a full list of the
// informers' objects, or a Follower's), translator.Incremental.Build and the Renderer's body,
// at benchdata's cluster shape (an Ingress, a Service and an EndpointSlice each) with 1,000
// unrelated Secrets in the cache. cpu-ms/op is the process's CPU time per round.
func BenchmarkRoundOneIngressChanged(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{3000, 10000} {
		data := benchdata.Snapshot(n)
		var objs []client.Object
		for _, o := range data.Ingresses {
			objs = append(objs, o)
		}
		for _, o := range data.Services {
			objs = append(objs, o)
		}
		for _, o := range data.EndpointSlices {
			objs = append(objs, o)
		}
		for i := range 1000 {
			objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "unrelated", Name: fmt.Sprintf("s-%d", i)}})
		}
		for _, mode := range []string{"list", "follow"} {
			b.Run(fmt.Sprintf("ingresses=%d/%s", n, mode), func(b *testing.B) {
				c := newInformers(b, objs...)
				st := store.New(c, store.Options{})
				f := st.Follow()
				c.handlers = append(c.handlers, f.Recording(nopHandler{}))
				snapshot := st.Snapshot
				if mode == "follow" {
					snapshot = f.Snapshot
				}
				inc := &translator.Incremental{}
				renderer := &kongstate.Renderer{}
				round := func() {
					snap, err := snapshot(ctx)
					if err != nil {
						b.Fatal(err)
					}
					res := inc.Build(snap, translator.Options{})
					if _, err := renderer.QuotedDeclarativeConfig(res.State, `{"config":"`, `"}`); err != nil {
						b.Fatal(err)
					}
					if len(res.Problems) != 0 || len(res.State.Services) != n {
						b.Fatalf("unexpected result: %d services, problems %v", len(res.State.Services), res.Problems)
					}
				}
				round()
				b.ReportAllocs()
				i := 0
				cpu := benchdata.ProcessCPU()
				for b.Loop() {
					ing := data.Ingresses[i%n].DeepCopy()
					ing.ResourceVersion = fmt.Sprint(i + 1)
					ing.Spec.Rules[0].Host = fmt.Sprintf("changed-%d.example.com", i)
					c.update(b, ing)
					i++
					round()
				}
				b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
				if inc.Stats.Full != 1 {
					b.Fatalf("%d full translations (%s)", inc.Stats.Full, inc.Stats.LastReason)
				}
			})
		}
	}
}
