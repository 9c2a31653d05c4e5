package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
)

// attachedRoutesCount is how many HTTPRoutes BenchmarkAttachedRoutes attaches.
const attachedRoutesCount = 1000

// attachedWatch follows listener http's attachedRoutes of one Gateway through a watch: every
// value it read, with when.
type attachedWatch struct {
	mu     sync.Mutex
	values []attachedValue
	cond   *sync.Cond
}

type attachedValue struct {
	at    time.Time
	count int32
}

func watchAttached(ctx context.Context, b *testing.B, ns, name string) *attachedWatch {
	b.Helper()
	wc, err := client.NewWithWatch(adminConfig, client.Options{Scheme: store.NewScheme()})
	require.NoError(b, err)
	w, err := wc.Watch(ctx, &gatewayv1.GatewayList{}, client.InNamespace(ns),
		&client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name)})
	require.NoError(b, err)
	aw := &attachedWatch{}
	aw.cond = sync.NewCond(&aw.mu)
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				g, isGateway := ev.Object.(*gatewayv1.Gateway)
				if !isGateway || ev.Type == watch.Deleted {
					continue
				}
				for _, l := range g.Status.Listeners {
					if l.Name == "http" {
						aw.mu.Lock()
						aw.values = append(aw.values, attachedValue{time.Now(), l.AttachedRoutes})
						aw.cond.Broadcast()
						aw.mu.Unlock()
					}
				}
			}
		}
	}()
	return aw
}

// waitFor blocks until the count reads want (or timeout) and returns when it first did.
func (aw *attachedWatch) waitFor(b *testing.B, want int32, timeout time.Duration) time.Time {
	b.Helper()
	deadline := time.AfterFunc(timeout, func() { aw.mu.Lock(); aw.cond.Broadcast(); aw.mu.Unlock() })
	defer deadline.Stop()
	end := time.Now().Add(timeout)
	aw.mu.Lock()
	defer aw.mu.Unlock()
	for {
		if n := len(aw.values); n > 0 && aw.values[n-1].count == want {
			return aw.values[n-1].at
		}
		if time.Now().After(end) {
			last := int32(-1)
			if n := len(aw.values); n > 0 {
				last = aw.values[n-1].count
			}
			b.Fatalf("attachedRoutes did not read %d within %s (last %d)", want, timeout, last)
		}
		aw.cond.Wait()
	}
}

// since are the values read after t.
func (aw *attachedWatch) since(t time.Time) []attachedValue {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	var out []attachedValue
	for _, v := range aw.values {
		if v.at.After(t) {
			out = append(out, v)
		}
	}
	return out
}

// waitRoutesAccepted waits until n HTTPRoutes in ns carry an Accepted entry of controller,
// and returns when that was seen.
func waitRoutesAccepted(ctx context.Context, b *testing.B, ns, controller string, n int, timeout time.Duration) time.Time {
	b.Helper()
	accepted := 0
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		var routes gatewayv1.HTTPRouteList
		require.NoError(b, admin.List(ctx, &routes, client.InNamespace(ns)))
		accepted = 0
		for _, hr := range routes.Items {
			for _, p := range hr.Status.Parents {
				if string(p.ControllerName) == controller && meta.IsStatusConditionTrue(p.Conditions, "Accepted") {
					accepted++
				}
			}
		}
		if accepted == n {
			return time.Now()
		}
	}
	b.Fatalf("%d of %d routes accepted after %s", accepted, n, timeout)
	return time.Time{}
}

// inParallel calls do with each of names, 32 at a time.
func inParallel(names []string, do func(name string)) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for name := range ch {
				do(name)
			}
		})
	}
	for _, n := range names {
		ch <- n
	}
	close(ch)
	wg.Wait()
}

// BenchmarkAttachedRoutes creates 1,000 HTTPRoutes on one listener of one Gateway (32 at a
// time; create-s) and measures from the last create until the listener's attachedRoutes
// reads 1,000 (attach-lag-s); then deletes them, 32 at a time (delete-s), and measures from
// the last delete until the count reads 0 (detach-lag-s).
// After each, the count must hold for holdFor: a count that moves once it was right is a
// failure, not a slow result. Between the two, every route's own parents entry must come
// (routes-accepted-lag-s, from the last create; polled every 200 ms). Run it with `make bench-attached`.
func BenchmarkAttachedRoutes(b *testing.B) {
	const holdFor = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(b)
	controller := "konductor.test/" + ns
	createAll(b, app(ns, "echo", "echo.example.com")[:2])
	class, gw := gatewayOf(ns, controller)
	createAll(b, []client.Object{class, gw})
	b.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(b, kongemu.DBLess)
	r := startReplica(b, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(b, time.Minute)
	aw := watchAttached(ctx, b, ns, gw.Name)
	aw.waitFor(b, 0, 30*time.Second)

	// A client of its own, not rate-limited, so that creating the routes is not what is measured.
	fastConfig := rest.CopyConfig(adminConfig)
	fastConfig.QPS, fastConfig.Burst = 5000, 5000
	fast, err := client.New(fastConfig, client.Options{Scheme: store.NewScheme()})
	require.NoError(b, err)

	var create, attachLag, routeStatus, deleteAll, detachLag time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		names := make([]string, attachedRoutesCount)
		for n := range names {
			names[n] = fmt.Sprintf("r%d-%04d", i, n)
		}
		inParallel(names, func(name string) { require.NoError(b, fast.Create(ctx, httpRoute(ns, name, "http", "echo"))) })
		created := time.Now()
		at := aw.waitFor(b, attachedRoutesCount, 2*time.Minute)
		create += created.Sub(start)
		attachLag += at.Sub(created)
		b.Logf("last create answered %s, attachedRoutes %d read %s", created.Format("15:04:05.000"), attachedRoutesCount, at.Format("15:04:05.000"))
		time.Sleep(holdFor)
		for _, v := range aw.since(at) {
			require.Equal(b, int32(attachedRoutesCount), v.count, "attachedRoutes moved after it read %d", attachedRoutesCount)
		}

		// Every route's own entry follows, later: a thousand writes at --apiserver-qps.
		routesWritten := waitRoutesAccepted(ctx, b, ns, controller, attachedRoutesCount, 2*time.Minute)
		routeStatus += routesWritten.Sub(created)

		start = time.Now()
		inParallel(names, func(name string) {
			require.NoError(b, fast.Delete(ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
		})
		deleted := time.Now()
		at = aw.waitFor(b, 0, 2*time.Minute)
		deleteAll += deleted.Sub(start)
		detachLag += at.Sub(deleted)
		b.Logf("last delete answered %s, attachedRoutes 0 read %s", deleted.Format("15:04:05.000"), at.Format("15:04:05.000"))
		time.Sleep(holdFor)
		for _, v := range aw.since(at) {
			require.Equal(b, int32(0), v.count, "attachedRoutes moved after it read 0")
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(create), "create-s")
	b.ReportMetric(per(attachLag), "attach-lag-s")
	b.ReportMetric(per(routeStatus), "routes-accepted-lag-s")
	b.ReportMetric(per(deleteAll), "delete-s")
	b.ReportMetric(per(detachLag), "detach-lag-s")
	b.ReportMetric(0, "ns/op") // the op includes the hold periods: meaningless
}
