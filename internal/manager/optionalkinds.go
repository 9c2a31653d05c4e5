package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/store"
)

// optionalKinds keeps the set of optional (CRD-backed) kinds the store reads in step with the
// CRDs the cluster serves, while the controller runs:
//
//   - A CRD installed after start: its kind's informer is started in the running cache
//     (GetInformer starts it at once), given the barrier's event handlers, and the kind joins
//     the store's set only once that informer has synced, so no snapshot reads the kind as
//     "no objects" while it loads. A round is then requested.
//   - A CRD removed: the kind leaves the set only once API discovery confirms that none of
//     its versions (store.Kind.Versions) serves the resource any more. A watch that fails for any other reason (the API
//     server away, a 5xx, RBAC) changes nothing: the cache keeps the objects it holds. Then a
//     round is requested (the kind's objects leave the translation) and its informer is stopped.
//   - A kind read at one version whose CRD now serves a preferred one (Gateway API CRDs
//     upgraded from v1.4: TCPRoute at v1 besides v1alpha2), or no longer serves the one read:
//     the preferred version's informer is started and synced, the kind moves to it in one
//     step (no snapshot without the kind), and the other informer is stopped.
//
// What asks: events of the CustomResourceDefinition informer (metadata only) for the CRDs of
// the kinds konductor reads, and a list or watch of a kind failing with NotFound. Every ask is
// answered by discovery, from one worker, with per-kind retries on errors.
type optionalKinds struct {
	cache    cache.Informers
	barrier  *dataplane.InformerBarrier
	live     *store.LiveKinds
	served   func(store.Kind) (string, error) // the version to read k at; "": not served
	changed  func()                           // requests a round
	health   *apiHealth
	log      logr.Logger
	queue    workqueue.TypedRateLimitingInterface[store.Kind]
	byCRD    map[string]store.Kind // "<resource>.<group>"
	byType   map[string]store.Kind // kind name
	informer map[store.Kind]cache.Informer
	// informerAt is the version of each informer of informer (those started here).
	informerAt map[store.Kind]string
	// present: the CRDs of optional kinds that exist and are not being deleted, from the CRD
	// informer's events. A CRD present whose kind discovery does not serve yet (not
	// established, discovery a moment behind) is asked about again, with backoff.
	mu      sync.Mutex
	present map[string]bool
	// syncTimeout bounds how long the worker waits for a new informer before it retries.
	syncTimeout time.Duration
	// removeGrace is how long a dropped kind's informer runs on after the kind left the set.
	removeGrace time.Duration
}

func newOptionalKinds(c cache.Informers, barrier *dataplane.InformerBarrier, live *store.LiveKinds,
	served func(store.Kind) (string, error), changed func(), health *apiHealth, log logr.Logger) *optionalKinds {
	o := &optionalKinds{
		cache: c, barrier: barrier, live: live, served: served, changed: changed, health: health, log: log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[store.Kind](500*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[store.Kind]{Name: "optional-kinds"}),
		byCRD: map[string]store.Kind{}, byType: map[string]store.Kind{}, informer: map[store.Kind]cache.Informer{}, informerAt: map[store.Kind]string{}, present: map[string]bool{},
		syncTimeout: 30 * time.Second, removeGrace: 2 * time.Second,
	}
	for _, k := range store.AllKinds() {
		if k.Optional() {
			o.byCRD[crdName(k)] = k
			o.byType[k.String()] = k
		}
	}
	return o
}

// ignore stops o following the CRDs of kinds: a kind switched off (--enable-controller-*) is
// not read when its CRD is installed later either.
func (o *optionalKinds) ignore(kinds store.KindSet) {
	for k := range kinds {
		delete(o.byCRD, crdName(k))
		delete(o.byType, k.String())
	}
}

// crdName is the name of the CRD that defines k: "<plural>.<group>".
func crdName(k store.Kind) string { return k.Resource() + "." + k.GroupVersionKind().Group }

// crdGVK is the CustomResourceDefinition kind, watched as metadata only.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// mayListCRDs reports whether the controller may list CRDs: without that permission, a
// registered CRD informer would hold the manager's start forever; the controller then learns
// of CRDs only at start, and says so. Asked before the manager is constructed (startStep).
func mayListCRDs(ctx context.Context, restCfg *rest.Config, log logr.Logger) (bool, error) {
	mc, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return false, err
	}
	gvr := crdGVK.GroupVersion().WithResource("customresourcedefinitions")
	if _, err := mc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if apierrors.IsForbidden(err) {
			log.Info("cannot list CustomResourceDefinitions (RBAC); a CRD installed after start is read only after a restart. Grant get, list and watch on customresourcedefinitions (config/rbac)")
			return false, nil
		}
		return false, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	return true, nil
}

// watchCRDs registers the CRD metadata informer in c (before the manager starts) with a
// handler that asks about the CRDs of optional kinds, when allowed (mayListCRDs).
func (o *optionalKinds) watchCRDs(ctx context.Context, c cache.Informers, allowed bool) error {
	if !allowed {
		return nil
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(crdGVK)
	inf, err := c.GetInformer(ctx, crd, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("registering the CustomResourceDefinition informer: %w", err)
	}
	ask := func(obj any, initial, deleted bool) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj, deleted = tomb.Obj, true
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		k, ours := o.byCRD[m.GetName()]
		if !ours {
			return // not a kind konductor reads
		}
		o.mu.Lock()
		o.present[m.GetName()] = !deleted && m.GetDeletionTimestamp() == nil
		o.mu.Unlock()
		if initial && o.live.Has(k) {
			return // read since start
		}
		o.queue.Add(k)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { ask(obj, initial, false) },
		UpdateFunc: func(_, obj any) { ask(obj, false, false) },
		DeleteFunc: func(obj any) { ask(obj, false, true) },
	})
	return err
}

// watchFailed is told of every failed list or watch (watchErrorLogger): a NotFound of an
// optional kind asks discovery whether its CRD is gone.
func (o *optionalKinds) watchFailed(typeDescription string, err error) {
	if !apierrors.IsNotFound(err) {
		return
	}
	name := typeDescription[strings.LastIndex(typeDescription, ".")+1:] // "*v1.KongConsumer"
	if k, ok := o.byType[name]; ok {
		o.queue.Add(k)
	}
}

// NeedLeaderElection: every replica keeps its cache in step with the CRDs (warm standby).
func (o *optionalKinds) NeedLeaderElection() bool { return false }

// Start runs the worker until ctx ends.
func (o *optionalKinds) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		o.queue.ShutDown()
	}()
	for {
		k, quit := o.queue.Get()
		if quit {
			return nil
		}
		err := o.reconcile(ctx, k)
		switch {
		case err == nil || ctx.Err() != nil:
			o.queue.Forget(k)
		case errors.Is(err, errPreferredNotServedYet):
			// Asked again a while (discovery may be a moment behind a CRD just changed), then
			// left at the version read until the CRD changes again.
			if o.queue.NumRequeues(k) < notServedRetries {
				o.queue.AddRateLimited(k)
			} else {
				o.queue.Forget(k)
			}
		case errors.Is(err, errNotServedYet):
			if o.queue.NumRequeues(k) < notServedRetries {
				o.queue.AddRateLimited(k)
			} else {
				o.log.Info("CRD installed but its kind is not served at a version konductor reads; skipped until the CRD changes", "kind", k.String(),
					"crd", crdName(k), "versions", strings.Join(k.Versions(), ","))
				o.queue.Forget(k)
			}
		default:
			o.log.Error(err, "checking whether a CRD is served; trying again", "kind", k.String())
			o.queue.AddRateLimited(k)
		}
		o.queue.Done(k)
	}
}

// reconcile brings kind k's informer and membership in the store's set (and the version it
// is read at) in line with what discovery says the cluster serves.
func (o *optionalKinds) reconcile(ctx context.Context, k store.Kind) error {
	version, err := o.served(k)
	if err != nil {
		return err // never drop, never add on a guess
	}
	served := version != ""
	switch {
	case served && (!o.live.Has(k) || o.live.Version(k) != version):
		if err := o.add(ctx, k, version); err != nil {
			return err
		}
		return o.preferredServed(k, version)
	case served && o.informer[k] != nil && o.informerAt[k] != version:
		// A move to another version that failed, and the CRD is back to the version read:
		// that other version's informer is not needed.
		return o.stopInformer(ctx, k, o.informer[k], o.informerAt[k])
	case served:
		return o.preferredServed(k, version)
	case !served && (o.live.Has(k) || o.informer[k] != nil):
		return o.drop(ctx, k)
	case !served && o.crdPresent(k):
		return errNotServedYet
	}
	return nil
}

// preferredServed is errPreferredNotServedYet when k is read at an older version while its
// CRD exists: a CRD upgraded in place (v1 served besides v1alpha2) shows in discovery a
// moment after the CRD's event that asked, so the ask is repeated a while; nil otherwise.
func (o *optionalKinds) preferredServed(k store.Kind, version string) error {
	if version != k.GroupVersionKind().Version && o.crdPresent(k) {
		return errPreferredNotServedYet
	}
	return nil
}

// errPreferredNotServedYet: k is read at an older version; its own may be served soon.
var errPreferredNotServedYet = errors.New("kind read at an older version, its own not served (yet)")

// errNotServedYet: the kind's CRD exists but discovery does not serve the kind (yet).
var errNotServedYet = errors.New("CRD present, kind not served yet")

// notServedRetries bounds the retries of a CRD that exists but whose kind is not served: with
// the queue's backoff (500 ms doubling to 30 s) about two minutes. A CRD that never serves the
// version konductor reads (an old Gateway API channel) is then left alone until it changes.
const notServedRetries = 10

func (o *optionalKinds) crdPresent(k store.Kind) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.present[crdName(k)]
}

// add starts k's informer at version and puts k in the set, read at that version, once the
// informer has synced. A kind read at another version moves in that one step; the other
// version's informer is then stopped.
func (o *optionalKinds) add(ctx context.Context, k store.Kind, version string) error {
	prev, wasRead := o.live.Version(k), o.live.Has(k)
	if inf := o.informer[k]; inf != nil && o.informerAt[k] != version {
		if wasRead && o.informerAt[k] == prev {
			// The informer read now: set aside, stopped below once the kind has moved.
			delete(o.informer, k)
			delete(o.informerAt, k)
		} else if err := o.stopInformer(ctx, k, inf, o.informerAt[k]); err != nil {
			return err // one started for a version the CRD served a moment ago, never read
		}
	}
	inf := o.informer[k]
	if inf == nil {
		var err error
		obj := store.Versions{k: version}.NewObject(k)
		if inf, err = o.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("starting the %s informer: %w", k, err)
		}
		if err := o.barrier.AddLateInformer(inf); err != nil {
			return err
		}
		o.informer[k], o.informerAt[k] = inf, version
	}
	wctx, cancel := context.WithTimeout(ctx, o.syncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the %s informer has not synced within %s", k, o.syncTimeout)
	}
	o.live.AddAt(k, version)
	o.changed()
	if !wasRead {
		o.log.Info("CRD installed; kind now read", "kind", k.String(), "crd", crdName(k), "version", version)
		return nil
	}
	o.log.Info("CRD serves another version; kind now read at it", "kind", k.String(), "crd", crdName(k), "version", version, "was", prev)
	// The informer of the version read before (registered at start, or here): stopped once
	// snapshots that started before the move are long done, as drop does.
	old, err := o.cache.GetInformer(ctx, store.Versions{k: prev}.NewObject(k), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("finding the %s informer at %s: %w", k, prev, err)
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(o.removeGrace):
	}
	o.barrier.RemoveInformer(old)
	if err := o.cache.RemoveInformer(ctx, store.Versions{k: prev}.NewObject(k)); err != nil {
		return fmt.Errorf("stopping the %s informer at %s: %w", k, prev, err)
	}
	return nil
}

func (o *optionalKinds) drop(ctx context.Context, k store.Kind) error {
	wasRead := o.live.Has(k)
	version := o.live.Version(k)
	o.live.Remove(k) // the next snapshot leaves the kind out
	o.changed()
	inf := o.informer[k]
	if inf != nil {
		version = o.informerAt[k]
	} else {
		var err error
		// Registered at start: GetInformer returns that one (the cache has it).
		if inf, err = o.cache.GetInformer(ctx, store.Versions{k: version}.NewObject(k), cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("finding the %s informer: %w", k, err)
		}
	}
	// A snapshot that started before the kind left the set may still list it: stop the
	// informer only once such a snapshot is long done, so that it does not fail.
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(o.removeGrace):
	}
	if err := o.stopInformer(ctx, k, inf, version); err != nil {
		return err
	}
	o.health.forget(k.String())
	if wasRead {
		o.log.Info("CRD removed (API discovery confirms); kind dropped, its objects leave the configuration", "kind", k.String(), "crd", crdName(k))
	}
	return nil
}

// stopInformer stops inf, k's informer at version, and forgets it.
func (o *optionalKinds) stopInformer(ctx context.Context, k store.Kind, inf cache.Informer, version string) error {
	o.barrier.RemoveInformer(inf)
	if err := o.cache.RemoveInformer(ctx, store.Versions{k: version}.NewObject(k)); err != nil {
		return fmt.Errorf("stopping the %s informer: %w", k, err)
	}
	delete(o.informer, k)
	delete(o.informerAt, k)
	return nil
}

// servedByDiscovery asks API discovery at which version the cluster serves k: its own when
// served, else the first older one the store reads (store.Kind.Versions); "" when none.
// NotFound of a group version is "not served there"; any other error is an error.
func servedByDiscovery(restCfg *rest.Config) (func(store.Kind) (string, error), error) {
	dc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return func(k store.Kind) (string, error) {
		var failed error
		version := firstServed(k, func(gv string) map[string]bool {
			if failed != nil {
				return nil
			}
			have, err := servedResources(dc, gv)
			failed = err
			return have
		})
		if failed != nil {
			return "", failed
		}
		return version, nil
	}, nil
}

// servedResources are the resources the cluster serves in group version gv: none when it does
// not serve gv at all (NotFound); any other failure is an error, never "none".
func servedResources(dc discovery.DiscoveryInterface, gv string) (map[string]bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", gv, err)
	}
	have := map[string]bool{}
	for _, r := range list.APIResources {
		have[r.Name] = true
	}
	return have, nil
}
