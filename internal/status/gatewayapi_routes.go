package status

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// snapshotRoutes lists every route of the snapshot, HTTPRoutes first, then GRPCRoutes,
// TCPRoutes, TLSRoutes and UDPRoutes.
func snapshotRoutes(snap *store.Snapshot) []routeObject {
	var out []routeObject
	for _, r := range snap.HTTPRoutes {
		if r == nil {
			continue
		}
		out = append(out, routeObject{gatewayapi.KindHTTPRoute, r,
			func(o client.Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.HTTPRoute).Status.Parents },
			func() client.Object { return &gatewayv1.HTTPRoute{} }})
	}
	for _, r := range snap.GRPCRoutes {
		if r == nil {
			continue
		}
		out = append(out, routeObject{gatewayapi.KindGRPCRoute, r,
			func(o client.Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.GRPCRoute).Status.Parents },
			func() client.Object { return &gatewayv1.GRPCRoute{} }})
	}
	for _, r := range snap.TCPRoutes {
		if r == nil {
			continue
		}
		out = append(out, routeObject{gatewayapi.KindTCPRoute, r,
			func(o client.Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.TCPRoute).Status.Parents },
			func() client.Object { return &gatewayv1.TCPRoute{} }})
	}
	for _, r := range snap.TLSRoutes {
		if r == nil {
			continue
		}
		out = append(out, routeObject{gatewayapi.KindTLSRoute, r,
			func(o client.Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.TLSRoute).Status.Parents },
			func() client.Object { return &gatewayv1.TLSRoute{} }})
	}
	for _, r := range snap.UDPRoutes {
		if r == nil {
			continue
		}
		out = append(out, routeObject{gatewayapi.KindUDPRoute, r,
			func(o client.Object) *[]gatewayv1.RouteParentStatus { return &o.(*gatewayv1.UDPRoute).Status.Parents },
			func() client.Object { return &gatewayv1.UDPRoute{} }})
	}
	return out
}
