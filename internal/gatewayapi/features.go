package gatewayapi

import (
	"sort"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// Router says which of Kong's router flavors the gateways run: some features need the
// expressions router's fields and priorities.
type Router struct {
	Expressions bool
	// GatewayAlpha is KIC's gate, without which TCPRoutes, TLSRoutes and UDPRoutes are not
	// read (their features are then not declared).
	GatewayAlpha bool
}

// featureSupport is one feature konductor declares and the router it needs.
type featureSupport struct {
	name features.FeatureName
	// expressionsOnly: Kong's traditional router cannot do it (no query match; header
	// matches outrank method matches there, against the spec's precedence; no negation; no
	// destination port for HTTP routes).
	expressionsOnly bool
	// gatewayAlpha: the kinds it needs are read only with KIC's GatewayAlpha gate.
	gatewayAlpha bool
}

// supported is every feature konductor declares in a GatewayClass's
// status.supportedFeatures: each one's conformance tests pass with traffic
// (TestGatewayAPIConformance reads the features from the class, so declaring one runs its
// tests). Features left out, and why, are in docs/gateway-api.md ("Conformance").
var supported = []featureSupport{
	// Core of the GATEWAY-HTTP and GATEWAY-GRPC profiles.
	{name: features.SupportGateway},
	{name: features.SupportHTTPRoute},
	{name: features.SupportReferenceGrant},
	{name: features.SupportGRPCRoute},

	// Extended.
	{name: features.SupportGatewayPort8080},
	// A Gateway asking an address of a type without a value gets the publish addresses.
	{name: features.SupportGatewayAddressEmpty},
	// Requested addresses are usable where Kong's proxy is published (status.judgeAddresses).
	{name: features.SupportGatewayStaticAddresses},
	{name: features.SupportHTTPRouteResponseHeaderModification},
	{name: features.SupportHTTPRouteHostRewrite},
	{name: features.SupportHTTPRoutePathRewrite},
	// Without a hostname, Kong's own http-to-https redirect of an https-only route
	// (translator's kongHTTPSRedirect).
	{name: features.SupportHTTPRouteSchemeRedirect},
	{name: features.SupportHTTPRoute303RedirectStatusCode},
	{name: features.SupportHTTPRoute307RedirectStatusCode},
	{name: features.SupportHTTPRoute308RedirectStatusCode},
	{name: features.SupportHTTPRouteBackendTimeout},
	{name: features.SupportHTTPRouteNamedRouteRule},
	{name: features.SupportGRPCRouteNamedRouteRule},
	// Kong proxies WebSocket upgrades on http services, whatever the backend's appProtocol.
	{name: features.SupportHTTPRouteBackendProtocolWebSocket},
	// ListenerSets' listeners join their Gateway's (listenerset.go).
	{name: features.SupportListenerSet},
	{name: features.SupportHTTPRouteMethodMatching, expressionsOnly: true},
	{name: features.SupportHTTPRouteQueryParamMatching, expressionsOnly: true},
	// Negated host matches keep a listener's requests from less specific listeners' routes.
	{name: features.SupportGatewayHTTPListenerIsolation, expressionsOnly: true},
	// A route attached to some of its Gateways' HTTP ports matches net.dst.port, the Kong
	// listens behind them (translator's listenerPortMatcher); the traditional routers have no
	// destination port for HTTP routes.
	{name: features.SupportHTTPRouteParentRefPort, expressionsOnly: true},
	{name: features.SupportHTTPRouteDestinationPortMatching, expressionsOnly: true},

	// Streams (GATEWAY-TLS, GATEWAY-TCP, GATEWAY-UDP profiles): Kong's stream routes, tested with traffic
	// through the emulator's stream proxy.
	{name: features.SupportTLSRoute, gatewayAlpha: true},
	// A Terminate listener's TLSRoute is a Kong route of protocol tls: Kong terminates with
	// the listener's certificate and proxies plain TCP.
	{name: features.SupportTLSRouteModeTerminate, gatewayAlpha: true},
	// Terminate and Passthrough listeners on one port, told apart by hostname: Kong reads the
	// SNI on its ssl stream listen and routes to a tls or a tls_passthrough route.
	{name: features.SupportTLSRouteModeMixed, gatewayAlpha: true},
	// The oldest TCPRoute or UDPRoute on a port takes it (translator's portOwners).
	{name: features.SupportTCPRoute, gatewayAlpha: true},
	{name: features.SupportUDPRoute, gatewayAlpha: true},
	// BackendTLSPolicy is read only with the gate, as in KIC (the policy's hostname is Kong's
	// SNI, verified name and Host; BackendTLSPolicyConflictResolution is skipped, its reason in
	// test/conformance.Skipped).
	{name: features.SupportBackendTLSPolicy, gatewayAlpha: true},
}

// SupportedFeatures are the features a GatewayClass of ours declares for gateways running
// router r, sorted by name as the spec asks.
func SupportedFeatures(r Router) []gatewayv1.SupportedFeature {
	out := make([]gatewayv1.SupportedFeature, 0, len(supported))
	for _, f := range supported {
		if (f.expressionsOnly && !r.Expressions) || (f.gatewayAlpha && !r.GatewayAlpha) {
			continue
		}
		out = append(out, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(f.name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
