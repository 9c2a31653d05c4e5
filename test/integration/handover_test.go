package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manager"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// The scenario of origin-issue.txt, end to end: database-backed Kong, N Ingress+Service pairs,
// and a leader change. N is 200 by default; KONDUCTOR_HANDOVER_N=2000 runs the large variant.
func handoverN(t *testing.T) int {
	if v := os.Getenv("KONDUCTOR_HANDOVER_N"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	return 200
}

const syncPeriod = time.Second

// handoverArgs are the flags of every replica in these tests: leader election on, with short
// lease timings so that the lease-expiry path takes seconds, not minutes.
func handoverArgs(ns string) []string {
	return []string{
		"--election-id", "konductor-" + ns,
		"--election-lease-duration", "3s", "--election-renew-deadline", "2s", "--election-retry-period", "200ms",
		"--proxy-sync-seconds", strconv.FormatFloat(syncPeriod.Seconds(), 'f', -1, 64),
	}
}

// leadership records when a replica gained the lease, to time its first sync from there.
func leadership(r *replica) (elected func() time.Time) {
	var mu sync.Mutex
	var at time.Time
	go func() {
		select {
		case <-r.ctrl.Elected():
			mu.Lock()
			at = time.Now()
			mu.Unlock()
		case <-r.ctx.Done():
		}
	}()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

func waitElected(t *testing.T, r *replica, within time.Duration) {
	t.Helper()
	select {
	case <-r.ctrl.Elected():
	case <-time.After(within):
		t.Fatalf("%s did not gain the lease within %s", r.name, within)
	}
}

// writes returns the audit entries that changed Kong, by kind of change.
func writes(entries []kongemu.AuditEntry) (deletes, puts, posts []kongemu.AuditEntry) {
	for _, e := range entries {
		switch e.Method {
		case http.MethodDelete:
			deletes = append(deletes, e)
		case http.MethodPut, http.MethodPatch:
			puts = append(puts, e)
		case http.MethodPost:
			posts = append(posts, e)
		}
	}
	return
}

func describe(entries []kongemu.AuditEntry) string {
	var b strings.Builder
	for i, e := range entries {
		if i == 10 {
			fmt.Fprintf(&b, "... and %d more\n", len(entries)-10)
			break
		}
		fmt.Fprintf(&b, "%s %s (%s %s)\n", e.Method, e.Path, e.Entity, e.Name)
	}
	return b.String()
}

type handover struct {
	ns    string
	n     int
	kong  *kongemu.Server
	first *replica
}

// syncedLeader creates the N pairs and a first replica that leads and has synced them all.
func syncedLeader(t *testing.T) *handover {
	ns := newNamespace(t)
	n := handoverN(t)
	apps(t, ns, n)
	kong := startEmulator(t, kongemu.Postgres)
	first := startReplica(t, replicaSpec{name: "first", namespace: ns, gateways: []string{kong.URL}, args: handoverArgs(ns)})
	first.waitFirstSync(t, 5*time.Minute)
	require.Len(t, kong.Entities("routes"), n)
	return &handover{ns: ns, n: n, kong: kong, first: first}
}

// assertNothingWritten: from mark until two full sync periods after second led, Kong saw no
// delete and no create, nor any write at all, since nothing in the cluster changed.
func (h *handover) assertNothingWritten(t *testing.T, second *replica, elected func() time.Time, mark int) {
	t.Helper()
	waitElected(t, second, time.Minute)
	second.waitFirstSync(t, 5*time.Minute)
	lead := elected()
	t.Logf("lease acquisition to first completed sync: %s (N=%d)", second.firstSyncAt().Sub(lead), h.n)
	time.Sleep(2*syncPeriod + 200*time.Millisecond) // two full sync periods after it leads
	deletes, puts, posts := writes(h.kong.AuditSince(mark))
	require.Empty(t, deletes, "entities deleted during the handover:\n%s", describe(deletes))
	require.Empty(t, posts, "entities created during the handover:\n%s", describe(posts))
	require.Empty(t, puts, "entities written during the handover (nothing changed):\n%s", describe(puts))
	require.Len(t, h.kong.Entities("routes"), h.n)
	require.GreaterOrEqual(t, h.kong.RequestCount(http.MethodGet, "/routes"), 2, "the new leader did sync (it listed Kong)")
}

// A: a warm standby takes over from a leader that stops cleanly and releases the lease.
func TestHandoverCleanStop(t *testing.T) {
	parallel(t)
	h := syncedLeader(t)
	mark := h.kong.AuditMark()
	second := startReplica(t, replicaSpec{name: "second", namespace: h.ns, gateways: []string{h.kong.URL}, args: handoverArgs(h.ns)})
	elected := leadership(second)
	require.Eventually(t, second.ctrl.CacheSynced, time.Minute, 5*time.Millisecond, "the standby's cache fills while it does not lead")
	select {
	case <-second.ctrl.Elected():
		t.Fatal("the standby leads while the first replica holds the lease")
	default:
	}
	// The standby prepares its first sync (dbmode.Gateway.Prepare) once its cache synced.
	require.Eventually(t, func() bool { return second.logs.count(`"prepared the next sync"`) > 0 }, time.Minute, 5*time.Millisecond)
	stopped := time.Now()
	h.first.stop(t)
	waitElected(t, second, time.Minute)
	t.Logf("clean stop to new leader: %s", time.Since(stopped))
	h.assertNothingWritten(t, second, elected, mark)
	// Kong is as the standby prepared it (the old leader wrote nothing since): the first
	// sync dumped Kong, found the same answers, and took both prepared states.
	require.Positive(t, second.logs.count(`"database sync"`, `"preparedCurrent"=true`, `"preparedTarget"=true`),
		"the first sync took the prepared states")
}

// B: the leader is killed without releasing the lease; the standby takes it when it expires.
func TestHandoverLeaseExpiry(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	n := handoverN(t)
	apps(t, ns, n)
	kong := startEmulator(t, kongemu.Postgres)
	first := startReplica(t, replicaSpec{name: "first", namespace: ns, gateways: []string{kong.URL}, args: handoverArgs(ns),
		opts: manager.Options{KeepLeaseOnCancel: true}})
	first.waitFirstSync(t, 5*time.Minute)
	h := &handover{ns: ns, n: n, kong: kong, first: first}

	mark := kong.AuditMark()
	second := startReplica(t, replicaSpec{name: "second", namespace: ns, gateways: []string{kong.URL}, args: handoverArgs(ns)})
	elected := leadership(second)
	require.Eventually(t, second.ctrl.CacheSynced, time.Minute, 5*time.Millisecond)
	killed := time.Now()
	first.stop(t) // keeps the lease: a kill
	waitElected(t, second, time.Minute)
	t.Logf("kill to new leader (lease expiry): %s", time.Since(killed))
	h.assertNothingWritten(t, second, elected, mark)
}

// C: the standby starts only after the leader is gone: a cold cache and an immediate lease.
// It must still wait for its own cache before the first sync, and delete nothing.
func TestHandoverColdStandby(t *testing.T) {
	parallel(t)
	h := syncedLeader(t)
	h.first.stop(t)
	mark := h.kong.AuditMark()
	second := startReplica(t, replicaSpec{name: "second", namespace: h.ns, gateways: []string{h.kong.URL}, args: handoverArgs(h.ns)})
	elected := leadership(second)
	h.assertNothingWritten(t, second, elected, mark)
	require.True(t, second.logs.contains("cache synced"))
}

// E: the control. The pre-konductor design — a second store fed by event handlers that start
// with leadership, read without waiting — must make scenario C see deletions; otherwise the
// zero above proves nothing. The real store, in the same scenario, sees none (test C).
func TestHandoverColdStandbyWithTheOldDesignDeletesRoutes(t *testing.T) {
	parallel(t)
	h := syncedLeader(t)
	h.first.stop(t)
	mark := h.kong.AuditMark()
	second := startReplica(t, replicaSpec{name: "legacy", namespace: h.ns, gateways: []string{h.kong.URL}, args: handoverArgs(h.ns),
		opts: manager.Options{
			SkipCacheBarrierForTesting: true,
			SnapshotSourceForTesting: func(c cache.Cache) dataplane.SnapshotSource {
				return newLegacyStore(c, store.Options{Namespaces: []string{h.ns}, Kinds: store.NewKindSet(store.AllKinds()...)})
			},
		}})
	waitElected(t, second, time.Minute)
	require.Eventually(t, func() bool {
		deletes, _, _ := writes(h.kong.AuditSince(mark))
		return len(deletes) > 0
	}, time.Minute, 10*time.Millisecond, "the old design must delete live routes in this scenario")
	deletes, _, _ := writes(h.kong.AuditSince(mark))
	t.Logf("the old design deleted %d entities, e.g.:\n%s", len(deletes), describe(deletes))
	// It converges again afterwards, which is exactly how the bug hid: routes gone, then back.
	require.Eventually(t, func() bool { return len(h.kong.Entities("routes")) == h.n }, time.Minute, 10*time.Millisecond)
}

// D: objects keep changing while the leader changes. The final Kong state equals the
// translation of the final cluster state, and nothing that existed throughout was deleted.
func TestHandoverWhileObjectsChange(t *testing.T) {
	parallel(t)
	h := syncedLeader(t)
	stable := stableEntityIDs(h.kong)
	require.Len(t, stable, 4*h.n, "a service, route, upstream and target per app")
	mark := h.kong.AuditMark()
	second := startReplica(t, replicaSpec{name: "second", namespace: h.ns, gateways: []string{h.kong.URL}, args: handoverArgs(h.ns)})
	elected := leadership(second)
	require.Eventually(t, second.ctrl.CacheSynced, time.Minute, 5*time.Millisecond)

	// The writer: creates, updates and deletes "churn" Ingresses at a steady rate.
	ctx, stopWriter := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		rng := rand.New(rand.NewPCG(1, 2))
		live := map[string]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("churn-%02d", rng.IntN(20))
			switch {
			case !live[name]:
				objs := app(h.ns, name, name+".example.com")
				for _, o := range objs {
					_ = admin.Create(context.Background(), o)
				}
				live[name] = true
			case rng.IntN(2) == 0:
				var ing netv1.Ingress
				if admin.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &ing) == nil {
					ing.Spec.Rules[0].Host = fmt.Sprintf("%s-%d.example.com", name, i)
					_ = admin.Update(context.Background(), &ing)
				}
			default:
				_ = admin.Delete(context.Background(), &netv1.Ingress{ObjectMeta: metav1Object(h.ns, name)})
				live[name] = false
			}
		}
	}()

	time.Sleep(500 * time.Millisecond)
	h.first.stop(t)
	waitElected(t, second, time.Minute)
	time.Sleep(time.Second)
	stopWriter()
	<-writerDone

	// Converged: Kong holds exactly the translation of the cluster as it is now.
	want := expectedRoutes(t, h.ns)
	require.Eventually(t, func() bool { return equalSets(want, entityNames(h.kong.Entities("routes"))) }, time.Minute, 20*time.Millisecond,
		"Kong's routes never matched the cluster")

	t.Logf("lease acquisition to first completed sync: %s (N=%d, objects changing)", second.firstSyncAt().Sub(elected()), h.n)

	// Nothing that existed throughout was ever deleted.
	deletes, _, _ := writes(h.kong.AuditSince(mark))
	for _, d := range deletes {
		require.False(t, stable[d.ID], "an entity of an object that existed throughout was deleted: %s %s (%s %s)", d.Method, d.Path, d.Entity, d.Name)
	}
	t.Logf("during the handover: %d deletes, all of churned objects", len(deletes))
}

// stableEntityIDs are the IDs of every entity Kong holds for the "app-" objects, which the
// writer never touches: their services, routes and upstreams, and the targets of those
// upstreams.
func stableEntityIDs(kong *kongemu.Server) map[string]bool {
	ids := map[string]bool{}
	for _, kind := range []string{"services", "routes", "upstreams"} {
		for _, e := range kong.Entities(kind) {
			if name, _ := e["name"].(string); strings.Contains(name, "app-") {
				ids[e["id"].(string)] = true
			}
		}
	}
	for _, e := range kong.Entities("targets") {
		if up, ok := e["upstream"].(map[string]any); ok && ids[fmt.Sprint(up["id"])] {
			ids[e["id"].(string)] = true
		}
	}
	return ids
}

func metav1Object(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// expectedRoutes translates the cluster's objects in ns, as they are now, into route names.
func expectedRoutes(t *testing.T, ns string) []string {
	t.Helper()
	var names []string
	for _, svc := range clusterTranslation(t, ns).Content().Services {
		for _, r := range svc.Routes {
			names = append(names, *r.Name)
		}
	}
	sort.Strings(names)
	return names
}

// clusterTranslation is the translation of the cluster's objects in ns, as they are now.
func clusterTranslation(t *testing.T, ns string) *kongstate.State {
	t.Helper()
	var objs []client.Object
	for _, k := range store.AllKinds() {
		list := k.NewList()
		require.NoError(t, admin.List(context.Background(), list, client.InNamespace(ns)))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, it := range items {
			objs = append(objs, it.(client.Object))
		}
	}
	s, err := store.NewForObjects(objs, store.Options{Namespaces: []string{ns}})
	require.NoError(t, err)
	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	state, _ := translator.Translate(snap, translator.Options{})
	return state
}

func entityNames(es []map[string]any) []string {
	var out []string
	for _, e := range es {
		if n, ok := e["name"].(string); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A standby with --kong-admin-url gateways learns their router (the GET / its start asked)
// before its first warm translation, as a standby with discovered gateways does: before, it
// learned it only at its first Prepare, one or two periods after its cache synced (never,
// here: its period is an hour), so a takeover right after the start translated everything
// again and its webhook checked regexes with the wrong engine.
func TestStandbyLearnsTheRouterOfItsGateways(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	apps(t, ns, 2)
	kong, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterExpressions}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = kong.Close() })
	elect := append(handoverArgs(ns), "--leader-elect=true")
	leader := startReplica(t, replicaSpec{name: "leader", namespace: ns, gateways: []string{kong.URL}, args: elect})
	leader.waitFirstSync(t, time.Minute)
	standby := startReplica(t, replicaSpec{name: "standby", namespace: ns, gateways: []string{kong.URL},
		args: append(elect, "--proxy-sync-seconds", "3600")})
	require.Eventually(t, func() bool {
		return standby.logs.contains("router flavor learned from a gateway", kong.URL, "expressions")
	}, 30*time.Second, 20*time.Millisecond, standby.logs.String())
	select {
	case <-standby.ctrl.Elected():
		t.Fatal("the second replica leads")
	default:
	}
}
