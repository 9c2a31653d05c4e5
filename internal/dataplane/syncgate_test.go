package dataplane

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"

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

// The loop's SyncGate is held from a change's request until the round's sync ended, and is
// open again once the loop is idle: status writers waiting at it never run beside a sync.
func TestSyncGateHeldFromRequestToSyncEnd(t *testing.T) {
	trigger := NewTrigger()
	var l *Loop
	gw := &gateCheckingGateway{gate: func() *SyncGate { return l.SyncGate() }, heldAll: make(chan bool, 10)}
	heldTranslating := make(chan bool, 10)
	l = NewLoop(Options{
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
	<-l.FirstSyncDone()
	gate.Wait(context.Background())
	require.False(t, gate.Busy())

	trigger.Request()
	require.True(t, gate.Busy())
	require.True(t, <-heldTranslating, "held while the change's round translates")
	require.True(t, <-gw.heldAll, "held during the change's sync")
	gate.Wait(context.Background())
	require.False(t, gate.Busy())
}

// A Wait returns when the gate opens, after MaxWait, or when its context ends.
func TestSyncGateWaitEnds(t *testing.T) {
	gate := NewSyncGate()
	gate.Wait(context.Background()) // open: no wait

	gate.MaxWait = time.Hour
	release := gate.Hold()
	done := make(chan struct{})
	go func() { gate.Wait(context.Background()); close(done) }()
	for gate.Waiters() == 0 {
		time.Sleep(time.Millisecond) // until the waiter waits; not an assertion on time
	}
	select {
	case <-done:
		t.Fatal("Wait returned while the gate was held")
	default:
	}
	release()
	<-done

	release = gate.Hold()
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gate.Wait(ctx)
	gate.MaxWait = time.Nanosecond
	gate.Wait(context.Background())
	require.True(t, gate.Busy())

	// Once a wait ran out, waits return at once until the gate opens again.
	gate.MaxWait = time.Hour
	gate.Wait(context.Background())
	release()
	release = gate.Hold()
	done = make(chan struct{})
	go func() { gate.Wait(context.Background()); close(done) }()
	for gate.Waiters() == 0 {
		time.Sleep(time.Millisecond) // until the waiter waits; not an assertion on time
	}
	release()
	<-done
}
