package admission

import (
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/store"
)

// forNamespace is snap reduced to what a change in namespace ns can meet, so that a review
// in a cluster of thousands of Ingresses translates hundreds. Ingresses, Services,
// EndpointSlices, TCP/UDPIngresses, KongUpstreamPolicies and KongIngresses only ever refer to
// objects of their own namespace, and the Kong names made of them (services, routes,
// upstreams) carry the namespace, so those of other namespaces are left out; except the
// Ingresses that bring TLS hosts or a default backend, which meet across namespaces (one
// certificate per SNI, one default backend). Everything else (Secrets, plugins, consumers,
// vaults, grants) stays whole.
//
// The reduction can only miss a conflict with an object of another namespace, and then the
// review is allowed: the sync loop still leaves the loser out and reports it.
func forNamespace(snap *store.Snapshot, ns string) *store.Snapshot {
	s := *snap
	s.Ingresses = nil
	for _, ing := range snap.Ingresses {
		if ing != nil && (ing.Namespace == ns || crossesNamespaces(ing)) {
			s.Ingresses = append(s.Ingresses, ing)
		}
	}
	s.Services = inNamespace(snap.Services, ns)
	s.EndpointSlices = inNamespace(snap.EndpointSlices, ns)
	s.TCPIngresses = inNamespace(snap.TCPIngresses, ns)
	s.UDPIngresses = inNamespace(snap.UDPIngresses, ns)
	s.KongUpstreamPolicies = inNamespace(snap.KongUpstreamPolicies, ns)
	s.KongIngresses = inNamespace(snap.KongIngresses, ns)
	return &s
}

// crossesNamespaces reports whether ing has what Ingresses of other namespaces compete for.
func crossesNamespaces(ing *netv1.Ingress) bool {
	return len(ing.Spec.TLS) > 0 || ing.Spec.DefaultBackend != nil
}

func inNamespace[T client.Object](list []T, ns string) []T {
	var out []T
	for _, o := range list {
		if o.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out
}
