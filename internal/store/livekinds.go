package store

import "sync/atomic"

// LiveKinds is the set of optional kinds a store reads, changing while the controller runs:
// a kind joins once its CRD is installed and its informer has synced, and leaves once API
// discovery confirms its CRD is gone (internal/manager/optionalkinds.go). Each Snapshot reads
// the set once, so one snapshot never mixes two sets.
type LiveKinds struct {
	set atomic.Pointer[KindSet]
}

// NewLiveKinds returns a set holding the kinds of initial.
func NewLiveKinds(initial KindSet) *LiveKinds {
	l := &LiveKinds{}
	l.store(initial)
	return l
}

// Load is the current set. The caller must not change it.
func (l *LiveKinds) Load() KindSet { return *l.set.Load() }

// Has reports whether k is in the current set.
func (l *LiveKinds) Has(k Kind) bool { return l.Load().Has(k) }

// Add puts k in the set.
func (l *LiveKinds) Add(k Kind) { l.update(func(s KindSet) { s[k] = struct{}{} }) }

// Remove takes k out of the set.
func (l *LiveKinds) Remove(k Kind) { l.update(func(s KindSet) { delete(s, k) }) }

// update changes a copy, so that sets already handed out by Load never change. Callers of Add
// and Remove are one goroutine (the optional-kinds worker); the copy-and-swap is not meant for
// concurrent writers.
func (l *LiveKinds) update(change func(KindSet)) {
	next := KindSet{}
	for k := range l.Load() {
		next[k] = struct{}{}
	}
	change(next)
	l.store(next)
}

func (l *LiveKinds) store(s KindSet) {
	cp := KindSet{}
	for k := range s {
		cp[k] = struct{}{}
	}
	l.set.Store(&cp)
}
