package translator

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// routeKind is one Gateway API route kind: all translation and the incremental translator
// know of a kind that is not its translation itself, in one row of routeKindTable. A new
// route kind is a row here, its translation (gateway_<kind>.go, called from buildOnce) and
// status's row (internal/status, gatewayapi_routes.go); TestEveryGatewayAPIRouteKindHasARow
// fails without the rows (docs/architecture.md, "Adding a kind").
type routeKind struct {
	kind      string // gatewayapi.Kind*
	storeKind store.Kind
	gvk       schema.GroupVersionKind // the store's (store.Kind.GroupVersionKind)
	// alpha: translated, and attached, only with the GatewayAlpha gate (KIC's).
	alpha bool
	// list is the snapshot's routes of the kind, nil ones left out; each visits them without
	// making that list.
	list func(*store.Snapshot) []client.Object
	each func(*store.Snapshot, func(client.Object))
	// add appends a route of the kind to a snapshot's list of it.
	add func(*store.Snapshot, client.Object)
	// input is the route as gatewayapi.Attach reads it; ok is false for another kind.
	input func(client.Object) (r gatewayapi.Route, ok bool)
	// backendRefs calls f with each backendRef of the route's rules; false for another kind.
	backendRefs func(obj client.Object, f func(rule, i int, be gatewayv1.BackendRef)) bool
}

// routeKindTable is every Gateway API route kind translation reads, in the order the sources
// translate them (plugins attach to their Kong routes in that order).
var routeKindTable = []routeKind{
	routeRow(gatewayapi.KindHTTPRoute, store.KindHTTPRoute, false, func(s *store.Snapshot) *[]*gatewayv1.HTTPRoute { return &s.HTTPRoutes },
		func(r *gatewayv1.HTTPRoute) ([]gatewayv1.ParentReference, []gatewayv1.Hostname) {
			return r.Spec.ParentRefs, r.Spec.Hostnames
		},
		func(r *gatewayv1.HTTPRoute, f func(rule, i int, be gatewayv1.BackendRef)) {
			for i, rule := range r.Spec.Rules {
				for j, be := range rule.BackendRefs {
					f(i, j, be.BackendRef)
				}
			}
		}),
	routeRow(gatewayapi.KindGRPCRoute, store.KindGRPCRoute, false, func(s *store.Snapshot) *[]*gatewayv1.GRPCRoute { return &s.GRPCRoutes },
		func(r *gatewayv1.GRPCRoute) ([]gatewayv1.ParentReference, []gatewayv1.Hostname) {
			return r.Spec.ParentRefs, r.Spec.Hostnames
		},
		func(r *gatewayv1.GRPCRoute, f func(rule, i int, be gatewayv1.BackendRef)) {
			for i, rule := range r.Spec.Rules {
				for j, be := range rule.BackendRefs {
					f(i, j, be.BackendRef)
				}
			}
		}),
	routeRow(gatewayapi.KindTCPRoute, store.KindTCPRoute, true, func(s *store.Snapshot) *[]*gatewayv1.TCPRoute { return &s.TCPRoutes },
		func(r *gatewayv1.TCPRoute) ([]gatewayv1.ParentReference, []gatewayv1.Hostname) {
			return r.Spec.ParentRefs, nil
		},
		func(r *gatewayv1.TCPRoute, f func(rule, i int, be gatewayv1.BackendRef)) {
			for i, rule := range r.Spec.Rules {
				walkRefs(i, rule.BackendRefs, f)
			}
		}),
	routeRow(gatewayapi.KindUDPRoute, store.KindUDPRoute, true, func(s *store.Snapshot) *[]*gatewayv1.UDPRoute { return &s.UDPRoutes },
		func(r *gatewayv1.UDPRoute) ([]gatewayv1.ParentReference, []gatewayv1.Hostname) {
			return r.Spec.ParentRefs, nil
		},
		func(r *gatewayv1.UDPRoute, f func(rule, i int, be gatewayv1.BackendRef)) {
			for i, rule := range r.Spec.Rules {
				walkRefs(i, rule.BackendRefs, f)
			}
		}),
	routeRow(gatewayapi.KindTLSRoute, store.KindTLSRoute, true, func(s *store.Snapshot) *[]*gatewayv1.TLSRoute { return &s.TLSRoutes },
		func(r *gatewayv1.TLSRoute) ([]gatewayv1.ParentReference, []gatewayv1.Hostname) {
			return r.Spec.ParentRefs, r.Spec.Hostnames
		},
		func(r *gatewayv1.TLSRoute, f func(rule, i int, be gatewayv1.BackendRef)) {
			for i, rule := range r.Spec.Rules {
				walkRefs(i, rule.BackendRefs, f)
			}
		}),
}

// walkRefs calls f with each of a rule's backendRefs (those of the kinds whose rules list
// BackendRefs themselves).
func walkRefs(rule int, refs []gatewayv1.BackendRef, f func(rule, i int, be gatewayv1.BackendRef)) {
	for j, be := range refs {
		f(rule, j, be)
	}
}

// routeRow is the row of a route kind whose Go type is *T: field is the snapshot's list of
// the kind, parents its parentRefs and the hostnames it matches on (nil for a kind that
// matches on none), refs its backendRefs' walk.
func routeRow[T any, P interface {
	*T
	client.Object
}](kind string, sk store.Kind, alpha bool, field func(*store.Snapshot) *[]P, parents func(P) ([]gatewayv1.ParentReference, []gatewayv1.Hostname),
	refs func(P, func(rule, i int, be gatewayv1.BackendRef))) routeKind {
	return routeKind{
		kind: kind, storeKind: sk, gvk: sk.GroupVersionKind(), alpha: alpha,
		list: func(s *store.Snapshot) []client.Object { return objects(*field(s)) },
		each: func(s *store.Snapshot, f func(client.Object)) {
			for _, r := range *field(s) {
				if r != nil {
					f(r)
				}
			}
		},
		add: func(s *store.Snapshot, obj client.Object) {
			l := field(s)
			*l = append(*l, obj.(P))
		},
		input: func(obj client.Object) (gatewayapi.Route, bool) {
			r, ok := obj.(P)
			if !ok {
				return gatewayapi.Route{}, false
			}
			p, h := parents(r)
			return gatewayapi.Route{Kind: kind, Object: r, ParentRefs: p, Hostnames: h}, true
		},
		backendRefs: func(obj client.Object, f func(rule, i int, be gatewayv1.BackendRef)) bool {
			r, ok := obj.(P)
			if ok {
				refs(r, f)
			}
			return ok
		},
	}
}

// routeKindsByName are routeKindTable's rows by kind.
var routeKindsByName = func() map[string]*routeKind {
	out := make(map[string]*routeKind, len(routeKindTable))
	for i := range routeKindTable {
		out[routeKindTable[i].kind] = &routeKindTable[i]
	}
	return out
}()

// isRouteKind says whether group and kind are those of a route kind of routeKindTable.
func isRouteKind(group, kind string) bool {
	_, ok := routeKindsByName[kind]
	return ok && group == gatewayapi.Group
}

// routeKindOf is the route kind of gvk, false when gvk is not one of routeKindTable's.
func routeKindOf(gvk schema.GroupVersionKind) (string, bool) {
	return gvk.Kind, isRouteKind(gvk.Group, gvk.Kind)
}

// routeTranslated says whether routes of kind are translated with opts: the alpha kinds only
// with GatewayAlpha (GatewayInput). A route of a kind that is not changes nothing.
func routeTranslated(kind string, opts Options) bool {
	k, ok := routeKindsByName[kind]
	return !ok || !k.alpha || opts.GatewayAlpha
}

// isRouteObject says whether obj is a route of a kind of routeKindTable.
func isRouteObject(obj client.Object) bool {
	for i := range routeKindTable {
		if _, ok := routeKindTable[i].input(obj); ok {
			return true
		}
	}
	return false
}
