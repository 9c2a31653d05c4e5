package store

import "sync/atomic"

// LiveKinds is the set of optional kinds a store reads, changing while the controller runs:
// a kind joins once its CRD is installed and its informer has synced, and leaves once API
// discovery confirms its CRD is gone (internal/manager/optionalkinds.go). With the set go
// the versions its kinds are read at (Versions): a kind whose CRD serves only an older
// version joins at that one, and moves to another once that one's informer has synced.
// Each Snapshot reads the set and versions once, together, so one snapshot never mixes two.
type LiveKinds struct {
	state atomic.Pointer[liveState]
}

type liveState struct {
	set      KindSet
	versions Versions
}

// NewLiveKinds returns a set holding the kinds of initial, each read at its own version.
func NewLiveKinds(initial KindSet) *LiveKinds { return NewLiveKindsAt(initial, nil) }

// NewLiveKindsAt returns a set holding the kinds of initial, read at versions.
func NewLiveKindsAt(initial KindSet, versions Versions) *LiveKinds {
	l := &LiveKinds{}
	l.store(initial, versions)
	return l
}

// Load is the current set. The caller must not change it.
func (l *LiveKinds) Load() KindSet { return l.state.Load().set }

// LoadWithVersions is the current set and the versions its kinds are read at, of one
// moment. The caller must change neither.
func (l *LiveKinds) LoadWithVersions() (KindSet, Versions) {
	st := l.state.Load()
	return st.set, st.versions
}

// Has reports whether k is in the current set.
func (l *LiveKinds) Has(k Kind) bool { return l.Load().Has(k) }

// Version is the version k is read at ("" when k is not in the set).
func (l *LiveKinds) Version(k Kind) string {
	set, versions := l.LoadWithVersions()
	if !set.Has(k) {
		return ""
	}
	return versions.GroupVersionKind(k).Version
}

// Add puts k in the set, read at its own version.
func (l *LiveKinds) Add(k Kind) { l.AddAt(k, "") }

// AddAt puts k in the set read at version ("": its own), or moves k to that version.
func (l *LiveKinds) AddAt(k Kind, version string) {
	l.update(func(s KindSet, v Versions) {
		s[k] = struct{}{}
		if version == "" || version == k.GroupVersionKind().Version {
			delete(v, k)
		} else {
			v[k] = version
		}
	})
}

// Remove takes k out of the set.
func (l *LiveKinds) Remove(k Kind) {
	l.update(func(s KindSet, v Versions) { delete(s, k); delete(v, k) })
}

// update changes a copy, so that sets already handed out by Load never change. Callers of Add
// and Remove are one goroutine (the optional-kinds worker); the copy-and-swap is not meant for
// concurrent writers.
func (l *LiveKinds) update(change func(KindSet, Versions)) {
	st := l.state.Load()
	next, versions := KindSet{}, st.versions.Clone()
	for k := range st.set {
		next[k] = struct{}{}
	}
	change(next, versions)
	l.store(next, versions)
}

func (l *LiveKinds) store(s KindSet, versions Versions) {
	cp := KindSet{}
	for k := range s {
		cp[k] = struct{}{}
	}
	l.state.Store(&liveState{set: cp, versions: versions.Clone()})
}
