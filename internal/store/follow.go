package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Changes says how a Follower's snapshot differs from the one before it: it is the snapshot
// numbered Since (Snapshot.Seq) with the Ingresses, Services and EndpointSlices listed here
// replaced by the object given, or gone (nil). A key may be listed whose object did not
// change. Every other field was listed anew.
type Changes struct {
	Since          uint64
	Ingresses      map[types.NamespacedName]*netv1.Ingress
	Services       map[types.NamespacedName]*corev1.Service
	EndpointSlices map[types.NamespacedName]*discoveryv1.EndpointSlice
}

// Follower hands out the sync loop's snapshots at the cost of what changed since the previous
// one (issue #13): at 10,000 Ingresses a full Snapshot lists 30,000 Ingresses, Services and
// EndpointSlices every round, and the translator then looks each up to find the one that
// changed. The informer event handlers already know which object changed: Recording notes the
// keys, and the next snapshot copies the previous one's slices and replaces only those
// objects, read from the informers' stores (the informers' own objects, read-only, as
// listShared gives). Every other kind is listed as Snapshot does.
//
// It lists everything when it cannot follow: the first snapshot, more than maxFollowed
// changes, an informer that is not the cache's (unit tests' fake clients), a change of the
// IngressClass's default flag (which decides which Ingresses are shown), an error, and once
// every FullEvery. Between those, a snapshot holds the same objects as a full Snapshot made
// after the same events were handled (TestFollowerMatchesSnapshot); the order of the slices
// differs (a Follower's are sorted by namespace and name), which Snapshot does not promise
// anyway.
//
// Snapshot is safe for concurrent use (one snapshot is made at a time); SnapshotOf with kinds
// named is the store's.
type Follower struct {
	store *Store
	// FullEvery is how often a snapshot lists everything all the same. Default 1 minute.
	FullEvery time.Duration

	mu       sync.Mutex // guards the fields below it
	pending  map[followedKey]struct{}
	overflow bool
	recorded bool // Recording was called: without events nothing can be followed

	snapMu sync.Mutex // one snapshot at a time; guards the fields below it
	// prev is the last snapshot, its Ingresses, Services and EndpointSlices sorted by
	// namespace and name (byKey): a round's changed objects are merged into them in one pass
	// (follow), where a map of their positions was a fifth of the store's heap beside the
	// cache's objects.
	prev     *Snapshot
	lastFull time.Time
	seq      uint64
}

// followedKey is one changed object.
type followedKey struct {
	kind int // followIngress, followService, followEndpointSlice
	key  types.NamespacedName
}

const (
	followIngress = iota
	followService
	followEndpointSlice
	followedKinds
)

// maxFollowed is the number of changed objects beyond which a full list is made (a resync, a
// namespace deleted): replacing them one by one would cost more than listing.
const maxFollowed = 2048

// Follow returns a Follower of s. Its handler (Recording) must be on the informers of
// Ingresses, Services and EndpointSlices before it can follow anything.
func (s *Store) Follow() *Follower {
	return &Follower{store: s, pending: map[followedKey]struct{}{}}
}

// Recording returns h with every event of an Ingress, Service or EndpointSlice noted first,
// whether h then acts on it or not, so that the round a request of h wakes sees the change.
func (f *Follower) Recording(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	f.mu.Lock()
	f.recorded = true
	f.mu.Unlock()
	return recordingHandler{f, h}
}

type recordingHandler struct {
	f *Follower
	h toolscache.ResourceEventHandler
}

func (r recordingHandler) OnAdd(obj any, isInInitialList bool) {
	r.f.record(obj)
	r.h.OnAdd(obj, isInInitialList)
}

func (r recordingHandler) OnUpdate(old, new any) {
	r.f.record(new)
	r.h.OnUpdate(old, new)
}

func (r recordingHandler) OnDelete(obj any) {
	r.f.record(obj)
	r.h.OnDelete(obj)
}

// record notes obj's key when it is of a followed kind.
func (f *Follower) record(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	kind := -1
	switch obj.(type) {
	case *netv1.Ingress:
		kind = followIngress
	case *corev1.Service:
		kind = followService
	case *discoveryv1.EndpointSlice:
		kind = followEndpointSlice
	}
	o, isObject := obj.(client.Object)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case kind < 0 && isObject:
		// Another kind: listed whole by every snapshot.
	case kind < 0:
		f.overflow = true // an event of unknown content
	case f.overflow:
	case len(f.pending) >= maxFollowed:
		f.overflow, f.pending = true, map[followedKey]struct{}{}
	default:
		f.pending[followedKey{kind, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}] = struct{}{}
	}
}

// take returns the changes noted since the last call and starts noting anew.
func (f *Follower) take() (pending map[followedKey]struct{}, overflow, recorded bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pending, overflow, recorded = f.pending, f.overflow, f.recorded
	f.pending, f.overflow = map[followedKey]struct{}{}, false
	return pending, overflow, recorded
}

// Snapshot is the store's Snapshot, made from the previous one and the changes since.
func (f *Follower) Snapshot(ctx context.Context) (*Snapshot, error) { return f.SnapshotOf(ctx, nil) }

// SnapshotOf is Snapshot for read nil, the store's SnapshotOf otherwise.
func (f *Follower) SnapshotOf(ctx context.Context, read KindSet) (*Snapshot, error) {
	if read != nil {
		return f.store.SnapshotOf(ctx, read)
	}
	f.snapMu.Lock()
	defer f.snapMu.Unlock()
	// The changes are taken before anything is read: a change noted later is read again by
	// the next snapshot, whatever this one saw of it.
	pending, overflow, recorded := f.take()
	every := f.FullEvery
	if every <= 0 {
		every = time.Minute
	}
	if f.prev == nil || overflow || !recorded || time.Since(f.lastFull) >= every {
		return f.full(ctx)
	}
	snap, err := f.store.SnapshotOf(ctx, unfollowedKinds)
	if err != nil {
		f.prev = nil
		return nil, err
	}
	if snap.IngressClassIsDefault != f.prev.IngressClassIsDefault {
		return f.full(ctx)
	}
	keys := [followedKinds][]types.NamespacedName{}
	for k := range pending {
		keys[k.kind] = append(keys[k.kind], k.key)
	}
	s := f.store
	changes := &Changes{Since: f.seq}
	var ok [followedKinds]bool
	snap.Ingresses, changes.Ingresses, ok[followIngress] = follow(ctx, s, f.prev.Ingresses, keys[followIngress], func(ing *netv1.Ingress) bool {
		return IngressMatchesClass(ing, s.opts.IngressClass, snap.IngressClassIsDefault)
	})
	snap.Services, changes.Services, ok[followService] = follow(ctx, s, f.prev.Services, keys[followService], nil)
	snap.EndpointSlices, changes.EndpointSlices, ok[followEndpointSlice] = follow(ctx, s, f.prev.EndpointSlices, keys[followEndpointSlice], nil)
	if !ok[followIngress] || !ok[followService] || !ok[followEndpointSlice] {
		return f.full(ctx)
	}
	f.seq++
	snap.Seq, snap.Changes = f.seq, changes
	f.prev = snap
	return snap, nil
}

// unfollowedKinds is every kind but those a Follower follows.
var unfollowedKinds = func() KindSet {
	s := NewKindSet(AllKinds()...)
	delete(s, KindIngress)
	delete(s, KindService)
	delete(s, KindEndpointSlice)
	return s
}()

// full is a full Snapshot, kept to follow from when the followed kinds are the informers' own
// objects.
func (f *Follower) full(ctx context.Context) (*Snapshot, error) {
	f.prev = nil
	snap, err := f.store.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	f.seq++
	snap.Seq = f.seq
	if storeOf[netv1.Ingress](ctx, f.store) == nil || storeOf[corev1.Service](ctx, f.store) == nil ||
		storeOf[discoveryv1.EndpointSlice](ctx, f.store) == nil {
		return snap, nil // listed, not the informers' objects: the next snapshot lists too
	}
	slices.SortFunc(snap.Ingresses, byKey)
	slices.SortFunc(snap.Services, byKey)
	slices.SortFunc(snap.EndpointSlices, byKey)
	f.prev, f.lastFull = snap, time.Now()
	return snap, nil
}

// byKey orders objects by namespace, then name: a Follower's order of its followed kinds.
func byKey[PT client.Object](a, b PT) int {
	return compareKey(a, types.NamespacedName{Namespace: b.GetNamespace(), Name: b.GetName()})
}

// compareKey compares o's namespace and name with k's.
func compareKey[PT client.Object](o PT, k types.NamespacedName) int {
	return compareNames(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, k)
}

// compareNames orders by namespace, then name.
func compareNames(a, b types.NamespacedName) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// storeOf is the synced informer store of a kind in the cache, nil when there is none.
func storeOf[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, s *Store) toolscache.Store {
	src, isCache := s.reader.(informerSource)
	if !isCache {
		return nil
	}
	inf, err := src.GetInformer(ctx, PT(new(T)), cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		return nil
	}
	indexed, hasStore := inf.(interface{ GetStore() toolscache.Store })
	if !hasStore {
		return nil
	}
	return indexed.GetStore()
}

// follow returns prev (sorted by byKey) with the objects of keys replaced by the informer's
// current ones (those wanted, in watched namespaces), still sorted, and those replacements by
// key (nil: gone). keys are distinct (a Follower's pending set). ok is false when the
// informer's store cannot be read.
func follow[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, s *Store, prev []PT, keys []types.NamespacedName, keep func(PT) bool) (out []PT, changed map[types.NamespacedName]PT, ok bool) {
	informer := storeOf[T, PT](ctx, s)
	if informer == nil {
		return nil, nil, false
	}
	type step struct {
		key types.NamespacedName
		now PT // nil: gone, or not wanted
	}
	steps := make([]step, 0, len(keys))
	for _, k := range keys {
		var now PT
		item, exists, err := informer.GetByKey(cacheKey(k))
		if err != nil {
			return nil, nil, false
		}
		if exists {
			obj, isT := item.(PT)
			if !isT {
				return nil, nil, false
			}
			if (obj.GetNamespace() == "" || s.inNamespace(obj.GetNamespace())) && (keep == nil || keep(obj)) {
				now = obj
			}
		}
		steps = append(steps, step{k, now})
	}
	// One merge of prev with the sorted steps: a burst of k creations or deletions costs
	// O(n + k log k), where an insertion or deletion in place each moved the rest of the slice.
	slices.SortFunc(steps, func(a, b step) int { return compareNames(a.key, b.key) })
	out = make([]PT, 0, len(prev)+len(steps))
	changed = make(map[types.NamespacedName]PT, len(steps))
	next := 0 // prev[:next] is in out, or replaced
	for _, st := range steps {
		at, listed := slices.BinarySearchFunc(prev[next:], st.key, compareKey[PT])
		out = append(out, prev[next:next+at]...)
		next += at
		if listed {
			next++ // replaced by now, or gone
		}
		if st.now != nil {
			out = append(out, st.now)
		}
		if st.now != nil || listed {
			changed[st.key] = st.now
		}
	}
	out = append(out, prev[next:]...)
	return out, changed, true
}

// cacheKey is the informer store's key of an object (toolscache.MetaNamespaceKeyFunc's).
func cacheKey(k types.NamespacedName) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}
