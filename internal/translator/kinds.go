package translator

import (
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// The kinds translation reads, as the object graph's nodes and the problems name them: the
// store's kinds' GroupVersionKinds (store.Kind.GroupVersionKind), so that the project spells
// each once (docs/architecture.md, "Adding a kind").
var (
	// Kubernetes.
	gvkIngress       = store.KindIngress.GroupVersionKind()
	gvkIngressClass  = store.KindIngressClass.GroupVersionKind()
	gvkService       = store.KindService.GroupVersionKind()
	gvkEndpointSlice = store.KindEndpointSlice.GroupVersionKind()
	gvkSecret        = store.KindSecret.GroupVersionKind()
	gvkConfigMap     = store.KindConfigMap.GroupVersionKind()
	gvkNamespace     = store.KindNamespace.GroupVersionKind()

	// Kong's custom resources.
	gvkKongPlugin         = store.KindKongPlugin.GroupVersionKind()
	gvkKongClusterPlugin  = store.KindKongClusterPlugin.GroupVersionKind()
	gvkKongConsumer       = store.KindKongConsumer.GroupVersionKind()
	gvkKongConsumerGroup  = store.KindKongConsumerGroup.GroupVersionKind()
	gvkKongIngress        = store.KindKongIngress.GroupVersionKind()
	gvkKongUpstreamPolicy = store.KindKongUpstreamPolicy.GroupVersionKind()
	gvkTCPIngress         = store.KindTCPIngress.GroupVersionKind()
	gvkUDPIngress         = store.KindUDPIngress.GroupVersionKind()
	gvkKongVault          = store.KindKongVault.GroupVersionKind()
	gvkKongCustomEntity   = store.KindKongCustomEntity.GroupVersionKind()
	gvkKongLicense        = store.KindKongLicense.GroupVersionKind()
	gvkKongServiceFacade  = store.KindKongServiceFacade.GroupVersionKind()

	// Gateway API.
	gvkGateway          = store.KindGateway.GroupVersionKind()
	gvkGatewayClass     = store.KindGatewayClass.GroupVersionKind()
	gvkHTTPRoute        = store.KindHTTPRoute.GroupVersionKind()
	gvkGRPCRoute        = store.KindGRPCRoute.GroupVersionKind()
	gvkTCPRoute         = store.KindTCPRoute.GroupVersionKind()
	gvkTLSRoute         = store.KindTLSRoute.GroupVersionKind()
	gvkUDPRoute         = store.KindUDPRoute.GroupVersionKind()
	gvkReferenceGrant   = store.KindReferenceGrant.GroupVersionKind()
	gvkBackendTLSPolicy = store.KindBackendTLSPolicy.GroupVersionKind()
	gvkListenerSet      = store.KindListenerSet.GroupVersionKind()
)

// isRouteNode says whether n is a route of a kind of routeKindTable.
func isRouteNode(n objgraph.Node) bool { return isRouteKind(n.GroupKind()) }

// routeRef is the graph's reference to the route k.
func routeRef(k gatewayapi.RouteKey) kongstate.ObjectRef {
	return ref(routeKindsByName[k.Kind].gvk, k.Namespace, k.Name)
}
