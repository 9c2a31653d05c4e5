package translator

import (
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// What makes the translation of an HTTPRoute local, for Incremental (incremental.go).
//
// An HTTPRoute's translation (httpRoutes, attachedRoute, populateGatewayService) reads the
// route, the attachment of its parents (the Gateways, their GatewayClasses and the
// Namespaces' labels: unchanged, or the round is a full Build), ReferenceGrants (unchanged,
// and given to the partial translation whole), the Services its backendRefs name with their
// EndpointSlices (given too), BackendTLSPolicies targeting those Services (with
// GatewayAlpha: a full Build, because a route that attaches names its Services as
// BackendTLSPolicy ancestors even when no parent accepts it, which changes the Kong
// services of the Ingresses naming them and leaves no trace in the graph), and the
// plugins its konghq.com/plugins annotation and ExtensionRef filters name (localHTTPRoute:
// a full Build). Each rule group has a Kong service of its own (httproute.<ns>.<name>.<rule>),
// so HTTPRoutes never share one with another object: what they share is the Services
// they read. A Service that did not change is read the same by every route naming it, and
// a route's translation says something about the Service itself (a problem about its
// annotations, a reference to an upstream policy or BackendTLSPolicy, a problem about one
// of its EndpointSlices) only by what the Service holds: readOnlyService lets the closure
// read such a Service without taking in every other object naming it when the previous
// result says nothing about it, and the partial result must not either (spliceable).

// localHTTPRoute says why an HTTPRoute's translation may depend on other objects than those
// the closure holds ("" when it does not).
func localHTTPRoute(hr *gatewayv1.HTTPRoute) string {
	if _, ok := hr.Annotations[annPlugins]; ok {
		return "an HTTPRoute of the change has plugins"
	}
	for _, rule := range hr.Spec.Rules {
		for _, f := range rule.Filters {
			if f.Type == gatewayv1.HTTPRouteFilterExtensionRef {
				return "an HTTPRoute of the change has an ExtensionRef filter"
			}
		}
	}
	return ""
}

// backendTLSTargets are the Services a BackendTLSPolicy targets when policies apply (with
// GatewayAlpha), nil otherwise.
func backendTLSTargets(snap *store.Snapshot, opts Options) map[nsName]bool {
	if !opts.GatewayAlpha || len(snap.BackendTLSPolicies) == 0 {
		return nil
	}
	out := map[nsName]bool{}
	for _, p := range snap.BackendTLSPolicies {
		if p == nil {
			continue
		}
		for _, t := range p.Spec.TargetRefs {
			if gatewayapi.IsServiceTarget(t) {
				out[nsName{p.Namespace, string(t.Name)}] = true
			}
		}
	}
	return out
}

// routeServicesNamed are the Services an HTTPRoute's backendRefs name.
func routeServicesNamed(hr *gatewayv1.HTTPRoute) []nsName {
	keys := gatewayapi.HTTPRouteServiceBackends(hr)
	out := make([]nsName, 0, len(keys))
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		out = append(out, nsName{ns, name})
	}
	return out
}

// routeMayRefer says whether an HTTPRoute of a splice may refer to an object of this group
// and kind besides Services: its parent Gateways and the ReferenceGrants that allow its
// backendRefs, which do not change in a round that splices.
func routeMayRefer(group, kind string) bool {
	return group == gvkGateway.Group && (kind == gvkGateway.Kind || kind == gvkReferenceGrant.Kind)
}

// readOnlyService reports whether the previous result says nothing about Service s: no
// reference out of it, no problem about it or its EndpointSlices (problemNodes are the
// previous result's problem subjects). Such a Service, unchanged, can be read by the
// HTTPRoutes of a closure without joining it.
func readOnlyService(prev *incrementalRound, s nsName, problemNodes map[node]struct{}) bool {
	if len(prev.res.Graph.References(ref(gvkService, s.ns, s.name))) > 0 {
		return false
	}
	if _, reported := problemNodes[nodeOf(ref(gvkService, s.ns, s.name))]; reported {
		return false
	}
	for k := range prev.slicesOf[s].All() {
		if _, reported := problemNodes[nodeOf(ref(gvkEndpointSlice, k.ns, k.name))]; reported {
			return false
		}
	}
	return true
}
