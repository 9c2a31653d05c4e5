package translator

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// anyNamespaceLabels is the graph node "the labels of every Namespace": a Gateway with a
// listener whose allowedRoutes admits namespaces by Selector refers to it, because a label
// added to or removed from any Namespace can attach or detach routes. Namespace events are
// relevant only while some Gateway refers to it (relevance.go).
var anyNamespaceLabels = ref(gvkNamespace, "", "")

// gateways records what our Gateways refer to beyond their routes and certificates: their
// GatewayClass (which makes them ours), and the labels of every Namespace when a listener
// admits routes by them.
func (b *builder) gateways() {
	for _, g := range b.gw.Gateways {
		b.refer(g.Gateway, gvkGateway, ref(gvkGatewayClass, "", string(g.Gateway.Spec.GatewayClassName)))
		for _, l := range g.Gateway.Spec.Listeners {
			if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil &&
				*ar.Namespaces.From == gatewayv1.NamespacesFromSelector {
				b.refer(g.Gateway, gvkGateway, anyNamespaceLabels)
				break
			}
		}
	}
}
