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
// admits routes by them or allowedListeners admits ListenerSets by them; and what each of
// their ListenerSets refers to: its Gateway (which allows it), the Gateway's other sets
// (whose precedence decides its conflicts), and the labels of every Namespace when one of
// its listeners admits routes by them.
func (b *builder) gateways() {
	for _, g := range b.gw.Gateways {
		gw := g.Gateway
		b.refer(gw, gvkGateway, ref(gvkGatewayClass, "", string(gw.Spec.GatewayClassName)))
		if al := gw.Spec.AllowedListeners; al != nil && al.Namespaces != nil && al.Namespaces.From != nil &&
			*al.Namespaces.From == gatewayv1.NamespacesFromSelector {
			b.refer(gw, gvkGateway, anyNamespaceLabels)
		}
		if selectsByLabels(gw.Spec.Listeners) {
			b.refer(gw, gvkGateway, anyNamespaceLabels)
		}
		for _, s := range g.ListenerSets {
			b.refer(s.ListenerSet, gvkListenerSet, ref(gvkGateway, gw.Namespace, gw.Name))
			for _, sibling := range g.ListenerSets {
				if sibling != s {
					b.refer(s.ListenerSet, gvkListenerSet, ref(gvkListenerSet, sibling.ListenerSet.Namespace, sibling.ListenerSet.Name))
				}
			}
			listeners := make([]gatewayv1.Listener, 0, len(s.Listeners))
			for _, l := range s.Listeners {
				listeners = append(listeners, *l.Listener)
			}
			if selectsByLabels(listeners) {
				b.refer(s.ListenerSet, gvkListenerSet, anyNamespaceLabels)
			}
		}
	}
}

// selectsByLabels reports whether one of listeners admits routes by namespace labels.
func selectsByLabels(listeners []gatewayv1.Listener) bool {
	for _, l := range listeners {
		if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil &&
			*ar.Namespaces.From == gatewayv1.NamespacesFromSelector {
			return true
		}
	}
	return false
}
