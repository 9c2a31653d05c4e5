package dataplane

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// gateCheckingGateway records whether the loop's gate was held during each of its syncs.
type gateCheckingGateway struct {
	gate    func() *SyncGate
	heldAll chan bool
}

func (g *gateCheckingGateway) URL() string { return "gate" }
func (g *gateCheckingGateway) Sync(context.Context, *Target) error {
	g.heldAll <- g.gate().Busy()
	return nil
}

// The loop's SyncGate is held from a change's request until the round's sync ended and was
// reported, and is open again once the loop is idle: status writers waiting at it never run
// beside a sync, and when they run, what the sync did has been reported to them.
func TestSyncGateHeldFromRequestToSyncEnd(t *testing.T) {
	trigger := NewTrigger()
	var l *Loop
	gw := &gateCheckingGateway{gate: func() *SyncGate { return l.SyncGate() }, heldAll: make(chan bool, 10)}
	heldTranslating := make(chan bool, 10)
	heldReporting := make(chan bool, 10) // when a sync's result is reported
	l = NewLoop(Options{
		Reporter: ReporterFunc(func(_ context.Context, r Round) {
			if !r.Translated && len(r.Gateways) > 0 {
				heldReporting <- l.SyncGate().Busy()
			}
		}),
		Source: newStore(t, cluster()), Barrier: syncedBarrier{}, Gateways: []Gateway{gw},
		Translate: func(s *store.Snapshot) translator.Result {
			heldTranslating <- l.SyncGate().Busy()
			return translate(s)
		},
		Trigger: trigger, Period: time.Hour, Logger: testr.New(t),
	})
	gate := l.SyncGate()
	gate.MaxWait = time.Hour // no wait ends but by the gate opening
	require.False(t, gate.Busy())
	trigger.Request()
	require.True(t, gate.Busy(), "a request is a pending sync")

	run(t, l)
	require.True(t, <-heldTranslating, "held while the round translates")
	require.True(t, <-gw.heldAll, "held during the first sync")
	require.True(t, <-heldReporting, "held until the first sync's result was reported")
	<-l.FirstSyncDone()
	gate.Wait(context.Background())
	require.False(t, gate.Busy())

	trigger.Request()
	require.True(t, gate.Busy())
	require.True(t, <-heldTranslating, "held while the change's round translates")
	require.True(t, <-gw.heldAll, "held during the change's sync")
	require.True(t, <-heldReporting, "held until the change's sync was reported")
	gate.Wait(context.Background())
	require.False(t, gate.Busy())
}

// A Wait returns when the gate opens, after MaxWait, or when its context ends.
func TestSyncGateWaitEnds(t *testing.T) {
	gate := NewSyncGate()
	gate.Wait(context.Background()) // open: no wait

	clk := testingclock.NewFakeClock(time.Now())
	gate.Clock, gate.MaxWait = clk, time.Second
	release := gate.Hold()
	done := waitInBackground(gate, 1)
	requireWaiting(t, done, "Wait returned while the gate was held")
	release()
	<-done

	release = gate.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gate.Wait(ctx)

	// Two writers wait; when the first one's MaxWait runs out, both go, and later waits
	// return at once until the gate opens: a sync that stays in flight costs status MaxWait
	// in all.
	first := waitInBackground(gate, 1)
	clk.Step(time.Second / 2)
	second := waitInBackground(gate, 2)
	requireWaiting(t, first, "Wait returned before MaxWait while the gate was held")
	clk.Step(time.Second / 2)
	<-first
	<-second
	require.True(t, gate.Busy())
	gate.Wait(context.Background()) // overdue: at once
	release()

	// Held again: waits wait again.
	release = gate.Hold()
	done = waitInBackground(gate, 1)
	requireWaiting(t, done, "an overdue gate held again must be waited at")
	release()
	<-done
}

// waitInBackground starts a Wait at gate and returns once waiters Waits are blocked; the
// channel is closed when this one returns.
func waitInBackground(gate *SyncGate, waiters int) chan struct{} {
	done := make(chan struct{})
	go func() { gate.Wait(context.Background()); close(done) }()
	for gate.Waiters() < waiters {
		time.Sleep(time.Millisecond) // until the waiter waits; not an assertion on time
	}
	return done
}

func requireWaiting(t *testing.T, done chan struct{}, msg string) {
	t.Helper()
	select {
	case <-done:
		t.Fatal(msg)
	default:
	}
}

// heldGateway's syncs tell started, then end when finish is closed or, if endOnCancel, when
// their context ends.
type heldGateway struct {
	url         string
	endOnCancel bool
	started     chan struct{}
	finish      chan struct{}
	ended       atomic.Bool
}

func (g *heldGateway) URL() string { return g.url }
func (g *heldGateway) Sync(ctx context.Context, _ *Target) error {
	defer g.ended.Store(true)
	g.started <- struct{}{}
	var cancelled <-chan struct{}
	if g.endOnCancel {
		cancelled = ctx.Done()
	}
	select {
	case <-g.finish:
		return nil
	case <-cancelled:
		return ctx.Err()
	}
}

// The gate a sync holds is released once the loop has stopped, whether the sync ended just
// before the stop (its result waiting for a loop that no longer reads it) or is still in
// flight (ended by the stop): Start returns only once every sync it started has ended, so
// that no status writer waits at a gate that nothing will open.
func TestSyncGateOpenOnceTheLoopStopped(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stopping happens while the loop reports the fast gateway's sync; then the loop
		// is stopped and the report ends.
		stopping func(l *Loop, slow *heldGateway)
		// endOnCancel: the slow gateway's sync ends with the loop's context.
		endOnCancel bool
	}{{
		name: "a sync ended just before the stop, its result not collected",
		stopping: func(l *Loop, slow *heldGateway) {
			close(slow.finish)
			for len(l.done) == 0 {
				time.Sleep(time.Millisecond) // until its result waits for the loop; not an assertion on time
			}
		},
	}, {
		name:        "a sync still in flight at the stop",
		stopping:    func(*Loop, *heldGateway) {},
		endOnCancel: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fast := &heldGateway{url: "fast", started: make(chan struct{}, 1), finish: make(chan struct{})}
			close(fast.finish)
			slow := &heldGateway{url: "slow", endOnCancel: tc.endOnCancel, started: make(chan struct{}, 1), finish: make(chan struct{})}
			reporting, reported := make(chan struct{}), make(chan struct{})
			l := NewLoop(Options{
				Reporter: ReporterFunc(func(_ context.Context, r Round) {
					if !r.Translated && len(r.Gateways) > 0 {
						reporting <- struct{}{}
						<-reported
					}
				}),
				Source: newStore(t, cluster()), Barrier: syncedBarrier{}, Gateways: []Gateway{fast, slow},
				Translate: translate, Period: time.Hour, Logger: testr.New(t),
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopped := make(chan error, 1)
			go func() { stopped <- l.Start(ctx) }()
			<-slow.started
			<-reporting // the fast gateway's sync, collected while the slow one's is in flight
			tc.stopping(l, slow)
			cancel()
			close(reported)
			require.NoError(t, <-stopped)
			require.True(t, slow.ended.Load(), "Start returned while a sync it started was in flight")
			require.False(t, l.SyncGate().Busy(), "the gate stays held after the loop stopped")
		})
	}
}

// A sync that ignores the loop's stop (a gateway whose Sync does not watch its context, a
// fallback's translation asking a slow gateway) does not hold Start, nor the gate, beyond
// stopSyncsWait: the lease is released and the process stops within the manager's grace
// (review: Start waited for it without bound).
func TestStopDoesNotWaitForeverForASyncIgnoringIt(t *testing.T) {
	prev := stopSyncsWait
	stopSyncsWait = 20 * time.Millisecond
	t.Cleanup(func() { stopSyncsWait = prev })
	stuck := &heldGateway{url: "stuck", started: make(chan struct{}, 1), finish: make(chan struct{})}
	l := NewLoop(Options{
		Source: newStore(t, cluster()), Barrier: syncedBarrier{}, Gateways: []Gateway{stuck},
		Translate: translate, Period: time.Hour, Logger: testr.New(t),
	})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- l.Start(ctx) }()
	<-stuck.started
	cancel()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a failure deadline, not a measure
		t.Fatal("Start still waits for a sync that ignores the stop")
	}
	require.False(t, l.SyncGate().Busy(), "the gate stays held after the loop stopped")
	close(stuck.finish) // it ends at last: its result is drained, nothing blocks
	require.Eventually(t, stuck.ended.Load, 10*time.Second, time.Millisecond)
}
