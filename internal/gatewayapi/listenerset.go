package gatewayapi

import (
	"sort"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// KindListenerSet is the kind of a ListenerSet, as a route's parentRef names it.
const KindListenerSet = "ListenerSet"

// ListenerSet is a ListenerSet whose parentRef names one of our Gateways (GEP-1713): its
// listeners join the Gateway's when the Gateway's spec.allowedListeners admit the set's
// namespace, after the Gateway's own and those of older sets.
type ListenerSet struct {
	ListenerSet *gatewayv1.ListenerSet
	Gateway     *Gateway
	// Allowed says whether the Gateway's allowedListeners admit the set (None by default).
	Allowed bool
	// Listeners are the set's listeners, in spec order; their Set is this set.
	Listeners []*Listener
}

// Attached reports whether the set's listeners join its Gateway's: the Gateway allows it
// and at least one of its listeners is usable (Usable). Status refines this with what
// attachment does not read (certificates, the ports Kong serves).
func (s *ListenerSet) Attached() bool {
	if !s.Allowed {
		return false
	}
	for _, l := range s.Listeners {
		if l.Usable() {
			return true
		}
	}
	return false
}

// Usable reports whether a listener takes part in routing as attachment sees it: a
// Gateway's own listener always (its conflicts are reported, as in KIC, and it stays); a
// ListenerSet's when its set is allowed, its protocol is one konductor serves, and no
// listener of higher precedence conflicts with it.
func (l *Listener) Usable() bool {
	if l.Set == nil {
		return true
	}
	return l.Set.Allowed && l.Conflict == "" && protocolKinds(l.Listener.Protocol) != nil
}

// ListenerSet returns our ListenerSet ns/name, or nil.
func (a *Attachment) ListenerSet(ns, name string) *ListenerSet {
	i := sort.Search(len(a.ListenerSets), func(i int) bool {
		s := a.ListenerSets[i].ListenerSet
		return s.Namespace > ns || s.Namespace == ns && s.Name >= name
	})
	if i < len(a.ListenerSets) && a.ListenerSets[i].ListenerSet.Namespace == ns && a.ListenerSets[i].ListenerSet.Name == name {
		return a.ListenerSets[i]
	}
	return nil
}

// attachListenerSets gives each of a's Gateways the ListenerSets of sets that name it, in
// the spec's precedence (the oldest first, then by namespace/name), judges whether the
// Gateway allows each, and marks each set listener that conflicts with one of higher
// precedence (listenerConflicts). a.ListenerSets are all of them, by namespace/name.
func (a *Attachment) attachListenerSets(sets []*gatewayv1.ListenerSet, nsLabels map[string]map[string]string) {
	for _, s := range sets {
		if s == nil {
			continue
		}
		ns, name, ok := ParentGateway(s)
		if !ok {
			continue
		}
		gw := a.Gateway(ns, name)
		if gw == nil {
			continue
		}
		ls := &ListenerSet{ListenerSet: s, Gateway: gw, Allowed: allowsListenerSet(gw.Gateway, s.Namespace, nsLabels)}
		for i := range s.Spec.Listeners {
			entry := gatewayv1.Listener(s.Spec.Listeners[i])
			l := newListener(&entry)
			l.Set = ls
			ls.Listeners = append(ls.Listeners, l)
		}
		gw.ListenerSets = append(gw.ListenerSets, ls)
		a.ListenerSets = append(a.ListenerSets, ls)
	}
	sort.Slice(a.ListenerSets, func(i, j int) bool {
		return byNamespaceName(a.ListenerSets[i].ListenerSet, a.ListenerSets[j].ListenerSet)
	})
	for _, gw := range a.Gateways {
		sort.SliceStable(gw.ListenerSets, func(i, j int) bool {
			return Precedes(gw.ListenerSets[i].ListenerSet, gw.ListenerSets[j].ListenerSet)
		})
		listenerConflicts(gw)
	}
}

// ParentGateway is the namespace and name of the Gateway ListenerSet s names in its
// parentRef (the set's namespace when the ref gives none), and false when the parentRef
// names another kind than a Gateway.
func ParentGateway(s *gatewayv1.ListenerSet) (ns, name string, ok bool) {
	ref := s.Spec.ParentRef
	if (ref.Group != nil && string(*ref.Group) != Group) || (ref.Kind != nil && string(*ref.Kind) != "Gateway") {
		return "", "", false
	}
	ns = s.Namespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return ns, string(ref.Name), true
}

// allowsListenerSet applies a Gateway's spec.allowedListeners.namespaces to a ListenerSet in
// namespace ns: None (the default), Same, All or Selector.
func allowsListenerSet(gw *gatewayv1.Gateway, ns string, nsLabels map[string]map[string]string) bool {
	al := gw.Spec.AllowedListeners
	if al == nil || al.Namespaces == nil || al.Namespaces.From == nil {
		return false
	}
	switch *al.Namespaces.From {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSame:
		return ns == gw.Namespace
	case gatewayv1.NamespacesFromSelector:
		return al.Namespaces.Selector != nil && selectorAdmits(al.Namespaces.Selector, ns, nsLabels)
	}
	return false
}

// listenerConflicts marks the listeners of gw's allowed ListenerSets that conflict with a
// listener of higher precedence (the Gateway's own, then the usable ones of the sets before,
// and of the same set before it): ProtocolConflict when they cannot share the port
// (SharePort), HostnameConflict when they share it by hostname and have the same one. Unlike
// conflicts among a Gateway's own listeners (every one involved is marked, as in KIC), only
// the set's listener is marked: the spec's precedence keeps the other.
func listenerConflicts(gw *Gateway) {
	taken := append([]*Listener(nil), gw.Listeners...)
	for _, s := range gw.ListenerSets {
		if !s.Allowed {
			continue
		}
		for _, l := range s.Listeners {
			for _, m := range taken {
				if reason := Conflict(l.Listener, m.Listener); reason != "" {
					l.Conflict = reason
					if reason == gatewayv1.ListenerReasonProtocolConflict {
						break
					}
				}
			}
			if l.Usable() {
				taken = append(taken, l)
			}
		}
	}
}

// Conflict is why listeners l and m cannot both serve (ProtocolConflict,
// HostnameConflict), or "" when they can: another port, protocols that share one (SharePort),
// told apart by hostname when they must be.
func Conflict(l, m *gatewayv1.Listener) gatewayv1.ListenerConditionReason {
	if l.Port != m.Port {
		return ""
	}
	ok, byHostname := SharePort(l.Protocol, m.Protocol)
	switch {
	case !ok:
		return gatewayv1.ListenerReasonProtocolConflict
	case byHostname && hostnameOf(l) == hostnameOf(m):
		return gatewayv1.ListenerReasonHostnameConflict
	}
	return ""
}

func hostnameOf(l *gatewayv1.Listener) string {
	if l.Hostname == nil {
		return ""
	}
	return string(*l.Hostname)
}

// SharePort reports whether listeners of protocols a and b may share a port: HTTP with
// HTTP, HTTPS and TLS with each other (then told apart by hostname), TCP with UDP (different
// transports). KIC's canSharePort, except that KIC also refuses TCP with UDP, which the spec
// and Kong's stream listens (a "udp" listen beside a TCP one) allow.
func SharePort(a, b gatewayv1.ProtocolType) (ok, byHostname bool) {
	tlsish := func(p gatewayv1.ProtocolType) bool {
		return p == gatewayv1.HTTPSProtocolType || p == gatewayv1.TLSProtocolType
	}
	switch {
	case a == gatewayv1.HTTPProtocolType && b == gatewayv1.HTTPProtocolType, tlsish(a) && tlsish(b):
		return true, true
	case a == gatewayv1.TCPProtocolType && b == gatewayv1.UDPProtocolType, a == gatewayv1.UDPProtocolType && b == gatewayv1.TCPProtocolType:
		return true, false
	}
	return false, false
}

// AllListeners are the listeners of gw that take part in routing: its own, then those of
// its attached ListenerSets that are usable, in precedence order.
func (g *Gateway) AllListeners() []*Listener {
	out := append([]*Listener(nil), g.Listeners...)
	for _, s := range g.ListenerSets {
		for _, l := range s.Listeners {
			if l.Usable() {
				out = append(out, l)
			}
		}
	}
	return out
}

// ParentListeners are the listeners of the object a parentRef names: a Gateway's own (not
// its ListenerSets': a route attaches to those through the set), or a ListenerSet's usable
// ones (none when the set is not attached).
func (p *Parent) ParentListeners() []*Listener {
	if p.ListenerSet == nil {
		return p.Gateway.Listeners
	}
	var out []*Listener // none when the set is not attached: it has no usable listener
	for _, l := range p.ListenerSet.Listeners {
		if l.Usable() {
			out = append(out, l)
		}
	}
	return out
}

// Namespace is the namespace a listener's allowedRoutes "Same" means: its ListenerSet's, or
// its Gateway's.
func (p *Parent) Namespace() string {
	if p.ListenerSet != nil {
		return p.ListenerSet.ListenerSet.Namespace
	}
	return p.Gateway.Gateway.Namespace
}
