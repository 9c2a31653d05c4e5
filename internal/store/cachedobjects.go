package store

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// informerSource is the part of controller-runtime's cache that hands out its informers.
type informerSource interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// listShared returns the objects of a kind in watched namespaces (cluster-scoped ones too) that
// keep (nil: all) accepts: the informer cache's own objects when the reader is an informer cache
// (cachedObjects), otherwise a List of L, without deep copy either.
func listShared[L any, T any, PL interface {
	client.ObjectList
	*L
}, PT interface {
	client.Object
	*T
}](ctx context.Context, s *Store, kind Kind, keep func(client.Object) bool) ([]PT, error) {
	wanted := func(obj PT) bool {
		return (obj.GetNamespace() == "" || s.inNamespace(obj.GetNamespace())) && (keep == nil || keep(obj))
	}
	if objs, ok := cachedObjects[T, PT](ctx, s, wanted); ok {
		return objs, nil
	}
	list := PL(new(L))
	if err := s.list(ctx, kind, list); err != nil {
		return nil, err
	}
	var out []PT
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(PT)
		if !ok {
			return fmt.Errorf("%s list holds %T", kind, o)
		}
		if wanted(obj) {
			out = append(out, obj)
		}
		return nil
	})
	return out, err
}

// cachedObjects returns the informer cache's own objects of a kind that wanted accepts,
// without copying them. A typed List, even without deep copy, copies every cached object's
// struct into the list's Items (meta.SetList): at 3,000 Ingresses with their Services and
// EndpointSlices that was a third of the live heap, held twice while the incremental translator
// keeps the previous snapshot, and allocated again on every round. The objects are shared with
// the cache, so they are read-only (Snapshot's contract); the informer replaces an object on
// update rather than changing it, so an older snapshot keeps seeing the version it was made of.
// ok is false when reader is not a synced single-cluster informer cache (unit tests' fake
// clients, a namespace-restricted cache, database mode's direct reader): the caller then lists.
func cachedObjects[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, s *Store, wanted func(PT) bool) (out []PT, ok bool) {
	st := storeOf[T, PT](ctx, s)
	if st == nil {
		return nil, false
	}
	items := st.List()
	out = make([]PT, 0, len(items))
	for _, item := range items {
		obj, isT := item.(PT)
		if !isT {
			return nil, false
		}
		if wanted(obj) {
			out = append(out, obj)
		}
	}
	return out, true
}
