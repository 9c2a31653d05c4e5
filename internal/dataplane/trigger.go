package dataplane

import (
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/translator"
)

// Trigger asks for a sync. Requests never block and never queue up: any number of requests
// made before the loop takes one are a single pending request.
type Trigger struct {
	ch chan struct{}

	mu    sync.Mutex
	first time.Time // the first request not yet taken by a round, for the event-to-push metric
	gate  *SyncGate // held while a request is pending (the loop's trigger); nil for others
}

// holdGate makes the trigger hold gate while a request is pending.
func (t *Trigger) holdGate(gate *SyncGate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gate = gate
	if !t.first.IsZero() {
		gate.hold()
	}
}

// NewTrigger returns a trigger with no pending request.
func NewTrigger() *Trigger { return &Trigger{ch: make(chan struct{}, 1)} }

// Request asks for a sync.
func (t *Trigger) Request() {
	t.mu.Lock()
	if t.first.IsZero() {
		t.first = time.Now()
		t.gate.hold()
	}
	t.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
	default:
	}
}

// takeFirst returns the time of the first request since the last call (zero when none came)
// and starts counting again: a round calls it before it reads the cache, so that what it
// translates includes every change requested before. The request it takes no longer waits
// in C: a round taken by Start or during a burst is not followed by one more with nothing
// new (a request made while takeFirst runs still leaves its own).
func (t *Trigger) takeFirst() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.ch:
	default:
	}
	first := t.first
	t.first = time.Time{}
	if !first.IsZero() {
		t.gate.release()
	}
	return first
}

// C delivers pending requests.
func (t *Trigger) C() <-chan struct{} { return t.ch }

// EventFilter tells whether an informer event can change the translation.
type EventFilter interface {
	// Relevant: old is nil for an add, new nil for a delete.
	Relevant(old, new client.Object) bool
}

// EventJudge is an EventFilter that says why an event cannot change the translation
// (translator.Relevance).
type EventJudge interface {
	// Verdict: old is nil for an add, new nil for a delete.
	Verdict(old, new client.Object) translator.Verdict
}

// EventObserver is told what became of each informer event a trigger's handler judged: its
// object and the verdict, or InitialList for an add that replays the initial list (the first
// round reads them all).
type EventObserver interface {
	Observe(obj client.Object, outcome translator.Verdict)
}

// InitialList is the outcome of an add that only replays an informer's initial list.
const InitialList translator.Verdict = "initial_list"

// filtered is the verdict of an event a plain EventFilter found irrelevant.
const filtered translator.Verdict = "filtered"

// EventHandler returns an informer event handler that requests a sync on every change. Events
// that only replay the initial list are ignored: the first sync, after the barrier, covers
// them all.
func (t *Trigger) EventHandler() toolscache.ResourceEventHandler { return t.FilteredEventHandler(nil) }

// FilteredEventHandler is EventHandler, asking filter (when not nil) whether each event can
// change the translation first: a status write or an object nothing served refers to then
// wakes no round.
func (t *Trigger) FilteredEventHandler(filter EventFilter) toolscache.ResourceEventHandler {
	if filter == nil {
		return t.JudgedEventHandler(nil, nil)
	}
	return t.JudgedEventHandler(filterJudge{filter}, nil)
}

type filterJudge struct{ EventFilter }

func (f filterJudge) Verdict(old, new client.Object) translator.Verdict {
	if f.Relevant(old, new) {
		return translator.Relevant
	}
	return filtered
}

// JudgedEventHandler is FilteredEventHandler asking judge (when not nil), and telling observe
// (when not nil) the outcome of every event: the sync loop's, whose dropped events are
// counted and logged (konductor_events_total, docs/troubleshooting.md).
func (t *Trigger) JudgedEventHandler(judge EventJudge, observe EventObserver) toolscache.ResourceEventHandler {
	handle := func(old, new any) {
		verdict := translator.Relevant
		o, _ := old.(client.Object)
		n, _ := new.(client.Object)
		// A tombstone or something else is counted relevant.
		if judge != nil && (old == nil || o != nil) && (new == nil || n != nil) {
			verdict = judge.Verdict(o, n)
		}
		if verdict == translator.Relevant {
			t.Request()
		}
		if observe != nil {
			obj := n
			if obj == nil {
				obj = o
			}
			observe.Observe(obj, verdict)
		}
	}
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if !isInInitialList {
				handle(nil, obj)
			} else if o, ok := obj.(client.Object); ok && observe != nil {
				observe.Observe(o, InitialList)
			}
		},
		UpdateFunc: handle,
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			handle(obj, nil)
		},
	}
}
