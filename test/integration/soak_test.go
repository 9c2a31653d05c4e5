package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manager"
)

// soakSize is the failover soak's size: the short version by default (it runs in `make test`),
// `make soak` sets KONDUCTOR_SOAK=full.
type soakSize struct {
	apps          int // each an Ingress, a Service and an EndpointSlice
	churn         int // of which the writer creates and deletes whole apps
	leaderChanges int // alternately a clean stop and a kill
	changes       int // the writer's changes; 0: until the last leader change is done
	every         time.Duration
	renewDeadline time.Duration // 0: handoverArgs' 2 s
}

func soakSizeOf(t *testing.T) soakSize {
	if os.Getenv("KONDUCTOR_SOAK") != "full" {
		return soakSize{apps: 40, churn: 5, leaderChanges: 3, changes: 10, every: 150 * time.Millisecond}
	}
	s := soakSize{apps: 667, churn: 40, leaderChanges: 100, every: 50 * time.Millisecond, renewDeadline: 5 * time.Second}
	if v := os.Getenv("KONDUCTOR_SOAK_LEADER_CHANGES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		s.leaderChanges = n
	}
	return s
}

// lifetimes records when the writer's apps existed: an app exists from the moment its last
// object was created (after the API server answered) to the moment its first object's delete
// was asked, so that the record never says it existed when it did not.
type lifetimes struct {
	mu    sync.Mutex
	spans map[string][]span
}

type span struct{ from, to time.Time } // to is zero while the app exists

func (l *lifetimes) created(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[name] = append(l.spans[name], span{from: time.Now()})
}

func (l *lifetimes) deleting(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.spans[name]; len(s) > 0 && s[len(s)-1].to.IsZero() {
		s[len(s)-1].to = time.Now()
	}
}

// existedThroughout reports whether the app existed at every moment of [from, to].
func (l *lifetimes) existedThroughout(name string, from, to time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.spans[name] {
		if !s.from.After(from) && (s.to.IsZero() || s.to.After(to)) {
			return true
		}
	}
	return false
}

// The failover soak (issue #11): database mode, a writer changing Ingresses throughout, and
// leader changes alternating clean stops and kills (a kill cancels the manager without
// releasing the lease: the standby takes over when the lease expires). Kong never loses an
// entity whose objects exist: every delete in the emulator's audit log is of an entity whose
// app was gone at some moment between the entity's last write and the delete. At the end Kong
// equals the translation of the cluster (a diff finds nothing to do).
//
// The short version (a few leader changes, 10 changes, 40 apps) runs in `make test`;
// `make soak` runs 100 leader changes over 2,000 objects with the writer never pausing.
func TestFailoverSoak(t *testing.T) {
	size := soakSizeOf(t)
	ns := newNamespace(t)
	stableApps := size.apps - size.churn
	apps(t, ns, stableApps)
	life := &lifetimes{spans: map[string][]span{}}
	churnName := func(i int) string { return fmt.Sprintf("churn-%03d", i) }
	for i := range size.churn { // every other churn app exists at the start
		if i%2 == 0 {
			createAll(t, app(ns, churnName(i), churnName(i)+".example.com"))
			life.created(churnName(i))
		}
	}
	kong := startEmulator(t, kongemu.Postgres)

	// The n-th replica started is killed when n is odd, so it starts with KeepLeaseOnCancel.
	args := handoverArgs(ns)
	if size.renewDeadline > 0 {
		// A renew deadline that survives a loaded machine: a leader that cannot renew in
		// time gives the lease up and exits, an unplanned leader change.
		args = append(args, "--election-lease-duration", (size.renewDeadline + 2*time.Second).String(),
			"--election-renew-deadline", size.renewDeadline.String(), "--election-retry-period", "500ms")
	}
	start := func(k int) *replica {
		return startReplica(t, replicaSpec{name: fmt.Sprintf("r%03d", k), namespace: ns, gateways: []string{kong.URL},
			args: args, opts: manager.Options{KeepLeaseOnCancel: k%2 == 1}})
	}
	lost := 0 // leaders that lost the lease on their own before their planned stop
	stop := func(r *replica) {
		r.stopOnce.Do(func() {
			r.cancel()
			select {
			case err := <-r.done:
				if err != nil && strings.Contains(err.Error(), "leader election lost") {
					lost++
					return
				}
				require.NoError(t, err, "%s stopped with an error", r.name)
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not stop", r.name)
			}
		})
	}
	// leads waits until r, elected, completes its first sync; false when r lost the lease
	// before that (a leader that cannot renew in time on a loaded machine exits, an unplanned
	// leader change the soak survives by starting another replica).
	leads := func(r *replica) bool {
		select {
		case <-r.firstSeen:
			return true
		case err := <-r.done:
			r.stopOnce.Do(func() {}) // stopped already: stop(r) has nothing left to do
			if err != nil && strings.Contains(err.Error(), "leader election lost") {
				lost++
				return false
			}
			t.Fatalf("%s stopped before its first sync: %v", r.name, err)
		case <-time.After(5 * time.Minute):
			t.Fatalf("%s: no first sync within 5m0s", r.name)
		}
		return false
	}
	replicas := 0
	next := func() *replica {
		replicas++
		return start(replicas - 1)
	}
	// elect makes cand, or the replicas started after it when it loses the lease, the leader.
	elect := func(cand *replica) *replica {
		for {
			waitElected(t, cand, time.Minute)
			if leads(cand) {
				return cand
			}
			cand = next()
		}
	}
	leader := elect(next())
	startedAt := time.Now()
	mark := kong.AuditMark()
	// Targets carry no tags (as KIC makes them): they belong to their upstream's object.
	upstreamOwner := map[string]kongstate.ObjectRef{}
	for _, u := range kong.Entities("upstreams") {
		var tags []string
		for _, tg := range u["tags"].([]any) {
			tags = append(tags, tg.(string))
		}
		upstreamOwner[u["id"].(string)], _ = kongstate.ObjectRefFromTags(tags)
	}

	// The writer: moves stable Ingresses to another path (an update in place) and creates and
	// deletes churn apps, until stopped or its changes are made.
	ctx, stopWriter := context.WithCancel(context.Background())
	defer stopWriter()
	var changes atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		rng := rand.New(rand.NewPCG(11, 12))
		tick := time.NewTicker(size.every)
		defer tick.Stop()
		for i := 0; size.changes == 0 || changes.Load() < int64(size.changes); i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if rng.IntN(2) == 0 {
				name := fmt.Sprintf("app-%04d", rng.IntN(stableApps))
				var ing netv1.Ingress
				if admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ing) == nil {
					ing.Spec.Rules[0].HTTP.Paths[0].Path = fmt.Sprintf("/v%d", i)
					if admin.Update(ctx, &ing) == nil {
						changes.Add(1)
					}
				}
				continue
			}
			name := churnName(rng.IntN(size.churn))
			objs := app(ns, name, name+".example.com")
			if admin.Get(ctx, client.ObjectKeyFromObject(objs[2]), &netv1.Ingress{}) != nil {
				for _, o := range objs {
					_ = admin.Create(ctx, o)
				}
				life.created(name)
			} else {
				life.deleting(name)
				for i := len(objs) - 1; i >= 0; i-- { // the Ingress first
					_ = admin.Delete(ctx, objs[i])
				}
			}
			changes.Add(1)
		}
	}()

	standby := next()
	for k := 0; k < size.leaderChanges; k++ {
		require.Eventually(t, standby.ctrl.CacheSynced, time.Minute, 5*time.Millisecond, "the standby's cache")
		stop(leader) // clean when its number is even, a kill (the lease kept) when odd
		leader = elect(standby)
		standby = next()
		if (k+1)%10 == 0 {
			t.Logf("%d leader changes, %d changes made, %s", k+1, changes.Load(), time.Since(startedAt).Round(time.Second))
		}
	}
	if size.changes > 0 {
		select {
		case <-writerDone:
		case <-time.After(time.Minute):
			t.Fatal("the writer did not make its changes")
		}
	}
	stopWriter()
	<-writerDone
	t.Logf("soak: %d apps (%d objects), %d leader changes (%d of them leases lost under load before the planned stop), %d changes, %s",
		size.apps, 3*size.apps, size.leaderChanges, lost, changes.Load(),
		time.Since(startedAt).Round(time.Second))

	// Converged: a diff of Kong against the translation of the cluster finds nothing to do.
	gw, err := dbmode.New(kong.URL, &http.Client{}, dbmode.Options{})
	require.NoError(t, err)
	// On failure the last diff is reported: what Kong still differs in (at most 20 changes).
	// The leader may be in a sync of the last changes when the writer stops: at 2,000 objects
	// under -race on a loaded machine a database sync has taken 30 s and more (a dump of 19 s
	// seen), and this check's own diff is a whole dump of Kong too, so it asks every 2 s, not
	// continuously, and waits up to 5 minutes. How long it took is logged.
	convergeFrom := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		res, err := gw.Diff(context.Background(), clusterTranslation(t, ns))
		require.NoError(c, err)
		left := res.Changes[:min(len(res.Changes), 20)]
		require.Zero(c, res.Total(), "diff left: %d creates, %d updates, %d deletes, first ones: %+v", res.Creates, res.Updates, res.Deletes, left)
	}, 5*time.Minute, 2*time.Second, "Kong never matched the translation of the cluster")
	t.Logf("converged %s after the writer stopped", time.Since(convergeFrom).Round(100*time.Millisecond))

	// No entity was deleted while its app existed.
	audit := kong.AuditSince(mark)
	lastWrite := map[string]time.Time{} // entity id -> its last create or update
	deletes := 0
	for _, a := range audit {
		ref, ok := kongstate.ObjectRefFromTags(a.Tags)
		if a.Entity == "upstreams" && ok {
			upstreamOwner[a.ID] = ref
		}
		if segs := strings.Split(a.Path, "/"); !ok && a.Entity == "targets" && len(segs) > 2 {
			ref, ok = upstreamOwner[segs[2]]
		}
		if a.Method != http.MethodDelete {
			lastWrite[a.ID] = a.Time
			continue
		}
		deletes++
		require.True(t, ok, "a delete of an entity without object tags: %s %s (%s)", a.Method, a.Path, a.Name)
		from, written := lastWrite[a.ID]
		if !written {
			from = startedAt
		}
		churn := strings.HasPrefix(ref.Name, "churn-")
		require.True(t, churn && !life.existedThroughout(ref.Name, from, a.Time),
			"%s of %s deleted while its objects existed: %s %s (%s)", a.Entity, ref, a.Method, a.Path, a.Name)
	}
	t.Logf("audit: %d writes, %d deletes, all of churn apps that had gone", len(audit), deletes)
}
