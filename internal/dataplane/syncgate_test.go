package dataplane

import (
	"context"
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
