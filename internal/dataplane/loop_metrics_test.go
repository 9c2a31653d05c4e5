package dataplane

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/store"
)

// What the loop tells its reporter for metrics: the translation of each round, each sync's
// protocol and configuration size, the fallback's translations, and the time of the change
// event a sync delivered.
func TestLoopReportsWhatMetricsNeed(t *testing.T) {
	objs := objects(app("a", ""), app("b", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})
	_, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: true}, objs)
	<-l.FirstSyncDone()

	res := lastFallback(t, rep)
	require.Equal(t, ProtocolDBLess, res.Protocol)
	require.Positive(t, res.Size)
	require.Positive(t, res.Fallback.Size)
	require.Less(t, res.Fallback.Size, res.Size, "the fallback leaves an Ingress out")
	require.Len(t, res.Fallback.Translations, 1, "the fallback snapshot was translated once")
	require.True(t, res.EventAt.IsZero(), "the first sync delivered no change event")
	translated := 0
	for _, r := range rep.all() {
		if r.Translated {
			translated++
			require.NotNil(t, r.Graph)
		} else {
			require.Zero(t, r.TranslationDuration)
		}
	}
	require.Equal(t, 1, translated)

	// A change: the sync that delivers it reports when its event came.
	before := time.Now()
	src.cur.Store(newStore(t, append(objs, app("c", "")...)))
	trigger.Request()
	var delivered GatewayResult
	require.Eventually(t, func() bool {
		for _, r := range rep.all() {
			for _, g := range r.Gateways {
				if !g.EventAt.IsZero() {
					delivered = g
					return true
				}
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
	require.False(t, delivered.EventAt.Before(before))
	require.NotNil(t, delivered.Fallback, "delivered through the fallback: the plugin is still broken")
	require.NoError(t, delivered.Fallback.Err)
}

func TestTriggerRemembersTheFirstRequestUntilTaken(t *testing.T) {
	tr := NewTrigger()
	require.True(t, tr.takeFirst().IsZero())
	before := time.Now()
	tr.Request()
	first := tr.takeFirst()
	require.False(t, first.Before(before))
	tr.Request()
	mid := time.Now()
	tr.Request()
	require.False(t, tr.takeFirst().After(mid), "the first of the requests since the last take")
	require.True(t, tr.takeFirst().IsZero(), "taken")
}

// A resync of a configuration the gateway holds sends nothing and says so (Unchanged), for
// KIC's push metrics; a change is sent and is not Unchanged; with ReverseSync every resync
// is sent.
func TestLoopReportsUnchangedResyncs(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		objs := objects(app("a", ""))
		_, src, rep, trigger, l := fallbackLoop(t, Options{ReverseSync: reverse}, objs)
		<-l.FirstSyncDone()
		trigger.Request() // a round with nothing changed
		syncs := func(unchanged bool) int {
			n := 0
			for _, r := range rep.all() {
				for _, g := range r.Gateways {
					if !g.Skipped && g.Err == nil && g.Unchanged == unchanged {
						n++
					}
				}
			}
			return n
		}
		if reverse {
			require.Eventually(t, func() bool { return syncs(false) >= 2 }, 5*time.Second, time.Millisecond, "every resync is sent")
			require.Zero(t, syncs(true))
			continue
		}
		require.Eventually(t, func() bool { return syncs(true) >= 1 }, 5*time.Second, time.Millisecond, "the resync sent nothing")
		sent := syncs(false)
		src.cur.Store(newStore(t, append(objs, app("b", "")...)))
		trigger.Request()
		require.Eventually(t, func() bool { return syncs(false) > sent }, 5*time.Second, time.Millisecond, "a change is sent")
	}
}

// flakySource is a source that fails while fail is set.
type flakySource struct {
	SnapshotSource
	fail atomic.Bool
}

func (s *flakySource) Snapshot(ctx context.Context) (*store.Snapshot, error) {
	if s.fail.Load() {
		return nil, errors.New("cache unreadable")
	}
	return s.SnapshotSource.Snapshot(ctx)
}

// KIC's processed config snapshot cache hit and miss, with fallback configuration on: the
// first round misses; a resync (the period's ticker) with no request since the previous round
// hits; a round woken by a change misses, as does the first round after one that could not
// read the cache. With fallback configuration off nothing is said, as in KIC.
func TestLoopReportsSnapshotCacheHitsAndMisses(t *testing.T) {
	for _, fallback := range []bool{true, false} {
		trigger := NewTrigger()
		clk := testingclock.NewFakeClock(time.Now())
		rep := &reports{}
		src := &flakySource{SnapshotSource: newStore(t, cluster())}
		l := NewLoop(Options{
			Source: src, Barrier: syncedBarrier{}, Translate: translate, Clock: clk, Reporter: rep, Fallback: fallback,
			Gateways: []Gateway{&countingGateway{}}, Trigger: trigger, Period: time.Hour, Quiet: time.Millisecond, Logger: testr.New(t),
		})
		run(t, l)
		<-l.FirstSyncDone()
		// rounds is what the rounds that read the cache said, "error" for one that could not.
		rounds := func() []string {
			var out []string
			for _, r := range rep.all() {
				switch {
				case r.SnapshotErr != nil:
					out = append(out, "error")
				case r.Translated:
					out = append(out, map[SnapshotCache]string{SnapshotCacheUnknown: "-", SnapshotCacheHit: "hit", SnapshotCacheMiss: "miss"}[r.SnapshotCache])
				}
			}
			return out
		}
		waitRounds := func(n int) {
			t.Helper()
			require.Eventually(t, func() bool { return len(rounds()) == n }, 5*time.Second, time.Millisecond)
		}
		resync := func(n int) {
			t.Helper()
			require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
			clk.Step(time.Hour)
			waitRounds(n)
		}
		waitRounds(1)
		resync(2)
		clk.Step(time.Second) // past the quiet period of the start's round
		trigger.Request()     // a change event
		waitRounds(3)
		clk.Step(time.Second)
		resync(4)
		src.fail.Store(true)
		resync(5)
		src.fail.Store(false)
		resync(6)
		resync(7)
		if fallback {
			require.Equal(t, []string{"miss", "hit", "miss", "hit", "error", "miss", "hit"}, rounds())
		} else {
			require.Equal(t, []string{"-", "-", "-", "-", "error", "-", "-"}, rounds())
		}
	}
}
