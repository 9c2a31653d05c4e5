package status

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// routeObject is a Gateway API route of any kind, with access to its status.parents.
type routeObject struct {
	kind string
	obj  client.Object
	// parents returns the parents of a route of this kind (obj or one read again).
	parents func(client.Object) *[]gatewayv1.RouteParentStatus
	// empty returns a new route of the kind, to read one again.
	empty func() client.Object
}

// routeStatusKind is one Gateway API route kind whose status.parents the Gateway API status
// writer writes: status's one list of route kinds (docs/architecture.md, "Adding a kind";
// TestEveryGatewayAPIRouteKindHasARow fails for a kind without a row).
type routeStatusKind struct {
	kind      string
	storeKind store.Kind
	// list is the snapshot's routes of the kind, nil ones left out, as routeObjects.
	list func(*store.Snapshot) []routeObject
}

// routeStatusTable lists the route kinds in the order their status is written: HTTPRoutes
// first, then GRPCRoutes, TCPRoutes, TLSRoutes and UDPRoutes.
var routeStatusTable = []routeStatusKind{
	routeStatusRow(gatewayapi.KindHTTPRoute, store.KindHTTPRoute, func(s *store.Snapshot) []*gatewayv1.HTTPRoute { return s.HTTPRoutes },
		func(r *gatewayv1.HTTPRoute) *[]gatewayv1.RouteParentStatus { return &r.Status.Parents }),
	routeStatusRow(gatewayapi.KindGRPCRoute, store.KindGRPCRoute, func(s *store.Snapshot) []*gatewayv1.GRPCRoute { return s.GRPCRoutes },
		func(r *gatewayv1.GRPCRoute) *[]gatewayv1.RouteParentStatus { return &r.Status.Parents }),
	routeStatusRow(gatewayapi.KindTCPRoute, store.KindTCPRoute, func(s *store.Snapshot) []*gatewayv1.TCPRoute { return s.TCPRoutes },
		func(r *gatewayv1.TCPRoute) *[]gatewayv1.RouteParentStatus { return &r.Status.Parents }),
	routeStatusRow(gatewayapi.KindTLSRoute, store.KindTLSRoute, func(s *store.Snapshot) []*gatewayv1.TLSRoute { return s.TLSRoutes },
		func(r *gatewayv1.TLSRoute) *[]gatewayv1.RouteParentStatus { return &r.Status.Parents }),
	routeStatusRow(gatewayapi.KindUDPRoute, store.KindUDPRoute, func(s *store.Snapshot) []*gatewayv1.UDPRoute { return s.UDPRoutes },
		func(r *gatewayv1.UDPRoute) *[]gatewayv1.RouteParentStatus { return &r.Status.Parents }),
}

// routeStatusRow is the row of a route kind whose Go type is *T.
func routeStatusRow[T any, P interface {
	*T
	client.Object
}](kind string, sk store.Kind, field func(*store.Snapshot) []P, parents func(P) *[]gatewayv1.RouteParentStatus) routeStatusKind {
	parentsOf := func(o client.Object) *[]gatewayv1.RouteParentStatus { return parents(o.(P)) }
	empty := func() client.Object { return P(new(T)) }
	return routeStatusKind{
		kind: kind, storeKind: sk,
		list: func(s *store.Snapshot) []routeObject {
			var out []routeObject
			for _, r := range field(s) {
				if r != nil {
					out = append(out, routeObject{kind, r, parentsOf, empty})
				}
			}
			return out
		},
	}
}

// snapshotRoutes lists every route of the snapshot, in routeStatusTable's order.
func snapshotRoutes(snap *store.Snapshot) []routeObject {
	var out []routeObject
	for _, k := range routeStatusTable {
		out = append(out, k.list(snap)...)
	}
	return out
}

// routeStoreKinds are the store kinds of routeStatusTable.
func routeStoreKinds() []store.Kind {
	out := make([]store.Kind, 0, len(routeStatusTable))
	for _, k := range routeStatusTable {
		out = append(out, k.storeKind)
	}
	return out
}

// isRoute says whether obj is a route of a kind of routeStatusTable, at v1 or at an older
// version a cluster may serve it at (store.Versions: the informers deliver it so).
func isRoute(obj client.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, store.Scheme())
	if err != nil || gvk.Group != gatewayapi.Group {
		return false
	}
	for _, k := range routeStatusTable {
		if k.kind == gvk.Kind {
			return true
		}
	}
	return false
}
