package store

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

// olderVersion is a version a kind is read at when the cluster does not serve the kind's
// own (GroupVersionKind): its objects are converted to the kind's type on read (convert.go).
type olderVersion struct {
	gvk    schema.GroupVersionKind
	newObj func() client.Object
	// list lists the kind's objects of this version in watched namespaces, unconverted.
	list func(ctx context.Context, s *Store, k Kind) ([]client.Object, error)
}

// olderVersions are the versions KIC 3.5 reads these kinds at, which is all that clusters
// with Gateway API CRDs up to v1.4 serve of them (BackendTLSPolicy: up to v1.3).
var olderVersions = map[Kind][]olderVersion{
	KindTCPRoute:         {older[gatewayv1alpha2.TCPRouteList, gatewayv1alpha2.TCPRoute](gatewayv1alpha2.SchemeGroupVersion.WithKind("TCPRoute"))},
	KindUDPRoute:         {older[gatewayv1alpha2.UDPRouteList, gatewayv1alpha2.UDPRoute](gatewayv1alpha2.SchemeGroupVersion.WithKind("UDPRoute"))},
	KindTLSRoute:         {older[gatewayv1alpha2.TLSRouteList, gatewayv1alpha2.TLSRoute](gatewayv1alpha2.SchemeGroupVersion.WithKind("TLSRoute"))},
	KindBackendTLSPolicy: {older[gatewayv1alpha3.BackendTLSPolicyList, gatewayv1alpha3.BackendTLSPolicy](gatewayv1alpha3.SchemeGroupVersion.WithKind("BackendTLSPolicy"))},
}

func older[L any, T any, PL interface {
	client.ObjectList
	*L
}, PT interface {
	client.Object
	*T
}](gvk schema.GroupVersionKind) olderVersion {
	return olderVersion{
		gvk:    gvk,
		newObj: func() client.Object { return PT(new(T)) },
		list: func(ctx context.Context, s *Store, k Kind) ([]client.Object, error) {
			objs, err := listShared[L, T, PL, PT](ctx, s, k, nil)
			out := make([]client.Object, len(objs))
			for i, o := range objs {
				out[i] = o
			}
			return out, err
		},
	}
}

// Versions are the API versions kinds are read at where that is not their own
// (GroupVersionKind): the cluster's CRD serves the kind only at an older version (Kind.Versions).
// A kind not in the map is read at its own version; nil reads every kind at its own.
type Versions map[Kind]string

// Versions lists the versions k may be read at, preferred first: its own, then the older
// ones (KIC 3.5's) whose objects are converted to k's type.
func (k Kind) Versions() []string {
	out := []string{k.GroupVersionKind().Version}
	for _, o := range olderVersions[k] {
		out = append(out, o.gvk.Version)
	}
	return out
}

// GroupVersionKinds lists the group version kinds k may be read at, its own first.
func (k Kind) GroupVersionKinds() []schema.GroupVersionKind {
	out := []schema.GroupVersionKind{k.GroupVersionKind()}
	for _, o := range olderVersions[k] {
		out = append(out, o.gvk)
	}
	return out
}

// older is the older version k is read at in v; nil when k is read at its own.
func (v Versions) older(k Kind) *olderVersion {
	version := v[k]
	if version == "" || version == k.GroupVersionKind().Version {
		return nil
	}
	for i := range olderVersions[k] {
		if o := &olderVersions[k][i]; o.gvk.Version == version {
			return o
		}
	}
	return nil // not a version of k (discovery only picks Kind.Versions): read at its own
}

// GroupVersionKind is the group, version and kind k is read at.
func (v Versions) GroupVersionKind(k Kind) schema.GroupVersionKind {
	if o := v.older(k); o != nil {
		return o.gvk
	}
	return k.GroupVersionKind()
}

// NewObject returns an empty object of k at the version it is read at, for the informer's
// registration (and removal).
func (v Versions) NewObject(k Kind) client.Object {
	if o := v.older(k); o != nil {
		return o.newObj()
	}
	return k.NewObject()
}

// Clone returns a copy of v.
func (v Versions) Clone() Versions {
	out := make(Versions, len(v))
	for k, version := range v {
		out[k] = version
	}
	return out
}

// listConverted lists kind k at the version s reads it at, converting the objects of an
// older version to PT. The conversions are remembered per cached object (conversions), so a
// snapshot hands out the same converted object until the cache's changes: the incremental
// translator tells a changed object by its pointer (a new object per round would be every
// route translated again every round).
func listConverted[L any, T any, PL interface {
	client.ObjectList
	*L
}, PT interface {
	client.Object
	*T
}](ctx context.Context, s *Store, k Kind) ([]PT, error) {
	if !s.opts.Kinds.Has(k) {
		return nil, nil
	}
	o := s.opts.Versions.older(k)
	if o == nil {
		return listShared[L, T, PL, PT](ctx, s, k, nil)
	}
	objs, err := o.list(ctx, s, k)
	if err != nil {
		return nil, err
	}
	converted := s.conv.convert(k, objs)
	out := make([]PT, 0, len(converted))
	for _, c := range converted {
		if obj, ok := c.(PT); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// conversions remembers, per kind, the converted object of each object of the latest list
// of that kind, keyed by the cached object (the informer replaces an object on change,
// never changes it). Objects the latest list no longer holds are forgotten.
type conversions struct {
	mu     sync.Mutex
	byKind map[Kind]map[client.Object]client.Object
}

func (c *conversions) convert(k Kind, objs []client.Object) []client.Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKind == nil {
		c.byKind = map[Kind]map[client.Object]client.Object{}
	}
	prev := c.byKind[k]
	next := make(map[client.Object]client.Object, len(objs))
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		conv, ok := prev[o]
		if !ok {
			if conv, ok = ToInternal(o); !ok {
				continue // not a type of an older version: cannot happen with olderVersions' lists
			}
		}
		next[o] = conv
		out = append(out, conv)
	}
	c.byKind[k] = next
	return out
}

// AsRead returns obj in the version it was read at when the store converted it from an
// older version (its TypeMeta names that version): status is written back in the version
// the cluster serves. ok is false for any other object, which is written as it is.
func AsRead(obj client.Object) (client.Object, bool) {
	gv := obj.GetObjectKind().GroupVersionKind().GroupVersion()
	if gv.Version == "" {
		return nil, false
	}
	return fromInternal(obj, gv)
}

// GetAsRead reads the object of like's name into obj (an empty object of like's type) at
// the version like was read at (AsRead), converting it as the store does: a status write
// that conflicted reads the object again in the version the cluster serves.
func GetAsRead(ctx context.Context, r client.Reader, like, obj client.Object) error {
	key := client.ObjectKeyFromObject(like)
	if _, older := AsRead(like); !older {
		return r.Get(ctx, key, obj)
	}
	fresh, err := Scheme().New(like.GetObjectKind().GroupVersionKind())
	if err != nil {
		return err
	}
	read := fresh.(client.Object)
	if err := r.Get(ctx, key, read); err != nil {
		return err
	}
	conv, ok := ToInternal(read)
	if !ok || reflect.TypeOf(conv) != reflect.TypeOf(obj) {
		return fmt.Errorf("reading %T at %s: no conversion to %T", read, like.GetObjectKind().GroupVersionKind().GroupVersion(), obj)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(conv).Elem())
	return nil
}

// PatchAsRead is patch for obj written in the version it was read at (AsRead): its data is
// patch's for obj itself (the v1 object), not for the converted one, so that the patch holds
// exactly what patch would hold (the status changes, the optimistic lock's resourceVersion)
// whatever the versions' JSON differ in (an alpha route's rules are not omitempty).
func PatchAsRead(patch client.Patch, obj client.Object) client.Patch {
	return patchAsRead{Patch: patch, obj: obj}
}

type patchAsRead struct {
	client.Patch
	obj client.Object
}

func (p patchAsRead) Data(client.Object) ([]byte, error) { return p.Patch.Data(p.obj) }
