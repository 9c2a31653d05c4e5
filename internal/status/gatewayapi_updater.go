package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// GatewayAPIUpdater writes the status of our GatewayClasses, Gateways, routes (HTTPRoute,
// GRPCRoute, TCPRoute, TLSRoute, UDPRoute) and BackendTLSPolicies (status.ancestors)
// (gatewayapi.go computes it) from the attachment of the latest translation of the whole
// snapshot. It is a leader-only runnable like IngressUpdater: rounds ask it to run, it
// writes apart from the sync loop, and only objects whose status differs. A route's parents
// entries of other controllers are never changed: the route is patched with its
// resourceVersion, and a conflict reads the route again and recomputes.
//
// Classes and Gateways are written by one loop, routes by another: a change to a thousand
// routes is a thousand writes (ten seconds at the default --apiserver-qps), and the
// Gateways' attachedRoutes must not wait behind them. The classes-and-Gateways loop also
// runs on every Gateway API event (EventHandler) and computes attachment from the cache as
// it is then, not from the latest translation: attachedRoutes follows a change within a
// pass, without waiting for a round. Passes run one at a time, each from a newer cache, so
// a count once written is never replaced by an older one. The route loop drops a pass as soon
// as a newer translation is reported (the next pass starts from it; what was written is not
// written again, as it no longer differs).
type GatewayAPIUpdater struct {
	runner              // classes and Gateways
	routes       runner // routes
	statusWriter        // both loops'
	controller   string
	opts         IngressOptions // where the Gateways' addresses come from
	source       dataplane.SnapshotSource
	reader       client.Reader // the API server: the publish Service, and routes after a conflict
	now          func() time.Time
	// GatewayAlpha is KIC's gate: only with it do TCPRoutes, TLSRoutes and UDPRoutes attach
	// (translation's rule, translator.Options.GatewayAlpha) and are BackendTLSPolicies
	// applied and their status.ancestors written.
	GatewayAlpha bool
	// Listens are the listens of the gateways that said them (dataplane.RouterFlavors.Listens):
	// with a publish Service, a Gateway's listener that no Kong listen serves is not accepted
	// (gatewayapi_listens.go). nil, or none said yet: not checked.
	Listens func() []dataplane.KongListens
	// Router is the router flavor the gateways said (dataplane.RouterFlavors.Expressions),
	// which decides some of the class's status.supportedFeatures; nil: traditional.
	Router func() gatewayapi.Router
	// Payloads are the Secrets and ConfigMaps the cache keeps without their data and the sync
	// loop loaded (store.SecretPayloads): a listener's certificate in an Opaque Secret and a
	// BackendTLSPolicy's CA are judged by their loaded copies, as translation judges them, not
	// by the cache's empty ones. nil: the cache's objects as they are.
	Payloads loadedCopier
	// featuresPruned: a GatewayClass written with supportedFeatures came back without them.
	featuresPruned atomic.Bool

	mu     sync.Mutex
	latest *gatewayapi.Attachment // of the latest translation of the whole snapshot
	// programmed are the Gateways (namespace/name/generation) of the latest translation
	// whose configuration a gateway took.
	programmed map[string]bool
	pending    *gatewayapi.Attachment // translated since, not yet taken by a gateway
}

// NewGatewayAPIUpdater returns an updater for the classes of controllerName ("" for KIC's).
func NewGatewayAPIUpdater(controllerName string, opts IngressOptions, source dataplane.SnapshotSource, reader client.Reader, writer client.Client, log logr.Logger) *GatewayAPIUpdater {
	if controllerName == "" {
		controllerName = gatewayapi.DefaultControllerName
	}
	u := &GatewayAPIUpdater{controller: controllerName, opts: opts, source: source, reader: reader, statusWriter: statusWriter{client: writer}, now: time.Now, programmed: map[string]bool{}}
	u.runner = newRunner("Gateway API status of classes and Gateways", log, u.updateGateways)
	u.routes = newRunner("Gateway API status of routes", log, u.updateRoutes)
	return u
}

// Start runs both loops until ctx ends.
func (u *GatewayAPIUpdater) Start(ctx context.Context) error {
	routesDone := make(chan error, 1)
	go func() { routesDone <- u.routes.Start(ctx) }()
	err := u.runner.Start(ctx)
	return errors.Join(err, <-routesDone)
}

func gatewayKey(g *gatewayv1.Gateway) string {
	return fmt.Sprintf("%s/%s/%d", g.Namespace, g.Name, g.Generation)
}

// Report implements dataplane.Reporter: a translation of the whole snapshot is the outcome
// to write; a sync of it that a gateway took (whole, all but refused objects, or a fallback
// configuration) makes the Gateways of that translation Programmed. It never blocks the loop.
func (u *GatewayAPIUpdater) Report(_ context.Context, r dataplane.Round) {
	if r.SnapshotErr != nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	changed := false
	if r.GatewayAPI != nil {
		u.latest, u.pending, changed = r.GatewayAPI, r.GatewayAPI, true
	}
	if u.pending != nil && tookLatestConfiguration(r) {
		// A sync of the latest translation reached a gateway.
		programmed := map[string]bool{}
		for _, g := range u.pending.Gateways {
			programmed[gatewayKey(g.Gateway)] = true
			for _, ls := range g.ListenerSets {
				programmed[listenerSetKey(ls.ListenerSet)] = true
			}
		}
		u.programmed, u.pending, changed = programmed, nil, true
	}
	if changed {
		u.trigger.Request()
		u.routes.trigger.Request()
	}
}

// Update writes the status of every class, Gateway and route whose status differs from
// what the latest translation says (what both loops do, one after the other).
func (u *GatewayAPIUpdater) Update(ctx context.Context) error {
	return errors.Join(u.updateGateways(ctx), u.updateRoutes(ctx))
}

// latestAttachment is the attachment of the latest translation, and the Gateways a gateway
// took.
func (u *GatewayAPIUpdater) latestAttachment() (*gatewayapi.Attachment, map[string]bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.latest, u.programmed
}

// startPass is what a pass of either loop starts from: the latest attachment (nil before
// the first translation: nothing to write), the Gateways a gateway took, and the cache.
func (u *GatewayAPIUpdater) startPass(ctx context.Context) (*gatewayapi.Attachment, map[string]bool, *store.Snapshot, error) {
	a, programmed := u.latestAttachment()
	if a == nil {
		return nil, nil, nil, nil
	}
	read := store.NewKindSet(append(routeStoreKinds(), store.KindGatewayClass, store.KindGateway, store.KindListenerSet, store.KindReferenceGrant,
		store.KindNamespace, store.KindSecret, store.KindConfigMap)...)
	if u.GatewayAlpha {
		// BackendTLSPolicies (alpha) are the only reader of Services: not listed otherwise.
		read[store.KindBackendTLSPolicy], read[store.KindService] = struct{}{}, struct{}{}
	}
	snap, err := store.SnapshotOf(ctx, u.source, read)
	return a, programmed, snap, err
}

// updateGateways writes the status of every class and Gateway whose status differs. Which
// classes and Gateways are ours and how routes attach to their listeners are computed from
// the cache now (the translation's attachment may be older); whether a Gateway is
// Programmed, and the BackendTLSPolicies' ancestors (which need the routes' resolved
// references), come from the latest translation.
func (u *GatewayAPIUpdater) updateGateways(ctx context.Context) error {
	translated, programmed, snap, err := u.startPass(ctx)
	if translated == nil || err != nil {
		return err // nothing before the first translation: the cache may not have synced
	}
	a := u.attach(snap)
	now := u.now()
	var errs failures
	var router gatewayapi.Router
	if u.Router != nil {
		router = u.Router()
	}
	router.GatewayAlpha = u.GatewayAlpha
	var supported []gatewayv1.SupportedFeature
	if !u.featuresPruned.Load() {
		supported = gatewayapi.SupportedFeatures(router)
	}
	for _, c := range snap.GatewayClasses {
		if a.Classes[c.Name] == nil {
			continue
		}
		want := gatewayClassStatus(c.Status, c.Generation, now, supported)
		if !equality.Semantic.DeepEqual(want, c.Status) {
			updated := c.DeepCopy() // the snapshot's objects belong to the cache
			updated.Status = want
			if err := u.writeStatus(ctx, updated, client.MergeFrom(c)); err != nil {
				errs.add("GatewayClass", c, err)
			} else if len(supported) > 0 && len(updated.Status.SupportedFeatures) == 0 {
				// The API server dropped the field: its GatewayClass CRD is older than
				// supportedFeatures (Gateway API v1.2). Writing it again would never hold.
				u.featuresPruned.Store(true)
			}
		}
	}
	secrets := make(map[string]*corev1.Secret, len(snap.Secrets))
	for _, s := range withLoadedData(u.Payloads, snap.Secrets) {
		secrets[s.Namespace+"/"+s.Name] = s
	}
	secret := func(ns, name string) *corev1.Secret { return secrets[ns+"/"+name] }
	var configured []string
	for _, s := range []string{u.opts.PublishService, u.opts.PublishServiceUDP} {
		if s != "" {
			configured = append(configured, s)
		}
	}
	var listens []dataplane.KongListens
	if u.Listens != nil {
		listens = u.Listens()
	}
	services := serviceReader{reader: u.reader}
	for _, g := range snap.Gateways {
		gw := a.Gateway(g.Namespace, g.Name)
		if gw == nil {
			continue
		}
		certRefs := func(l *gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string) {
			return gatewayapi.ResolveCertificateRefs(gw.Gateway, store.KindGateway.GroupVersionKind(), l, secret, snap.ReferenceGrants)
		}
		var ports kongPorts
		invalid := ""
		published := u.opts // the proxies whose addresses the Gateway gets
		names, err := publishServices(g, configured)
		if err != nil {
			invalid = err.Error()
		} else if !slices.Equal(names, configured) {
			published = u.opts.named(names)
		}
		var addrs []string
		if published.hasTCP() || published.hasUDP() {
			if addrs, err = services.addresses(ctx, published); err != nil {
				// Rather than write no addresses for a read that failed, leave the Gateway as it is.
				errs = append(errs, err.Error())
				continue
			}
		}
		if invalid == "" && len(names) > 0 && len(listens) > 0 {
			svcs, err := services.get(ctx, names)
			if err != nil {
				errs = append(errs, err.Error()) // rather than judge listeners without it, leave the Gateway as it is
				continue
			}
			ports = commonPorts(svcs, listens)
		}
		want := gatewayStatus(g.Status, gw, certRefs, addrs, ports, invalid, programmed[gatewayKey(gw.Gateway)], now)
		attached := u.updateListenerSets(ctx, gw, meta.IsStatusConditionTrue(want.Conditions, string(gatewayv1.GatewayConditionAccepted)),
			secret, snap, ports, programmed, now, &errs)
		want = withAttachedListenerSets(want, g.Status, gw, attached)
		if !equality.Semantic.DeepEqual(want, g.Status) {
			updated := g.DeepCopy()
			updated.Status = want
			if err := u.writeStatus(ctx, updated, client.MergeFrom(g)); err != nil {
				errs.add("Gateway", g, err)
			}
		}
	}
	u.releaseListenerSets(ctx, a, snap, now, &errs)
	u.updateBackendTLSPolicies(ctx, translated, snap, now, &errs)
	return errs.err()
}

// releaseListenerSets writes the status of every ListenerSet whose parent Gateway is no
// longer ours (another controller's class, or deleted) and whose status konductor wrote
// (releasedListenerSetStatus): a status left as it was would say Accepted and Programmed,
// with attachedRoutes, for listeners konductor no longer serves.
func (u *GatewayAPIUpdater) releaseListenerSets(ctx context.Context, a *gatewayapi.Attachment, snap *store.Snapshot, now time.Time, errs *failures) {
	gateways := make(map[string]bool, len(snap.Gateways))
	for _, g := range snap.Gateways {
		gateways[g.Namespace+"/"+g.Name] = true
	}
	for _, ls := range snap.ListenerSets {
		if a.ListenerSet(ls.Namespace, ls.Name) != nil {
			continue // ours: updateListenerSets writes it
		}
		ns, name, ok := gatewayapi.ParentGateway(ls)
		if !ok {
			continue
		}
		want, owned := releasedListenerSetStatus(ls, ns, name, gateways[ns+"/"+name], now)
		if !owned || equality.Semantic.DeepEqual(want, ls.Status) {
			continue
		}
		updated := ls.DeepCopy()
		updated.Status = want
		// With the resourceVersion read: the status was judged ours as the cache showed it;
		// if its Gateway's new controller wrote it since, the write conflicts and the next
		// pass (which that write wakes) leaves theirs alone.
		if err := u.writeStatus(ctx, updated, client.MergeFromWithOptions(ls, client.MergeFromWithOptimisticLock{})); err != nil {
			errs.add("ListenerSet", ls, err)
		}
	}
}

// updateListenerSets writes the status of every ListenerSet naming Gateway gw whose status
// differs (listenerSetStatus; gatewayAccepted is the Gateway's Accepted condition), and returns
// how many are accepted: the Gateway's attachedListenerSets.
func (u *GatewayAPIUpdater) updateListenerSets(ctx context.Context, gw *gatewayapi.Gateway, gatewayAccepted bool, secret func(ns, name string) *corev1.Secret,
	snap *store.Snapshot, ports kongPorts, programmed map[string]bool, now time.Time, errs *failures) int32 {
	var attached int32
	for _, ls := range gw.ListenerSets {
		obj := ls.ListenerSet
		certRefs := func(l *gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string) {
			return gatewayapi.ResolveCertificateRefs(obj, store.KindListenerSet.GroupVersionKind(), l, secret, snap.ReferenceGrants)
		}
		want, accepted := listenerSetStatus(obj.Status, ls, gatewayAccepted, certRefs, ports, programmed[listenerSetKey(obj)], now)
		if accepted {
			attached++
		}
		if !equality.Semantic.DeepEqual(want, obj.Status) {
			updated := obj.DeepCopy()
			updated.Status = want
			if err := u.writeStatus(ctx, updated, client.MergeFrom(obj)); err != nil {
				errs.add("ListenerSet", obj, err)
			}
		}
	}
	return attached
}

// updateRoutes writes the parents entries of every route (all kinds) whose entries differ. It stops
// early when a newer translation is reported: its own trigger is pending then, and the next
// pass writes from the newer one.
func (u *GatewayAPIUpdater) updateRoutes(ctx context.Context) error {
	a, _, snap, err := u.startPass(ctx)
	if a == nil || err != nil {
		return err
	}
	now := u.now()
	var (
		mu   sync.Mutex
		errs failures
		wg   sync.WaitGroup
	)
	todo := make(chan routeObject)
	for range routeWriters {
		wg.Go(func() {
			for r := range todo {
				if err := u.updateRoute(ctx, r, a.Route(r.kind, r.obj), now); err != nil {
					mu.Lock()
					errs.add(r.kind, r.obj, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, r := range snapshotRoutes(snap) {
		if latest, _ := u.latestAttachment(); latest != a || ctx.Err() != nil {
			break
		}
		todo <- r
	}
	close(todo)
	wg.Wait()
	return errs.err()
}

// routeWriters is how many route status writes are in flight at once. One at a time, a
// thousand writes took 97 s on a loaded API server (each waits for its answer); the
// client's --apiserver-qps still bounds the rate.
const routeWriters = 8

// failures are the writes of one pass that failed, one line each.
type failures []string

func (f *failures) add(kind string, obj client.Object, err error) {
	*f = append(*f, fmt.Sprintf("%s %s: %v", kind, client.ObjectKeyFromObject(obj), err))
}

func (f failures) err() error {
	if len(f) == 0 {
		return nil
	}
	sort.Strings(f)
	return errors.New(strings.Join(f, "; "))
}

// updateRoute writes the route's parents entries of our controller when they differ. The
// patch carries the resourceVersion: if another controller wrote its own entry meanwhile,
// the write fails with a conflict, and the route is read again and its entries recomputed,
// so that theirs survive.
func (u *GatewayAPIUpdater) updateRoute(ctx context.Context, r routeObject, ra *gatewayapi.RouteAttachment, now time.Time) error {
	return u.writeStatusRetrying(ctx, u.reader, r.obj, r.empty, func(current client.Object) client.Object {
		have := *r.parents(current)
		want := routeParents(have, ra, u.controller, now)
		if equality.Semantic.DeepEqual(want, have) || len(want) == 0 && len(have) == 0 {
			return nil
		}
		updated := current.DeepCopyObject().(client.Object)
		*r.parents(updated) = want
		return updated
	})
}

var _ dataplane.Reporter = (*GatewayAPIUpdater)(nil)

// loadedCopier gives the sync loop's loaded copy of an object the cache holds without its
// data, nil when it has none for that version (store.SecretPayloads.LoadedCopy).
type loadedCopier interface {
	LoadedCopy(client.Object) client.Object
}

// withLoadedData is objs with each object the cache holds without its data replaced by its
// loaded copy from payloads, where there is one; objs itself when nothing is replaced.
func withLoadedData[T client.Object](payloads loadedCopier, objs []T) []T {
	if payloads == nil {
		return objs
	}
	out, cloned := objs, false
	for i, o := range objs {
		if !store.PayloadNotCached(o) {
			continue
		}
		if l, ok := payloads.LoadedCopy(o).(T); ok {
			if !cloned { // the snapshot's slice is shared: never written
				out, cloned = slices.Clone(objs), true
			}
			out[i] = l
		}
	}
	return out
}
