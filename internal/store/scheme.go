package store

import (
	"maps"
	"slices"
	"strings"
	"sync"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Scheme is the process's one scheme of NewScheme, built at its first use and shared by every
// reader (the manager, its cache and clients, the status updaters). A scheme is read-only once
// built; building one costs about 10 ms and 600 KB (client-go's types, Kong's and Gateway
// API's), which a package variable spent at init, before main, in every process, and the
// manager spent again (issue #13, start). Callers that register more types use NewScheme.
var Scheme = sync.OnceValue(NewScheme)

// NewScheme returns a scheme with every type konductor reads or writes: the built-in
// Kubernetes types, Kong's configuration.konghq.com types and Gateway API's types (v1,
// v1beta1 for ReferenceGrant, and v1alpha2 and v1alpha3 for the older versions of TCPRoute,
// UDPRoute, TLSRoute and BackendTLSPolicy that clusters may serve instead of v1: Versions).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kongv1.AddToScheme(s))
	utilruntime.Must(kongv1beta1.AddToScheme(s))
	utilruntime.Must(kongv1alpha1.AddToScheme(s))
	utilruntime.Must(incubatorv1alpha1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	utilruntime.Must(gatewayv1beta1.Install(s))
	utilruntime.Must(gatewayv1alpha2.Install(s))
	utilruntime.Must(gatewayv1alpha3.Install(s))
	return s
}

// GatewayAPIRouteKinds are the route kinds (types named *Route) of every Gateway API version
// the scheme holds, sorted: what the translator's and status's tables of route kinds must each
// have a row for (their tests read it, so that a route kind a Gateway API upgrade brings is
// not left without one silently).
func GatewayAPIRouteKinds() []string {
	seen := map[string]bool{}
	for gvk := range Scheme().AllKnownTypes() {
		if gvk.Group == gatewayv1.GroupName && strings.HasSuffix(gvk.Kind, "Route") {
			seen[gvk.Kind] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
