package translator

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// The oldest TCPRoute or UDPRoute on a Kong stream port takes it (l4Routes, portOwners): the
// translation of one such route depends on the others naming the same port. So the closure of
// a changed route takes in every route of its kind that may name a port it names, before or
// after the change (expandRoute), and they are translated together, oldest first; each of
// those is expanded in turn.

// streamPortSharers are the other routes of route k's kind in snap that may name a port k
// (its version before and now) may name. Ports are read off the snapshot's Gateways by the
// routes' parentRefs (sectionName, port, protocol), ignoring allowedRoutes: a superset of the
// ports attachment gives them.
func streamPortSharers(snap *store.Snapshot, k gatewayapi.RouteKey, versions ...client.Object) []gatewayapi.RouteKey {
	var protocol gatewayv1.ProtocolType
	switch k.Kind {
	case gatewayapi.KindTCPRoute:
		protocol = gatewayv1.TCPProtocolType
	case gatewayapi.KindUDPRoute:
		protocol = gatewayv1.UDPProtocolType
	default:
		return nil
	}
	kind := routeKindsByName[k.Kind]
	gateways := map[nsName]*gatewayv1.Gateway{}
	for _, g := range snap.Gateways {
		gateways[nsName{g.Namespace, g.Name}] = g
	}
	mine := map[gatewayv1.PortNumber]bool{}
	for _, v := range versions {
		if v != nil {
			for _, p := range streamRoutePorts(gateways, kind, protocol, v) {
				mine[p] = true
			}
		}
	}
	if len(mine) == 0 {
		return nil
	}
	var out []gatewayapi.RouteKey
	for _, o := range kind.list(snap) {
		if o.GetNamespace() == k.Namespace && o.GetName() == k.Name {
			continue
		}
		for _, p := range streamRoutePorts(gateways, kind, protocol, o) {
			if mine[p] {
				out = append(out, gatewayapi.RouteKey{Kind: k.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
				break
			}
		}
	}
	return out
}

// streamRoutePorts are the ports of the listeners of protocol that route's parentRefs name.
func streamRoutePorts(gateways map[nsName]*gatewayv1.Gateway, kind *routeKind, protocol gatewayv1.ProtocolType, route client.Object) []gatewayv1.PortNumber {
	r, _ := kind.input(route)
	var out []gatewayv1.PortNumber
	for _, ref := range r.ParentRefs {
		ns := route.GetNamespace()
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		g := gateways[nsName{ns, string(ref.Name)}]
		if g == nil {
			continue
		}
		for _, l := range g.Spec.Listeners {
			if l.Protocol == protocol && (ref.SectionName == nil || *ref.SectionName == l.Name) && (ref.Port == nil || *ref.Port == l.Port) {
				out = append(out, l.Port)
			}
		}
	}
	return out
}
