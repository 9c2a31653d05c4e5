package status

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// EventHandler wakes the classes-and-Gateways loop on every change that can change how
// routes attach (a class, a Gateway, a ListenerSet, a route of any kind, a ReferenceGrant, a Namespace's
// labels, a publish Service's addresses or ports), so that a listener's attachedRoutes follows the cache itself and not the sync
// loop: a round that started before the last change would otherwise have to end, push
// included, before the count moves. Status writes (the generation does not move) wake
// nothing, except a Gateway's (see Relevant). Register it on every informer (the
// barrier's AddEventHandler).
func (u *GatewayAPIUpdater) EventHandler() toolscache.ResourceEventHandler {
	publish := map[types.NamespacedName]bool{}
	for _, s := range []string{u.opts.PublishService, u.opts.PublishServiceUDP} {
		if ns, name, ok := strings.Cut(s, "/"); ok {
			publish[types.NamespacedName{Namespace: ns, Name: name}] = true
		}
	}
	return u.trigger.FilteredEventHandler(attachmentEvents{publish: publish})
}

// attachmentEvents tells the changes attachment reads from the others, and the changes of the
// publish Services that Gateways' addresses and listeners follow (KIC requeues the Gateways
// on them too).
type attachmentEvents struct {
	publish map[types.NamespacedName]bool
}

func (e attachmentEvents) Relevant(old, new client.Object) bool {
	obj := new
	if obj == nil {
		obj = old
	}
	switch obj := obj.(type) {
	case *corev1.Service:
		if !e.publish[client.ObjectKeyFromObject(obj)] {
			return false
		}
		oldSvc, _ := old.(*corev1.Service)
		return oldSvc == nil || new == nil || !publishedSame(oldSvc, obj)
	case *gatewayv1.Gateway:
		// Its status too: a pass that started right after our last write compared with a
		// cache that may not have shown that write yet, and skipped a count that equalled the
		// stale one (a route added, then deleted). The write's own event makes a pass look
		// again; it writes nothing when the status is right.
		oldGW, _ := old.(*gatewayv1.Gateway)
		return old == nil || new == nil || old.GetGeneration() != new.GetGeneration() ||
			oldGW == nil || !equality.Semantic.DeepEqual(oldGW.Status, obj.Status)
	case *gatewayv1.ListenerSet:
		// Its status too, for the reason a Gateway's is.
		oldLS, _ := old.(*gatewayv1.ListenerSet)
		return old == nil || new == nil || old.GetGeneration() != new.GetGeneration() ||
			oldLS == nil || !equality.Semantic.DeepEqual(oldLS.Status, obj.Status)
	case *gatewayv1.GatewayClass, *gatewayv1beta1.ReferenceGrant:
		return old == nil || new == nil || old.GetGeneration() != new.GetGeneration()
	case *metav1.PartialObjectMetadata: // Namespaces, read as metadata for their labels
		return old == nil || new == nil || !maps.Equal(old.GetLabels(), new.GetLabels())
	}
	if isRoute(obj) { // a route of any kind (routeStatusTable), at any version served
		return old == nil || new == nil || old.GetGeneration() != new.GetGeneration()
	}
	return false
}

// attach is how routes attach in snap: the code translation runs (translator.GatewayInput,
// gatewayapi.Attach), with the same controllerName and GatewayAlpha gate, so that status
// and translation never disagree on what attaches where.
func (u *GatewayAPIUpdater) attach(snap *store.Snapshot) *gatewayapi.Attachment {
	return gatewayapi.Attach(translator.GatewayInput(snap, translator.Options{
		GatewayControllerName: u.controller, GatewayAlpha: u.GatewayAlpha,
	}))
}

// publishedSame reports whether two versions of a publish Service give Gateways the same
// addresses and ports.
func publishedSame(a, b *corev1.Service) bool {
	return slices.Equal(serviceAddresses(a), serviceAddresses(b)) && equality.Semantic.DeepEqual(a.Spec.Ports, b.Spec.Ports)
}
