package status

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
)

// GatewayAPIUpdater writes the status of our GatewayClasses, Gateways and routes (HTTPRoute,
// GRPCRoute, TCPRoute, TLSRoute, UDPRoute)
// (gatewayapi.go computes it) from the attachment of the latest translation of the whole
// snapshot. It is a leader-only runnable like IngressUpdater: rounds ask it to run, it
// writes apart from the sync loop, and only objects whose status differs. A route's parents
// entries of other controllers are never changed: the route is patched with its
// resourceVersion, and a conflict reads the route again and recomputes.
type GatewayAPIUpdater struct {
	runner
	controller string
	opts       IngressOptions // where the Gateways' addresses come from
	source     dataplane.SnapshotSource
	reader     client.Reader // the API server: the publish Service, and routes after a conflict
	writer     client.Client
	now        func() time.Time

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
	u := &GatewayAPIUpdater{controller: controllerName, opts: opts, source: source, reader: reader, writer: writer, now: time.Now, programmed: map[string]bool{}}
	u.runner = newRunner("Gateway API status", log, u.Update)
	return u
}

func gatewayKey(g *gatewayv1.Gateway) string {
	return fmt.Sprintf("%s/%s/%d", g.Namespace, g.Name, g.Generation)
}

// Report implements dataplane.Reporter: a translation of the whole snapshot is the outcome
// to write; a sync that reached a gateway makes the Gateways of the translation it carried
// Programmed. It never blocks the loop.
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
	if reachedGateway(r, true) && u.pending != nil {
		// A sync of the latest translation reached a gateway.
		programmed := map[string]bool{}
		for _, g := range u.pending.Gateways {
			programmed[gatewayKey(g.Gateway)] = true
		}
		u.programmed, u.pending, changed = programmed, nil, true
	}
	if changed {
		u.trigger.Request()
	}
}

// Update writes the status of every class, Gateway and route whose status differs from
// what the latest translation says.
func (u *GatewayAPIUpdater) Update(ctx context.Context) error {
	u.mu.Lock()
	a, programmed := u.latest, u.programmed
	u.mu.Unlock()
	if a == nil {
		return nil
	}
	snap, err := u.source.Snapshot(ctx)
	if err != nil {
		return err
	}
	now := u.now()
	var errs []string
	fail := func(kind string, obj client.Object, err error) {
		errs = append(errs, fmt.Sprintf("%s %s: %v", kind, client.ObjectKeyFromObject(obj), err))
	}
	for _, c := range snap.GatewayClasses {
		if a.Classes[c.Name] == nil {
			continue
		}
		want := gatewayClassStatus(c.Status, c.Generation, now)
		if !equality.Semantic.DeepEqual(want, c.Status) {
			updated := c.DeepCopy() // the snapshot's objects belong to the cache
			updated.Status = want
			if err := u.writer.Status().Patch(ctx, updated, client.MergeFrom(c)); err != nil {
				fail("GatewayClass", c, err)
			}
		}
	}
	var addrs []string
	addrsKnown := true
	if len(a.Gateways) > 0 && (len(u.opts.PublishAddresses) > 0 || u.opts.PublishService != "") {
		if addrs, err = publishedAddresses(ctx, u.opts, u.reader); err != nil {
			// Rather than write no addresses for a read that failed, leave Gateways as they are.
			errs, addrsKnown = append(errs, err.Error()), false
		}
	}
	secrets := make(map[string]*corev1.Secret, len(snap.Secrets))
	for _, s := range snap.Secrets {
		secrets[s.Namespace+"/"+s.Name] = s
	}
	secret := func(ns, name string) *corev1.Secret { return secrets[ns+"/"+name] }
	for _, g := range snap.Gateways {
		gw := a.Gateway(g.Namespace, g.Name)
		if gw == nil || !addrsKnown {
			continue
		}
		certRefs := func(l *gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string) {
			return gatewayapi.ResolveCertificateRefs(gw.Gateway, l, secret, snap.ReferenceGrants)
		}
		want := gatewayStatus(g.Status, gw, certRefs, addrs, programmed[gatewayKey(gw.Gateway)], now)
		if !equality.Semantic.DeepEqual(want, g.Status) {
			updated := g.DeepCopy()
			updated.Status = want
			if err := u.writer.Status().Patch(ctx, updated, client.MergeFrom(g)); err != nil {
				fail("Gateway", g, err)
			}
		}
	}
	for _, r := range snapshotRoutes(snap) {
		if err := u.updateRoute(ctx, r, a.Route(r.kind, r.obj), now); err != nil {
			fail(r.kind, r.obj, err)
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// updateRoute writes the route's parents entries of our controller when they differ. The
// patch carries the resourceVersion: if another controller wrote its own entry meanwhile,
// the write fails with a conflict, and the route is read again and its entries recomputed,
// so that theirs survive.
func (u *GatewayAPIUpdater) updateRoute(ctx context.Context, r routeObject, ra *gatewayapi.RouteAttachment, now time.Time) error {
	current := r.obj
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh := r.empty()
			if err := u.reader.Get(ctx, client.ObjectKeyFromObject(r.obj), fresh); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}
			current = fresh
		}
		first = false
		have := *r.parents(current)
		want := routeParents(have, ra, u.controller, now)
		if equality.Semantic.DeepEqual(want, have) || len(want) == 0 && len(have) == 0 {
			return nil
		}
		updated := current.DeepCopyObject().(client.Object)
		*r.parents(updated) = want
		return u.writer.Status().Patch(ctx, updated, client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{}))
	})
}

var _ dataplane.Reporter = (*GatewayAPIUpdater)(nil)
