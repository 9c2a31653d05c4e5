package integration

import (
	"context"
	"sync"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/store"
)

// legacyStore reproduces the design konductor replaced (KIC 2.x, origin-issue.txt): a second
// store, fed by event handlers that start with leadership (KIC's per-kind reconcilers were
// leader-only), read by the sync loop at once without waiting for anything. It exists only to
// show that the rolling-restart tests can see the bug: with it, they must see deletions.
type legacyStore struct {
	cache cache.Cache
	opts  store.Options

	start sync.Once
	mu    sync.Mutex
	objs  map[string]client.Object // "Kind/ns/name" -> object
}

func newLegacyStore(c cache.Cache, opts store.Options) dataplane.SnapshotSource {
	return &legacyStore{cache: c, opts: opts, objs: map[string]client.Object{}}
}

// Snapshot returns whatever has been copied so far. The first call also starts the feeding
// "reconcilers", as KIC 2.x started its reconcilers and its sync loop together on leadership:
// that first read comes before they have copied anything, exactly the race of the report.
func (l *legacyStore) Snapshot(ctx context.Context) (*store.Snapshot, error) {
	snap := l.read()
	var startErr error
	l.start.Do(func() { startErr = l.feed(ctx) })
	if startErr != nil {
		return nil, startErr
	}
	return snap, nil
}

func (l *legacyStore) read() *store.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap := &store.Snapshot{IngressClass: l.opts.IngressClass}
	if snap.IngressClass == "" {
		snap.IngressClass = store.DefaultIngressClass
	}
	for _, o := range l.objs {
		switch o := o.(type) {
		case *netv1.IngressClass:
			if o.Name == snap.IngressClass {
				snap.IngressClassIsDefault = store.IsDefaultClass(o)
			}
		}
	}
	for _, o := range l.objs {
		switch o := o.(type) {
		case *netv1.Ingress:
			if store.IngressMatchesClass(o, snap.IngressClass, snap.IngressClassIsDefault) {
				snap.Ingresses = append(snap.Ingresses, o)
			}
		case *corev1.Service:
			snap.Services = append(snap.Services, o)
		case *discoveryv1.EndpointSlice:
			snap.EndpointSlices = append(snap.EndpointSlices, o)
		case *corev1.Secret:
			snap.Secrets = append(snap.Secrets, o)
		case *kongv1.KongPlugin:
			snap.KongPlugins = append(snap.KongPlugins, o)
		}
	}
	return snap
}

func (l *legacyStore) feed(ctx context.Context) error {
	for _, k := range store.ReadKinds(l.opts.Kinds).Sorted() {
		inf, err := l.cache.GetInformer(ctx, k.NewObject(), cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		kind := k.String()
		put := func(obj any) {
			if o, ok := obj.(client.Object); ok {
				l.mu.Lock()
				l.objs[kind+"/"+o.GetNamespace()+"/"+o.GetName()] = o
				l.mu.Unlock()
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    put,
			UpdateFunc: func(_, o any) { put(o) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				if o, ok := obj.(client.Object); ok {
					l.mu.Lock()
					delete(l.objs, kind+"/"+o.GetNamespace()+"/"+o.GetName())
					l.mu.Unlock()
				}
			},
		}); err != nil {
			return err
		}
	}
	return nil
}
