package admission

import (
	"slices"
	"strings"

	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/store"
)

// reviewScope is the part of the cache a review translates: the reviewed object's namespace
// and the other namespaces whose Services it sends traffic to (an HTTPRoute's backendRefs,
// with a ReferenceGrant). The zero scope is the whole cache: cluster-scoped objects, and
// Gateways, which routes of every namespace attach to.
type reviewScope struct {
	namespace string
	// backendNamespaces are the other namespaces, sorted, without namespace.
	backendNamespaces []string
}

// whole reports whether s is the whole cache.
func (s reviewScope) whole() bool { return s.namespace == "" }

// key names s among the cached translations.
func (s reviewScope) key() string {
	return strings.Join(append([]string{s.namespace}, s.backendNamespaces...), ",")
}

// existing is s without the backend namespaces that do not exist in snap: a backendRef to
// one resolves to nothing, and a review that names many must not make the scope vary.
func (s reviewScope) existing(snap *store.Snapshot) reviewScope {
	if s.whole() {
		return s
	}
	out := reviewScope{namespace: s.namespace}
	for _, ns := range s.backendNamespaces {
		if namespaceExists(snap, ns) {
			out.backendNamespaces = append(out.backendNamespaces, ns)
		}
	}
	return out
}

// exists reports whether s's namespace exists in snap (the whole cache always does).
func (s reviewScope) exists(snap *store.Snapshot) bool {
	return s.whole() || namespaceExists(snap, s.namespace)
}

// namespaceExists reports whether snap knows namespace ns: as a Namespace (when the store
// reads them) or as the namespace of an object it holds. An empty namespace the store does
// not read Namespaces of is then unknown, which costs its first review a translation of its
// own, nothing else.
func namespaceExists(snap *store.Snapshot, ns string) bool {
	if _, ok := snap.NamespaceLabels[ns]; ok {
		return true
	}
	found := false
	snap.Select(func(_ schema.GroupVersionKind, obj client.Object) bool {
		found = found || obj.GetNamespace() == ns
		return false
	})
	return found
}

// scopeOf is the scope a change of obj (of kind k) is translated in.
func scopeOf(k store.Kind, obj client.Object) reviewScope {
	if k == store.KindGateway {
		return reviewScope{}
	}
	s := reviewScope{namespace: obj.GetNamespace()}
	if hr, ok := obj.(*gatewayv1.HTTPRoute); ok {
		for _, ns := range backendNamespaces(hr) {
			if ns != s.namespace && !slices.Contains(s.backendNamespaces, ns) {
				s.backendNamespaces = append(s.backendNamespaces, ns)
			}
		}
		slices.Sort(s.backendNamespaces)
	}
	return s
}

// backendNamespaces lists the namespaces of hr's backendRefs (its own when a ref names none).
func backendNamespaces(hr *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, rule := range hr.Spec.Rules {
		for _, be := range rule.BackendRefs {
			ns := hr.Namespace
			if be.Namespace != nil && *be.Namespace != "" {
				ns = string(*be.Namespace)
			}
			out = append(out, ns)
		}
	}
	return out
}

// forScope is snap reduced to what a change in scope s can meet, so that a review in a
// cluster of thousands of Ingresses translates hundreds. Ingresses, Services,
// EndpointSlices, TCP/UDPIngresses, KongUpstreamPolicies and KongIngresses only ever refer to
// objects of their own namespace, and the Kong names made of them (services, routes,
// upstreams) carry the namespace, so those of other namespaces are left out; except the
// Ingresses that bring TLS hosts or a default backend, which meet across namespaces (one
// certificate per SNI, one default backend). HTTPRoutes are kept when in the namespace or
// sending traffic to one of its Services (their Kong names carry their namespace too), and
// the Services and EndpointSlices of s's backend namespaces are kept for the reviewed
// route's backendRefs. Everything else (Secrets, plugins, consumers, vaults, grants,
// Gateways) stays whole.
//
// The reduction can only miss a conflict with an object of another namespace, and then the
// review is allowed: the sync loop still leaves the loser out and reports it.
func forScope(snap *store.Snapshot, s reviewScope) *store.Snapshot {
	if s.whole() {
		return snap
	}
	ns := s.namespace
	out := *snap
	out.Ingresses = nil
	for _, ing := range snap.Ingresses {
		if ing != nil && (ing.Namespace == ns || crossesNamespaces(ing)) {
			out.Ingresses = append(out.Ingresses, ing)
		}
	}
	out.HTTPRoutes = nil
	for _, hr := range snap.HTTPRoutes {
		if hr != nil && (hr.Namespace == ns || slices.Contains(backendNamespaces(hr), ns)) {
			out.HTTPRoutes = append(out.HTTPRoutes, hr)
		}
	}
	serviceNamespaces := append([]string{ns}, s.backendNamespaces...)
	out.Services = inNamespaces(snap.Services, serviceNamespaces)
	out.EndpointSlices = inNamespaces(snap.EndpointSlices, serviceNamespaces)
	out.TCPIngresses = inNamespaces(snap.TCPIngresses, []string{ns})
	out.UDPIngresses = inNamespaces(snap.UDPIngresses, []string{ns})
	out.KongUpstreamPolicies = inNamespaces(snap.KongUpstreamPolicies, []string{ns})
	out.KongIngresses = inNamespaces(snap.KongIngresses, []string{ns})
	return &out
}

// crossesNamespaces reports whether ing has what Ingresses of other namespaces compete for.
func crossesNamespaces(ing *netv1.Ingress) bool {
	return len(ing.Spec.TLS) > 0 || ing.Spec.DefaultBackend != nil
}

func inNamespaces[T client.Object](list []T, namespaces []string) []T {
	var out []T
	for _, o := range list {
		if slices.Contains(namespaces, o.GetNamespace()) {
			out = append(out, o)
		}
	}
	return out
}
