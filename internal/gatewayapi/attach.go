package gatewayapi

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// DefaultControllerName is KIC's GatewayClass controllerName (--gateway-api-controller-name),
// so that GatewayClasses of a KIC install are served without change.
const DefaultControllerName = "konghq.com/kic-gateway-controller"

// Group is the Gateway API group.
const Group = gatewayv1.GroupName

// Route kinds.
const (
	KindHTTPRoute = "HTTPRoute"
	KindGRPCRoute = "GRPCRoute"
	KindTCPRoute  = "TCPRoute"
	KindTLSRoute  = "TLSRoute"
	KindUDPRoute  = "UDPRoute"
)

// Input is what attachment reads: the Gateway API objects and the namespaces' labels (for
// allowedRoutes Selector; nil when unknown, in which case Selector admits no namespace).
type Input struct {
	ControllerName  string
	GatewayClasses  []*gatewayv1.GatewayClass
	Gateways        []*gatewayv1.Gateway
	Routes          []Route
	NamespaceLabels map[string]map[string]string
	// ListenerSets add listeners to the Gateways they name (listenerset.go).
	ListenerSets []*gatewayv1.ListenerSet
}

// Route is a route of any kind reduced to what attachment needs.
type Route struct {
	Kind       string
	Object     client.Object
	ParentRefs []gatewayv1.ParentReference
	Hostnames  []gatewayv1.Hostname
}

// Attachment is the answer for one snapshot.
type Attachment struct {
	// Classes are the GatewayClasses whose controllerName is ours, by name.
	Classes map[string]*gatewayv1.GatewayClass
	// Gateways are the Gateways of our classes, sorted by namespace and name.
	Gateways []*Gateway
	// ListenerSets are the ListenerSets naming our Gateways, allowed or not, sorted by
	// namespace and name.
	ListenerSets []*ListenerSet
	routes       map[RouteKey]*RouteAttachment
}

// RouteKey names a route of any kind.
type RouteKey struct{ Kind, Namespace, Name string }

// Gateway is one of our Gateways with its listeners.
type Gateway struct {
	Gateway *gatewayv1.Gateway
	// Listeners are the Gateway's own listeners, in spec order.
	Listeners []*Listener
	// ListenerSets are the ListenerSets naming the Gateway, allowed or not, in the spec's
	// precedence (listenerset.go).
	ListenerSets []*ListenerSet
}

// Listener is one listener of our Gateway.
type Listener struct {
	Listener *gatewayv1.Listener
	// SupportedKinds are the route kinds the listener admits: those of its protocol, limited
	// to allowedRoutes.kinds when given.
	SupportedKinds []gatewayv1.RouteGroupKind
	// InvalidKinds is true when allowedRoutes.kinds names a kind the protocol cannot carry.
	InvalidKinds bool
	// AttachedRoutes counts the routes attached to the listener (each route once).
	AttachedRoutes int32
	attached       map[RouteKey]bool
	// Set is the ListenerSet the listener is of; nil for a Gateway's own listener.
	Set *ListenerSet
	// Conflict is, for a ListenerSet's listener, why a listener of higher precedence keeps
	// its port or hostname (ProtocolConflict, HostnameConflict); "" when none does.
	Conflict gatewayv1.ListenerConditionReason
}

// Parent is the outcome of one parentRef of a route that names one of our Gateways.
type Parent struct {
	Ref gatewayv1.ParentReference
	// Gateway is the Gateway the parentRef names, or the parent Gateway of the ListenerSet
	// it names (ListenerSet).
	Gateway     *Gateway
	ListenerSet *ListenerSet
	Accepted    bool
	// Reason is the Accepted condition's reason (Accepted, NoMatchingParent,
	// NotAllowedByListeners, NoMatchingListenerHostname) and Message says why.
	Reason    gatewayv1.RouteConditionReason
	Message   string
	Listeners []*Listener
}

// RouteAttachment is how one route attaches.
type RouteAttachment struct {
	Route Route
	// Parents are the parentRefs naming our Gateways, in the route's order.
	Parents []*Parent
	// Hostnames are the hostnames the route serves once intersected with the hostnames of
	// the listeners it attached to (KIC's filterHostnames): empty means any host.
	Hostnames []string
	// RefProblems are the backendRefs translation could not resolve, for the route's
	// ResolvedRefs condition; translation adds them (AddRefProblem).
	RefProblems []RefProblem
}

// RefProblem is one unresolved reference of a route, with the spec's ResolvedRefs reason
// (BackendNotFound, RefNotPermitted, InvalidKind).
type RefProblem struct {
	Reason  gatewayv1.RouteConditionReason
	Message string
}

// AddRefProblem records an unresolved reference of the route; nil-safe.
func (r *RouteAttachment) AddRefProblem(reason gatewayv1.RouteConditionReason, message string) {
	if r != nil {
		r.RefProblems = append(r.RefProblems, RefProblem{Reason: reason, Message: message})
	}
}

// Accepted reports whether some parent accepted the route.
func (r *RouteAttachment) Accepted() bool {
	if r == nil {
		return false
	}
	for _, p := range r.Parents {
		if p.Accepted {
			return true
		}
	}
	return false
}

// Route returns the attachment of the route of kind and object, or nil when none of its
// parentRefs names one of our Gateways (then it is not ours, not even for status).
func (a *Attachment) Route(kind string, obj client.Object) *RouteAttachment {
	if a == nil {
		return nil
	}
	return a.routes[RouteKey{kind, obj.GetNamespace(), obj.GetName()}]
}

// Gateway returns our Gateway ns/name, or nil.
func (a *Attachment) Gateway(ns, name string) *Gateway {
	for _, g := range a.Gateways {
		if g.Gateway.Namespace == ns && g.Gateway.Name == name {
			return g
		}
	}
	return nil
}

// Attach decides, for in, which objects are ours and how routes attach.
func Attach(in Input) *Attachment {
	name := in.ControllerName
	if name == "" {
		name = DefaultControllerName
	}
	a := &Attachment{Classes: map[string]*gatewayv1.GatewayClass{}, routes: map[RouteKey]*RouteAttachment{}}
	for _, c := range in.GatewayClasses {
		if c != nil && string(c.Spec.ControllerName) == name {
			a.Classes[c.Name] = c
		}
	}
	for _, g := range in.Gateways {
		if g == nil || a.Classes[string(g.Spec.GatewayClassName)] == nil {
			continue
		}
		gw := &Gateway{Gateway: g}
		for i := range g.Spec.Listeners {
			gw.Listeners = append(gw.Listeners, newListener(&g.Spec.Listeners[i]))
		}
		a.Gateways = append(a.Gateways, gw)
	}
	sort.Slice(a.Gateways, func(i, j int) bool { return byNamespaceName(a.Gateways[i].Gateway, a.Gateways[j].Gateway) })
	a.attachListenerSets(in.ListenerSets, in.NamespaceLabels)
	for _, r := range in.Routes {
		if r.Object == nil {
			continue
		}
		ra := a.attachRoute(r, in.NamespaceLabels)
		if ra == nil {
			continue
		}
		key := RouteKey{r.Kind, r.Object.GetNamespace(), r.Object.GetName()}
		a.routes[key] = ra
		for _, p := range ra.Parents {
			for _, l := range p.Listeners {
				if !l.attached[key] {
					l.attached[key] = true
					l.AttachedRoutes++
				}
			}
		}
	}
	return a
}

// byNamespaceName orders objects by namespace, then name.
func byNamespaceName(x, y client.Object) bool {
	if x.GetNamespace() != y.GetNamespace() {
		return x.GetNamespace() < y.GetNamespace()
	}
	return x.GetName() < y.GetName()
}

// attachRoute is how route r attaches to a's Gateways, nil when it names none of them.
func (a *Attachment) attachRoute(r Route, nsLabels map[string]map[string]string) *RouteAttachment {
	ra := &RouteAttachment{Route: r}
	for _, ref := range r.ParentRefs {
		if ref.Group != nil && string(*ref.Group) != Group {
			continue
		}
		ns := r.Object.GetNamespace()
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		var p *Parent
		switch {
		case ref.Kind == nil || *ref.Kind == "Gateway":
			if gw := a.Gateway(ns, string(ref.Name)); gw != nil {
				p = &Parent{Ref: ref, Gateway: gw}
			}
		case *ref.Kind == KindListenerSet:
			if ls := a.ListenerSet(ns, string(ref.Name)); ls != nil {
				p = &Parent{Ref: ref, Gateway: ls.Gateway, ListenerSet: ls}
			}
		}
		if p != nil {
			attachParent(p, r, nsLabels)
			ra.Parents = append(ra.Parents, p)
		}
	}
	if len(ra.Parents) == 0 {
		return nil
	}
	ra.Hostnames = effectiveHostnames(ra)
	return ra
}

// protocolKinds are the route kinds each listener protocol carries (KIC serves GRPCRoute on
// HTTP and HTTPS listeners).
func protocolKinds(p gatewayv1.ProtocolType) []string {
	switch p {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType:
		return []string{KindHTTPRoute, KindGRPCRoute}
	case gatewayv1.TLSProtocolType:
		return []string{KindTLSRoute}
	case gatewayv1.TCPProtocolType:
		return []string{KindTCPRoute}
	case gatewayv1.UDPProtocolType:
		return []string{KindUDPRoute}
	}
	return nil
}

func newListener(l *gatewayv1.Listener) *Listener {
	out := &Listener{Listener: l, attached: map[RouteKey]bool{}}
	kinds := protocolKinds(l.Protocol)
	group := gatewayv1.Group(Group)
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		for _, k := range kinds {
			out.SupportedKinds = append(out.SupportedKinds, gatewayv1.RouteGroupKind{Group: &group, Kind: gatewayv1.Kind(k)})
		}
		return out
	}
	for _, want := range l.AllowedRoutes.Kinds {
		ok := want.Group == nil || string(*want.Group) == Group
		if ok {
			ok = false
			for _, k := range kinds {
				ok = ok || string(want.Kind) == k
			}
		}
		if !ok {
			out.InvalidKinds = true
			continue
		}
		out.SupportedKinds = append(out.SupportedKinds, gatewayv1.RouteGroupKind{Group: &group, Kind: want.Kind})
	}
	return out
}

func (l *Listener) admitsKind(kind string) bool {
	for _, k := range l.SupportedKinds {
		if string(k.Kind) == kind {
			return true
		}
	}
	return false
}

// admitsNamespace applies allowedRoutes.namespaces: Same (the default: ownerNS, the namespace
// of the listener's Gateway or ListenerSet), All, or Selector.
func (l *Listener) admitsNamespace(ownerNS, routeNS string, nsLabels map[string]map[string]string) bool {
	from := gatewayv1.NamespacesFromSame
	var sel *gatewayv1.RouteNamespaces
	if l.Listener.AllowedRoutes != nil && l.Listener.AllowedRoutes.Namespaces != nil {
		sel = l.Listener.AllowedRoutes.Namespaces
		if sel.From != nil {
			from = *sel.From
		}
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSelector:
		if sel == nil || sel.Selector == nil {
			return false
		}
		return selectorAdmits(sel.Selector, routeNS, nsLabels)
	default:
		return ownerNS == routeNS
	}
}

// hostnameCarrying reports whether a listener of protocol p matches on hostnames.
func hostnameCarrying(p gatewayv1.ProtocolType) bool {
	return p == gatewayv1.HTTPProtocolType || p == gatewayv1.HTTPSProtocolType || p == gatewayv1.TLSProtocolType
}

// attachParent decides whether parent p (Ref and Gateway or ListenerSet set) accepts route r,
// and with which listeners.
func attachParent(p *Parent, r Route, nsLabels map[string]map[string]string) {
	ref := p.Ref
	if p.ListenerSet != nil && !p.ListenerSet.Attached() {
		p.Reason, p.Message = gatewayv1.RouteReasonNoMatchingParent, "the ListenerSet is not attached to its Gateway (see its Accepted condition)"
		return
	}
	var candidates []*Listener
	for _, l := range p.ParentListeners() {
		if ref.SectionName != nil && *ref.SectionName != l.Listener.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.Listener.Port {
			continue
		}
		candidates = append(candidates, l)
	}
	if len(candidates) == 0 {
		p.Reason, p.Message = gatewayv1.RouteReasonNoMatchingParent, "no listener matches the parentRef's sectionName and port"
		return
	}
	var allowed []*Listener
	for _, l := range candidates {
		if l.admitsKind(r.Kind) && l.admitsNamespace(p.Namespace(), r.Object.GetNamespace(), nsLabels) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		p.Reason, p.Message = gatewayv1.RouteReasonNotAllowedByListeners, "no matching listener allows routes of this kind from this namespace"
		return
	}
	for _, l := range allowed {
		if !hostnameCarrying(l.Listener.Protocol) || l.Listener.Hostname == nil || *l.Listener.Hostname == "" || len(r.Hostnames) == 0 {
			p.Listeners = append(p.Listeners, l)
			continue
		}
		for _, h := range r.Hostnames {
			if Intersection(string(*l.Listener.Hostname), string(h)) != "" {
				p.Listeners = append(p.Listeners, l)
				break
			}
		}
	}
	if len(p.Listeners) == 0 {
		p.Reason, p.Message = gatewayv1.RouteReasonNoMatchingListenerHostname, "no hostname of the route matches the hostname of a listener"
		return
	}
	p.Accepted, p.Reason, p.Message = true, gatewayv1.RouteReasonAccepted, "accepted"
}

// effectiveHostnames is KIC's filterHostnames over the accepted parents' listeners: a route
// without hostnames takes the union of the listeners' hostnames, or any host when one of
// them has none; a route with hostnames keeps, for each, the more specific side of its
// intersection with a listener's hostname.
func effectiveHostnames(ra *RouteAttachment) []string {
	var listeners []*Listener
	for _, p := range ra.Parents {
		if p.Accepted {
			listeners = append(listeners, p.Listeners...)
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		if h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	if len(ra.Route.Hostnames) == 0 {
		for _, l := range listeners {
			if l.Listener.Hostname == nil || *l.Listener.Hostname == "" {
				return nil
			}
			add(string(*l.Listener.Hostname))
		}
		return out
	}
	for _, h := range ra.Route.Hostnames {
		for _, l := range listeners {
			if l.Listener.Hostname == nil || *l.Listener.Hostname == "" {
				add(string(h))
				break
			}
			if m := Intersection(string(*l.Listener.Hostname), string(h)); m != "" {
				add(m)
				break
			}
		}
	}
	return out
}

// Intersection returns the more specific of listener and route hostnames when they
// intersect ("*.example.com" and "foo.example.com" give "foo.example.com"), else "".
func Intersection(listener, route string) string {
	switch {
	case listener == route:
		return route
	case strings.HasPrefix(listener, "*.") && strings.HasSuffix(route, listener[1:]) && !strings.HasPrefix(route, "*."):
		return route
	case strings.HasPrefix(route, "*.") && strings.HasSuffix(listener, route[1:]) && !strings.HasPrefix(listener, "*."):
		return listener
	case strings.HasPrefix(listener, "*.") && strings.HasPrefix(route, "*."):
		if strings.HasSuffix(route, listener[1:]) {
			return route
		}
		if strings.HasSuffix(listener, route[1:]) {
			return listener
		}
	}
	return ""
}

// GrantAllows reports whether a ReferenceGrant in namespace toNS lets objects of fromGVK in
// fromNS refer to the object of group toGroup, kind toKind and name toName there, and returns
// the grant (for the object graph). References within one namespace need no grant.
func GrantAllows(grants []*gatewayv1beta1.ReferenceGrant, from schema.GroupVersionKind, fromNS, toGroup, toKind, toNS, toName string) (*gatewayv1beta1.ReferenceGrant, bool) {
	if fromNS == toNS {
		return nil, true
	}
	for _, g := range grants {
		if g == nil || g.Namespace != toNS {
			continue
		}
		fromOK := false
		for _, f := range g.Spec.From {
			if string(f.Group) == from.Group && string(f.Kind) == from.Kind && string(f.Namespace) == fromNS {
				fromOK = true
				break
			}
		}
		if !fromOK {
			continue
		}
		for _, t := range g.Spec.To {
			if string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || *t.Name == "" || string(*t.Name) == toName) {
				return g, true
			}
		}
	}
	return nil, false
}
