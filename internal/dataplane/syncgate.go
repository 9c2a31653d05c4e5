package dataplane

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SyncGate is held while a sync is pending or running: from the change event that asks for
// a round (Trigger.Request) until the round's syncs to the gateways have ended. Work that
// competes with the loop for the CPU and can wait, every status write (a fresh leader writes
// every Ingress's status, 10,000 of them, while changes are made: issue #13), waits at it
// before it writes, so that status writes never delay a sync.
type SyncGate struct {
	// MaxWait bounds a wait at the gate, so that status is still written, at its own pace,
	// while changes never stop coming. NewSyncGate sets DefaultMaxSyncGateWait.
	MaxWait time.Duration
	// Clock times MaxWait; nil is the real clock (tests set a fake one).
	Clock clock.Clock

	mu      sync.Mutex
	holds   int
	idle    chan struct{} // closed while holds == 0
	waiters int
	// overdue is closed once a wait ran out while the gate stayed held: every wait, those
	// already waiting included, returns at once until the gate opens, so that a long sync (a
	// database-mode gateway's, a gateway not answering) delays the status writes by MaxWait
	// in all, not by MaxWait each. A new one is made when the gate is held again.
	overdue chan struct{}
}

// DefaultMaxSyncGateWait is a new gate's MaxWait.
const DefaultMaxSyncGateWait = time.Second

// NewSyncGate returns an open gate.
func NewSyncGate() *SyncGate {
	idle := make(chan struct{})
	close(idle)
	return &SyncGate{idle: idle, overdue: make(chan struct{}), MaxWait: DefaultMaxSyncGateWait}
}

// Hold holds the gate until release is called (once): a round, a sync in flight.
func (g *SyncGate) Hold() (release func()) {
	g.hold()
	var once sync.Once
	return func() { once.Do(g.release) }
}

func (g *SyncGate) hold() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holds == 0 {
		g.idle, g.overdue = make(chan struct{}), make(chan struct{})
	}
	g.holds++
}

func (g *SyncGate) release() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holds--
	if g.holds == 0 {
		close(g.idle)
	}
}

// Busy reports whether a sync is pending or running.
func (g *SyncGate) Busy() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holds > 0
}

// Waiters is how many Wait calls are blocked, for tests. A counted waiter's MaxWait timer
// has been started.
func (g *SyncGate) Waiters() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiters
}

// Wait returns once no sync is pending or running, after MaxWait at most (and at once
// after a wait ran out, until the gate opens again), or when ctx ends. A nil gate never
// waits.
func (g *SyncGate) Wait(ctx context.Context) {
	if g == nil {
		return
	}
	g.mu.Lock()
	idle, overdue := g.idle, g.overdue
	if g.holds == 0 || isClosed(overdue) {
		g.mu.Unlock()
		return
	}
	clk := g.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// Started under the lock, so that a test that sees the waiter counted and moves a fake
	// clock moves this timer too.
	timer := clk.NewTimer(g.MaxWait)
	defer timer.Stop()
	g.waiters++
	g.mu.Unlock()
	ranOut := false
	select {
	case <-idle:
	case <-overdue:
	case <-timer.C():
		ranOut = true
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.waiters--
	if ranOut && !isClosed(overdue) {
		close(overdue)
	}
	g.mu.Unlock()
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
