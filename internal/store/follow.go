package store

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Changes says how a Follower's snapshot differs from the one before it (Since, a
// Snapshot.Seq): of each followed kind, the objects of the keys listed here were replaced by
// the object given, or are gone (nil), and all others are the previous snapshot's, the same
// pointers. A key may be listed whose object did not change. A kind not followed was listed
// anew, whole: Followed says which.
//
// It is the round's one change set (issue #28): made from the informers' events, it is what
// the incremental translator looks at, instead of comparing each kind's lists.
type Changes struct {
	Since   uint64
	objects map[Kind]map[types.NamespacedName]client.Object
}

// Followed reports whether k's changes are those of Of: false for a kind listed anew.
func (c *Changes) Followed(k Kind) bool {
	if c == nil {
		return false
	}
	_, ok := c.objects[k]
	return ok
}

// Of is k's changed objects by key (nil: gone); nil when k is not followed.
func (c *Changes) Of(k Kind) map[types.NamespacedName]client.Object {
	if c == nil {
		return nil
	}
	return c.objects[k]
}

// with is c with k's changed objects replaced by objs (c itself is not changed: the
// Follower keeps the snapshot it belongs to).
func (c *Changes) with(k Kind, objs map[types.NamespacedName]client.Object) *Changes {
	out := &Changes{Since: c.Since, objects: maps.Clone(c.objects)}
	out.objects[k] = objs
	return out
}

// NewChanges returns the Changes of the objects given, of kinds followed (a kind of objects
// not in followed is followed too), since snapshot since: for tests, and for whoever makes
// snapshots of its own from a previous one.
func NewChanges(since uint64, followed KindSet, objects map[Kind]map[types.NamespacedName]client.Object) *Changes {
	c := &Changes{Since: since, objects: make(map[Kind]map[types.NamespacedName]client.Object, len(followed))}
	for k := range followed {
		c.objects[k] = map[types.NamespacedName]client.Object{}
	}
	for k, objs := range objects {
		c.objects[k] = objs
	}
	return c
}

// Follower hands out the sync loop's snapshots at the cost of what changed since the previous
// one (issue #13, issue #28): at 10,000 Ingresses a full Snapshot lists 30,000 Ingresses,
// Services and EndpointSlices every round, and the translator then looks each up to find the
// one that changed. The informer event handlers already know which object changed:
// Recording notes the keys, and the next snapshot copies the previous one's slices and
// replaces only those objects, read from the informers' stores (the informers' own objects,
// read-only, as listShared gives), and says which it replaced (Changes). It follows every
// kind a snapshot shows as the informers' objects (followers: Secrets as the cache holds
// them, which SecretPayloads then fills, saying so in Changes); the others (the IngressClass
// and its parameters, the Namespaces' labels, and a Gateway API kind read at an older
// version and converted) are listed anew by every snapshot.
//
// It lists everything when it cannot follow: the first snapshot, more than maxFollowed
// changes, an informer that is not the cache's (unit tests' fake clients), a change of the
// IngressClass's default flag (which decides which objects of the class are shown), of the
// kinds read or their versions (a CRD installed or removed), an error, and once every
// FullEvery. Between those, a snapshot holds the same objects as a full Snapshot made after
// the same events were handled (TestFollowerMatchesSnapshot); the order of the slices
// differs (a Follower's followed kinds are sorted by namespace and name), which Snapshot
// does not promise anyway.
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
	// prev is the last snapshot, its followed kinds sorted by namespace and name (byKey): a
	// round's changed objects are merged into them in one pass (follow), where a map of
	// their positions was a fifth of the store's heap beside the cache's objects.
	prev *Snapshot
	// followed are the kinds prev follows, and kinds and versions the kinds the store read
	// then (its Live set's).
	followed KindSet
	kinds    KindSet
	versions Versions
	lastFull time.Time
	seq      uint64
}

// followedKey is one changed object.
type followedKey struct {
	kind Kind
	key  types.NamespacedName
}

// maxFollowed is the number of changed objects beyond which a full list is made (a resync, a
// namespace deleted): replacing them one by one would cost more than listing.
const maxFollowed = 2048

// Follow returns a Follower of s. Its handler (Recording) must be on the informers of every
// kind the store reads before it can follow anything.
func (s *Store) Follow() *Follower {
	return &Follower{store: s, pending: map[followedKey]struct{}{}}
}

// Recording returns h with every event noted first, whether h then acts on it or not, so
// that the round a request of h wakes sees the change.
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
	kind, followed := followedKindOf(obj)
	o, isObject := obj.(client.Object)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !followed && isObject:
		// Another kind: listed whole by every snapshot.
	case !followed:
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

// SnapshotOf is Snapshot for read nil, the store's SnapshotOf otherwise. The snapshot is the
// caller's (a copy of the one the Follower keeps): it may set its fields (SecretPayloads
// does) without changing what the next snapshot is made from.
func (f *Follower) SnapshotOf(ctx context.Context, read KindSet) (*Snapshot, error) {
	if read != nil {
		return f.store.SnapshotOf(ctx, read)
	}
	f.snapMu.Lock()
	defer f.snapMu.Unlock()
	snap, err := f.next(ctx)
	if err != nil {
		f.prev = nil
		return nil, err
	}
	out := *snap
	return &out, nil
}

// next is the next snapshot, followed from prev or listed.
func (f *Follower) next(ctx context.Context) (*Snapshot, error) {
	// The changes are taken before anything is read: a change noted later is read again by
	// the next snapshot, whatever this one saw of it.
	pending, overflow, recorded := f.take()
	every := f.FullEvery
	if every <= 0 {
		every = time.Minute
	}
	s := f.store.current()
	if f.prev == nil || overflow || !recorded || time.Since(f.lastFull) >= every ||
		!maps.Equal(s.opts.Kinds, f.kinds) || !maps.Equal(s.opts.Versions, f.versions) {
		return f.full(ctx, s)
	}
	unfollowed := NewKindSet(AllKinds()...)
	for k := range f.followed {
		delete(unfollowed, k)
	}
	snap, err := s.SnapshotOf(ctx, unfollowed)
	if err != nil {
		return nil, err
	}
	if snap.IngressClassIsDefault != f.prev.IngressClassIsDefault {
		return f.full(ctx, s)
	}
	keys := map[Kind][]types.NamespacedName{}
	for k := range pending {
		keys[k.kind] = append(keys[k.kind], k.key)
	}
	changes := &Changes{Since: f.seq, objects: make(map[Kind]map[types.NamespacedName]client.Object, len(f.followed))}
	for _, kf := range followers {
		if !f.followed.Has(kf.kind) {
			continue
		}
		informer := kf.informer(ctx, s)
		if informer == nil {
			return f.full(ctx, s)
		}
		changed, ok := kf.follow(s, informer, f.prev, snap, keys[kf.kind])
		if !ok {
			return f.full(ctx, s)
		}
		changes.objects[kf.kind] = changed
	}
	f.seq++
	snap.Seq, snap.Changes = f.seq, changes
	f.prev = snap
	return snap, nil
}

// full is a full Snapshot, kept to follow from with the kinds whose objects are the
// informers' own.
func (f *Follower) full(ctx context.Context, s *Store) (*Snapshot, error) {
	f.prev = nil
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	f.seq++
	snap.Seq = f.seq
	followed := KindSet{}
	for _, kf := range followers {
		if s.readsKind(kf.kind) && s.opts.Versions.older(kf.kind) == nil && kf.informer(ctx, s) != nil {
			kf.sort(snap)
			followed[kf.kind] = struct{}{}
		}
	}
	if len(followed) == 0 {
		return snap, nil // listed, not the informers' objects: the next snapshot lists too
	}
	f.prev, f.lastFull = snap, time.Now()
	f.followed, f.kinds, f.versions = followed, s.opts.Kinds, s.opts.Versions
	return snap, nil
}

// kindFollower is how a Follower follows one kind (followed).
type kindFollower struct {
	kind Kind
	// informer is the synced informer store of the kind in s's cache, nil when there is none.
	informer func(ctx context.Context, s *Store) toolscache.Store
	// follow sets the kind's field of snap to prev's with the objects of keys replaced by
	// informer's (followSorted) and returns those replacements.
	follow func(s *Store, informer toolscache.Store, prev, snap *Snapshot, keys []types.NamespacedName) (map[types.NamespacedName]client.Object, bool)
	// sort sorts the kind's field of a full snapshot by key, to follow from.
	sort func(snap *Snapshot)
	// is reports whether an informer's object is of the kind.
	is func(obj any) bool
}

// followed is the kindFollower of the kind whose objects a snapshot holds in field.
func followed[T any, PT interface {
	*T
	client.Object
}](kind Kind, field func(*Snapshot) *[]PT) kindFollower {
	return kindFollower{
		kind:     kind,
		informer: func(ctx context.Context, s *Store) toolscache.Store { return storeOf[T, PT](ctx, s) },
		follow: func(s *Store, informer toolscache.Store, prev, snap *Snapshot, keys []types.NamespacedName) (map[types.NamespacedName]client.Object, bool) {
			var keep func(PT) bool
			if k := s.keepOf(kind, snap); k != nil {
				keep = func(o PT) bool { return k(o) }
			}
			out, changed, ok := followSorted[T, PT](s, informer, *field(prev), keys, keep)
			if !ok {
				return nil, false
			}
			*field(snap) = out
			if len(changed) == 0 {
				return nil, true // followed, nothing changed (Changes.Followed: a key with no map)
			}
			objs := make(map[types.NamespacedName]client.Object, len(changed))
			for k, o := range changed {
				if o == nil {
					objs[k] = nil // not a typed nil in the interface
				} else {
					objs[k] = o
				}
			}
			return objs, true
		},
		sort: func(snap *Snapshot) { slices.SortFunc(*field(snap), byKey) },
		is:   func(obj any) bool { _, ok := obj.(PT); return ok },
	}
}

// followers are the kinds a Follower follows: every kind a snapshot holds as the informers'
// objects (listShared).
var followers = []kindFollower{
	followed(KindIngress, func(s *Snapshot) *[]*netv1.Ingress { return &s.Ingresses }),
	followed(KindService, func(s *Snapshot) *[]*corev1.Service { return &s.Services }),
	followed(KindEndpointSlice, func(s *Snapshot) *[]*discoveryv1.EndpointSlice { return &s.EndpointSlices }),
	followed(KindSecret, func(s *Snapshot) *[]*corev1.Secret { return &s.Secrets }),
	followed(KindConfigMap, func(s *Snapshot) *[]*corev1.ConfigMap { return &s.ConfigMaps }),
	followed(KindKongPlugin, func(s *Snapshot) *[]*kongv1.KongPlugin { return &s.KongPlugins }),
	followed(KindKongClusterPlugin, func(s *Snapshot) *[]*kongv1.KongClusterPlugin { return &s.KongClusterPlugins }),
	followed(KindKongConsumer, func(s *Snapshot) *[]*kongv1.KongConsumer { return &s.KongConsumers }),
	followed(KindKongConsumerGroup, func(s *Snapshot) *[]*kongv1beta1.KongConsumerGroup { return &s.KongConsumerGroups }),
	followed(KindKongUpstreamPolicy, func(s *Snapshot) *[]*kongv1beta1.KongUpstreamPolicy { return &s.KongUpstreamPolicies }),
	followed(KindKongIngress, func(s *Snapshot) *[]*kongv1.KongIngress { return &s.KongIngresses }),
	followed(KindTCPIngress, func(s *Snapshot) *[]*kongv1beta1.TCPIngress { return &s.TCPIngresses }),
	followed(KindUDPIngress, func(s *Snapshot) *[]*kongv1beta1.UDPIngress { return &s.UDPIngresses }),
	followed(KindKongVault, func(s *Snapshot) *[]*kongv1alpha1.KongVault { return &s.KongVaults }),
	followed(KindReferenceGrant, func(s *Snapshot) *[]*gatewayv1beta1.ReferenceGrant { return &s.ReferenceGrants }),
	followed(KindKongServiceFacade, func(s *Snapshot) *[]*incubatorv1alpha1.KongServiceFacade { return &s.KongServiceFacades }),
	followed(KindKongCustomEntity, func(s *Snapshot) *[]*kongv1alpha1.KongCustomEntity { return &s.KongCustomEntities }),
	followed(KindKongLicense, func(s *Snapshot) *[]*kongv1alpha1.KongLicense { return &s.KongLicenses }),
	followed(KindGatewayClass, func(s *Snapshot) *[]*gatewayv1.GatewayClass { return &s.GatewayClasses }),
	followed(KindGateway, func(s *Snapshot) *[]*gatewayv1.Gateway { return &s.Gateways }),
	followed(KindHTTPRoute, func(s *Snapshot) *[]*gatewayv1.HTTPRoute { return &s.HTTPRoutes }),
	followed(KindGRPCRoute, func(s *Snapshot) *[]*gatewayv1.GRPCRoute { return &s.GRPCRoutes }),
	followed(KindTCPRoute, func(s *Snapshot) *[]*gatewayv1.TCPRoute { return &s.TCPRoutes }),
	followed(KindTLSRoute, func(s *Snapshot) *[]*gatewayv1.TLSRoute { return &s.TLSRoutes }),
	followed(KindUDPRoute, func(s *Snapshot) *[]*gatewayv1.UDPRoute { return &s.UDPRoutes }),
	followed(KindBackendTLSPolicy, func(s *Snapshot) *[]*gatewayv1.BackendTLSPolicy { return &s.BackendTLSPolicies }),
	followed(KindListenerSet, func(s *Snapshot) *[]*gatewayv1.ListenerSet { return &s.ListenerSets }),
}

// followedKindOf is the followed kind of an informer's object; false for any other (an
// object of a kind read at an older version is not followed).
func followedKindOf(obj any) (Kind, bool) {
	for _, kf := range followers {
		if kf.is(obj) {
			return kf.kind, true
		}
	}
	return 0, false
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

// followSorted returns prev (sorted by byKey) with the objects of keys replaced by the
// informer's current ones (those keep wants, nil: all, in watched namespaces), still sorted,
// and those replacements by key (nil: gone). keys are distinct (a Follower's pending set). ok
// is false when the informer's store cannot be read.
func followSorted[T any, PT interface {
	*T
	client.Object
}](s *Store, informer toolscache.Store, prev []PT, keys []types.NamespacedName, keep func(PT) bool) (out []PT, changed map[types.NamespacedName]PT, ok bool) {
	if len(keys) == 0 {
		return prev, nil, true // most kinds, most rounds
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
