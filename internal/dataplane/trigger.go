package dataplane

import (
	toolscache "k8s.io/client-go/tools/cache"
)

// Trigger asks for a sync. Requests never block and never queue up: any number of requests
// made before the loop takes one are a single pending request.
type Trigger struct {
	ch chan struct{}
}

// NewTrigger returns a trigger with no pending request.
func NewTrigger() *Trigger { return &Trigger{ch: make(chan struct{}, 1)} }

// Request asks for a sync.
func (t *Trigger) Request() {
	select {
	case t.ch <- struct{}{}:
	default:
	}
}

// C delivers pending requests.
func (t *Trigger) C() <-chan struct{} { return t.ch }

// EventHandler returns an informer event handler that requests a sync on every change. Events
// that only replay the initial list are ignored: the first sync, after the barrier, covers
// them all.
func (t *Trigger) EventHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if !isInInitialList {
				t.Request()
			}
		},
		UpdateFunc: func(_, _ any) { t.Request() },
		DeleteFunc: func(_ any) { t.Request() },
	}
}
