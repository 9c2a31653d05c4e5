package translator

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// What makes the translation of a Gateway API route local, for Incremental (incremental.go).
//
// A route's translation (httpRoutes, grpcRoutes, l4Routes, attachedRoute,
// populateGatewayService) reads the route, the attachment of its parents (the Gateways,
// their GatewayClasses and the Namespaces' labels: unchanged, or the round is a full Build;
// a GRPCRoute's hosts and protocol and an L4 route's ports and TLS mode come from its parent
// listeners, read through its attachment: parentListeners), ReferenceGrants (unchanged,
// and given to the partial translation whole), the Services its backendRefs name with their
// EndpointSlices (given too), BackendTLSPolicies targeting those Services (with
// GatewayAlpha: a full Build, because an HTTPRoute that attaches names its Services as
// BackendTLSPolicy ancestors even when no parent accepts it, which changes the Kong
// services of the Ingresses naming them and leaves no trace in the graph), and the
// plugins its konghq.com/plugins annotation and ExtensionRef filters name (localRoute:
// a full Build). Each rule (group) has a Kong service of its own,
// <kind>.<ns>.<name>.<rule> (httproute, grpcroute, tcproute, udproute, tlsroute), whose host
// is its name and names its upstream: routes never share a Kong service or an upstream with
// another object (a TCPRoute and a UDPRoute on one Service have two, unlike a TCPIngress and
// a UDPIngress: upstreamTakenByTwin), and what they share is the Services they read. A
// route's stream route names (<kind>.<ns>.<name>.<rule>.0) are its own too; a name another
// route has is refused, which the splice checks (nameTaken, routeOwner). A Service that did
// not change is read the same by every route naming it, and a route's translation says
// something about the Service itself (a problem about its annotations, a reference to an
// upstream policy or BackendTLSPolicy, a problem about one of its EndpointSlices) only by
// what the Service holds: readOnlyService lets the closure read such a Service without
// taking in every other object naming it when the previous result says nothing about it,
// and the partial result must not either (spliceable).

// aRoute is "a <kind>", or "an HTTPRoute", for reasons.
func aRoute(kind string) string {
	if kind == gatewayapi.KindHTTPRoute {
		return "an " + kind
	}
	return "a " + kind
}

// expressionsPriorities says whether the expressions router's translation of routes of kind
// assigns priorities across all routes of the kind (HTTPRoutes, GRPCRoutes), which makes it
// not local. The expressions of TCPRoutes, UDPRoutes and TLSRoutes are local: made from the
// route's own ports and hostnames, all at KIC's priority 1 (kong_streamexpressions.go).
func expressionsPriorities(kind string) bool {
	return kind == gatewayapi.KindHTTPRoute || kind == gatewayapi.KindGRPCRoute
}

// routeIndex holds one route kind's objects of the latest snapshot (objectIndex), as
// client.Objects.
type routeIndex interface {
	kind() string
	// update makes the index hold the snapshot's routes of its kind and returns the
	// previous version of every route added (nil), removed or changed; ok is false when a
	// name appears twice.
	// changes, when it follows the kind, says which.
	update(snap *store.Snapshot, changes *store.Changes) (changed map[nsName]client.Object, ok bool)
	get(k nsName) client.Object // nil when none
	len() int
}

type kindRoutes[T interface {
	comparable
	client.Object
}] struct {
	objectIndex[T]
	name string
	of   store.Kind
	list func(*store.Snapshot) []T
}

func newKindRoutes[T interface {
	comparable
	client.Object
}](name string, of store.Kind, snap *store.Snapshot, list func(*store.Snapshot) []T) *kindRoutes[T] {
	return &kindRoutes[T]{objectIndex: newObjectIndex(list(snap)), name: name, of: of, list: list}
}

func (r *kindRoutes[T]) kind() string { return r.name }
func (r *kindRoutes[T]) len() int     { return len(r.m) }

func (r *kindRoutes[T]) get(k nsName) client.Object {
	if o, ok := r.m[k]; ok {
		return o
	}
	return nil // not a typed nil in the interface
}

func (r *kindRoutes[T]) update(snap *store.Snapshot, changes *store.Changes) (map[nsName]client.Object, bool) {
	var objs []T
	if !changes.Followed(r.of) { // a followed kind's change set says all: no list to make
		objs = r.list(snap)
	}
	changed, ok := r.objectIndex.updateFrom(objs, changes, r.of)
	if !ok {
		return nil, false
	}
	out := make(map[nsName]client.Object, len(changed))
	var zero T
	for k, o := range changed {
		if o == zero {
			out[k] = nil // not a typed nil in the interface
		} else {
			out[k] = o
		}
	}
	return out, true
}

// newRouteIndexes are the indexes of snap's routes of every kind of routeKindTable.
func newRouteIndexes(snap *store.Snapshot) []routeIndex {
	out := make([]routeIndex, len(routeKindTable))
	for i := range routeKindTable {
		k := &routeKindTable[i]
		out[i] = newKindRoutes(k.kind, k.storeKind, snap, k.list)
	}
	return out
}

// localRoute says why a route's translation may depend on other objects than those the
// closure holds ("" when it does not): plugins, by its annotation or an HTTPRoute's
// ExtensionRef filter. (A GRPCRoute's filters, ExtensionRef too, are only reported as
// ignored, on the route itself.)
func localRoute(kind string, obj client.Object) string {
	if _, ok := obj.GetAnnotations()[annPlugins]; ok {
		return aRoute(kind) + " of the change has plugins"
	}
	if hr, ok := obj.(*gatewayv1.HTTPRoute); ok {
		for _, rule := range hr.Spec.Rules {
			for _, f := range rule.Filters {
				if f.Type == gatewayv1.HTTPRouteFilterExtensionRef {
					return "an HTTPRoute of the change has an ExtensionRef filter"
				}
			}
		}
	}
	return ""
}

// appendRoute adds a route to the snapshot's list of its kind.
func appendRoute(snap *store.Snapshot, obj client.Object) {
	for i := range routeKindTable {
		if _, ok := routeKindTable[i].input(obj); ok {
			routeKindTable[i].add(snap, obj)
			return
		}
	}
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

// routeServicesNamed are the Services a route's backendRefs name.
func routeServicesNamed(obj client.Object) []nsName {
	var out []nsName
	eachBackendRef(obj, func(_, _ int, be gatewayv1.BackendRef) {
		if k, ok := gatewayapi.ServiceBackendKey(obj.GetNamespace(), be); ok {
			ns, name, _ := strings.Cut(k, "/")
			out = append(out, nsName{ns, name})
		}
	})
	return out
}

// routeMayRefer says whether a route of a splice may refer to an object of this group
// and kind besides Services: its parent Gateways and the ReferenceGrants that allow its
// backendRefs, which do not change in a round that splices.
func routeMayRefer(group, kind string) bool {
	return group == gvkGateway.Group && (kind == gvkGateway.Kind || kind == gvkReferenceGrant.Kind)
}

// readOnlyService reports whether the previous result says nothing about Service s: no
// reference out of it, no problem about it or its EndpointSlices (problemNodes are the
// previous result's problem subjects). Such a Service, unchanged, can be read by the
// routes of a closure without joining it.
func readOnlyService(prev *incrementalRound, s nsName, problemNodes map[objgraph.Node]struct{}) bool {
	if len(prev.res.Graph.References(ref(gvkService, s.ns, s.name))) > 0 {
		return false
	}
	if _, reported := problemNodes[objgraph.NodeOf(ref(gvkService, s.ns, s.name))]; reported {
		return false
	}
	for k := range prev.byService.slicesOf(s).All() {
		if _, reported := problemNodes[objgraph.NodeOf(ref(gvkEndpointSlice, k.ns, k.name))]; reported {
			return false
		}
	}
	return true
}
