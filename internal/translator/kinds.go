package translator

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// The kinds translation reads, as the object graph's nodes and the problems name them. A new
// kind gets its GroupVersionKind here (docs/architecture.md, "Adding a kind").
var (
	// Kubernetes.
	gvkIngress       = netv1.SchemeGroupVersion.WithKind("Ingress")
	gvkIngressClass  = netv1.SchemeGroupVersion.WithKind("IngressClass")
	gvkService       = corev1.SchemeGroupVersion.WithKind("Service")
	gvkEndpointSlice = discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")
	gvkSecret        = corev1.SchemeGroupVersion.WithKind("Secret")
	gvkConfigMap     = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	gvkNamespace     = corev1.SchemeGroupVersion.WithKind("Namespace")

	// Kong's custom resources.
	gvkKongPlugin         = kongv1.SchemeGroupVersion.WithKind("KongPlugin")
	gvkKongClusterPlugin  = kongv1.SchemeGroupVersion.WithKind("KongClusterPlugin")
	gvkKongConsumer       = kongv1.SchemeGroupVersion.WithKind("KongConsumer")
	gvkKongConsumerGroup  = kongv1beta1.SchemeGroupVersion.WithKind("KongConsumerGroup")
	gvkKongIngress        = kongv1.SchemeGroupVersion.WithKind("KongIngress")
	gvkKongUpstreamPolicy = kongv1beta1.SchemeGroupVersion.WithKind("KongUpstreamPolicy")
	gvkTCPIngress         = kongv1beta1.SchemeGroupVersion.WithKind("TCPIngress")
	gvkUDPIngress         = kongv1beta1.SchemeGroupVersion.WithKind("UDPIngress")
	gvkKongVault          = kongv1alpha1.SchemeGroupVersion.WithKind("KongVault")
	gvkKongCustomEntity   = kongv1alpha1.SchemeGroupVersion.WithKind("KongCustomEntity")
	gvkKongLicense        = kongv1alpha1.SchemeGroupVersion.WithKind("KongLicense")
	gvkKongServiceFacade  = incubatorv1alpha1.GroupVersion.WithKind("KongServiceFacade")

	// Gateway API.
	gvkGateway          = gatewayv1.SchemeGroupVersion.WithKind("Gateway")
	gvkGatewayClass     = gatewayv1.SchemeGroupVersion.WithKind("GatewayClass")
	gvkHTTPRoute        = gatewayv1.SchemeGroupVersion.WithKind(gatewayapi.KindHTTPRoute)
	gvkGRPCRoute        = gatewayv1.SchemeGroupVersion.WithKind(gatewayapi.KindGRPCRoute)
	gvkTCPRoute         = gatewayv1.SchemeGroupVersion.WithKind(gatewayapi.KindTCPRoute)
	gvkTLSRoute         = gatewayv1.SchemeGroupVersion.WithKind(gatewayapi.KindTLSRoute)
	gvkUDPRoute         = gatewayv1.SchemeGroupVersion.WithKind(gatewayapi.KindUDPRoute)
	gvkReferenceGrant   = gatewayv1beta1.SchemeGroupVersion.WithKind("ReferenceGrant")
	gvkBackendTLSPolicy = gatewayv1.SchemeGroupVersion.WithKind("BackendTLSPolicy")
)

// routeKinds are the Gateway API route kinds, with their GroupVersionKinds: the sources
// translate them, the incremental work translates a changed one again.
var routeKinds = map[string]schema.GroupVersionKind{
	gatewayapi.KindHTTPRoute: gvkHTTPRoute, gatewayapi.KindGRPCRoute: gvkGRPCRoute,
	gatewayapi.KindTCPRoute: gvkTCPRoute, gatewayapi.KindUDPRoute: gvkUDPRoute, gatewayapi.KindTLSRoute: gvkTLSRoute,
}

// isRouteKind says whether group and kind are those of a route kind of routeKinds.
func isRouteKind(group, kind string) bool {
	_, ok := routeKinds[kind]
	return ok && group == gatewayapi.Group
}

// routeKindOf is the route kind of gvk, false when gvk is not one of routeKinds.
func routeKindOf(gvk schema.GroupVersionKind) (string, bool) {
	return gvk.Kind, isRouteKind(gvk.Group, gvk.Kind)
}

// isRouteNode says whether n is a route of a kind of routeKinds.
func isRouteNode(n objgraph.Node) bool { return isRouteKind(n.GroupKind()) }

// routeTranslated says whether routes of kind are translated with opts: TCPRoutes,
// UDPRoutes and TLSRoutes only with GatewayAlpha (GatewayInput). A route of a kind that is
// not changes nothing.
func routeTranslated(kind string, opts Options) bool {
	switch kind {
	case gatewayapi.KindTCPRoute, gatewayapi.KindUDPRoute, gatewayapi.KindTLSRoute:
		return opts.GatewayAlpha
	}
	return true
}

// routeRef is the graph's reference to the route k.
func routeRef(k gatewayapi.RouteKey) kongstate.ObjectRef {
	return ref(routeKinds[k.Kind], k.Namespace, k.Name)
}
