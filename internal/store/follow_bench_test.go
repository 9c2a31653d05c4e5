package store_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
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
	for _, n := range benchdata.Sizes(3000, 10000) {
		data, objs := benchCluster(n)
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

// benchCluster is benchdata's cluster of n Ingresses (with a Service and an EndpointSlice
// each) and 1,000 unrelated Secrets, as objects for newInformers.
func benchCluster(n int) (*store.Snapshot, []client.Object) {
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
	return data, objs
}

// BenchmarkRoundStateRetained is the heap the sync loop keeps between rounds beside the
// cache's objects (issue #13), per Ingress at benchdata's cluster shape: the Follower's
// previous snapshot, its sorted slices (follower-B/ingress), and the Incremental translator's
// previous result, object graph and indexes (translator-B/ingress), as they are after a
// full round, its Settle, and one followed round that spliced one changed Ingress. Each is
// the live heap after a collection with it held less the heap once it is dropped; the
// translator is dropped first, so that the snapshot it shares with the Follower counts for
// the Follower. B/ingress is their sum.
func BenchmarkRoundStateRetained(b *testing.B) {
	for _, n := range []int{3000} {
		data, objs := benchCluster(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			c := newInformers(b, objs...)
			var follower, incremental float64
			for round := 0; b.Loop(); round++ {
				f, i := roundStateRetained(b, c, data, round)
				follower += f
				incremental += i
			}
			perIngress := float64(b.N) * float64(n)
			b.ReportMetric(follower/perIngress, "follower-B/ingress")
			b.ReportMetric(incremental/perIngress, "translator-B/ingress")
			b.ReportMetric((follower+incremental)/perIngress, "B/ingress")
		})
	}
}

// roundStateRetained is BenchmarkRoundStateRetained's measure, in a function of its own so
// that nothing it made outlives it.
func roundStateRetained(b *testing.B, c *informers, data *store.Snapshot, round int) (follower, incremental float64) {
	f, inc := keepRoundState(b, c, data, round)
	withBoth := liveHeap()
	runtime.KeepAlive(inc) // held until here, dropped from here
	withFollower := liveHeap()
	runtime.KeepAlive(f)
	c.handlers = nil
	return float64(withFollower - liveHeap()), float64(withBoth - withFollower)
}

// keepRoundState is the state the sync loop keeps after two rounds over c's objects (data),
// the second after round's change of an Ingress: its Follower and Incremental translator.
func keepRoundState(t testing.TB, c *informers, data *store.Snapshot, round int) (*store.Follower, *translator.Incremental) {
	ctx := context.Background()
	f := store.New(c, store.Options{}).Follow()
	c.handlers = []toolscache.ResourceEventHandler{f.Recording(nopHandler{})}
	inc := &translator.Incremental{}
	n := len(data.Ingresses)
	for step := range 2 {
		if step > 0 {
			ing := data.Ingresses[round%n].DeepCopy()
			ing.ResourceVersion = fmt.Sprint(round + 1)
			ing.Spec.Rules[0].Host = fmt.Sprintf("changed-%d.example.com", round)
			c.update(t, ing)
		}
		snap, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res := inc.Build(snap, translator.Options{}); len(res.Problems) != 0 || len(res.State.Services) != n {
			t.Fatalf("unexpected result: %d services, problems %v", len(res.State.Services), res.Problems)
		}
		inc.Settle()
	}
	if inc.Stats.Full != 1 || inc.Stats.Partial != 1 {
		t.Fatalf("%d full translations, %d partial (%s)", inc.Stats.Full, inc.Stats.Partial, inc.Stats.LastReason)
	}
	return f, inc
}
