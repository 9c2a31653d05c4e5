package dataplane

import (
	"context"
	"sync"
	"time"
)

// SyncGate is held while a sync is pending or running: from the change event that asks for
// a round (Trigger.Request) until the round's syncs to the gateways have ended. Work that
// competes with the loop for the CPU and can wait, the status writes (a fresh leader writes
// every Ingress's status, 10,000 of them, while changes are made: issue #13), waits at it
// between two writes, so that status writes never delay a sync.
type SyncGate struct {
	// MaxWait bounds a wait at the gate, so that status is still written, at its own pace,
	// while changes never stop coming. NewSyncGate sets DefaultMaxSyncGateWait.
	MaxWait time.Duration

	mu      sync.Mutex
	holds   int
	idle    chan struct{} // closed while holds == 0
	waiters int
	// overdue is set when a wait ran out while the gate stayed held: every wait returns at
	// once until the gate opens, so that a long sync (a database-mode gateway's, a gateway
	// not answering) delays the status writes by MaxWait in all, not by MaxWait each.
	overdue bool
}

// DefaultMaxSyncGateWait is a new gate's MaxWait.
const DefaultMaxSyncGateWait = time.Second

// NewSyncGate returns an open gate.
func NewSyncGate() *SyncGate {
	idle := make(chan struct{})
	close(idle)
	return &SyncGate{idle: idle, MaxWait: DefaultMaxSyncGateWait}
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
		g.idle = make(chan struct{})
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
		g.overdue = false
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

// Waiters is how many Wait calls are blocked, for tests.
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
	idle := g.idle
	if g.holds == 0 || g.overdue {
		g.mu.Unlock()
		return
	}
	g.waiters++
	g.mu.Unlock()
	timer := time.NewTimer(g.MaxWait)
	defer timer.Stop()
	ranOut := false
	select {
	case <-idle:
	case <-timer.C:
		ranOut = true
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.waiters--
	if ranOut && g.idle == idle {
		g.overdue = true
	}
	g.mu.Unlock()
}
