package dataplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
