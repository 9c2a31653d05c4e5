package translator

import (
	"fmt"

	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// GatewayInput is what gatewayapi.Attach reads from a snapshot: the route kinds translated
// with opts (the alpha kinds of routeKindTable only with GatewayAlpha) with their parentRefs,
// and the hostnames of the kinds that match on them.
func GatewayInput(snap *store.Snapshot, opts Options) gatewayapi.Input {
	in := gatewayapi.Input{ControllerName: opts.GatewayControllerName, GatewayClasses: snap.GatewayClasses, Gateways: snap.Gateways,
		NamespaceLabels: snap.NamespaceLabels, ListenerSets: snap.ListenerSets}
	for i := range routeKindTable {
		k := &routeKindTable[i]
		if !routeTranslated(k.kind, opts) {
			continue
		}
		k.each(snap, func(obj client.Object) {
			r, _ := k.input(obj)
			in.Routes = append(in.Routes, r)
		})
	}
	return in
}

// routeInput is a Gateway API route of any kind of routeKindTable as gatewayapi.Attach reads
// it: its kind, its parentRefs and the hostnames of the kinds that match on them.
func routeInput(obj client.Object) gatewayapi.Route {
	for i := range routeKindTable {
		if r, ok := routeKindTable[i].input(obj); ok {
			return r
		}
	}
	panic(fmt.Sprintf("routeInput: %T is not a Gateway API route", obj))
}

// fieldBackendRef is one backendRef of a route with its field, for status and problems.
type fieldBackendRef struct {
	field string
	ref   gatewayv1.BackendRef
}

// eachBackendRef calls f with each backendRef of a route's rules, whatever the route's kind,
// with the index of its rule and its own: routeKindTable knows where each kind keeps its
// backendRefs (the sources, and the splice's closure walk, read them through it).
func eachBackendRef(obj client.Object, f func(rule, i int, be gatewayv1.BackendRef)) {
	for i := range routeKindTable {
		if routeKindTable[i].backendRefs(obj, f) {
			return
		}
	}
}

// routeBackendRefs are the backendRefs of a route's rules, with their fields.
func routeBackendRefs(obj client.Object) []fieldBackendRef {
	var out []fieldBackendRef
	eachBackendRef(obj, func(i, j int, be gatewayv1.BackendRef) {
		out = append(out, fieldBackendRef{fmt.Sprintf("spec.rules[%d].backendRefs[%d]", i, j), be})
	})
	return out
}

// attachedRoute does what translation does first for a Gateway API route of any kind: it
// records the route's Gateways in the graph, reports each parent that did not accept it,
// and records its unresolved backendRefs for ResolvedRefs. It returns the route's
// attachment when some parent accepted the route (then it is translated), else nil.
func (b *builder) attachedRoute(obj client.Object, gvk schema.GroupVersionKind, kind string, parentRefs []gatewayv1.ParentReference,
	refs []fieldBackendRef) *gatewayapi.RouteAttachment {
	ra := b.gw.Route(kind, obj)
	if ra == nil {
		return nil
	}
	for i, p := range ra.Parents {
		gw := p.Gateway.Gateway
		b.refer(obj, gvk, ref(gvkGateway, gw.Namespace, gw.Name))
		parent := "Gateway " + gw.Namespace + "/" + gw.Name
		if ls := p.ListenerSet; ls != nil {
			// The set refers to what decides which of its listeners are left in (gateways).
			b.refer(obj, gvk, ref(gvkListenerSet, ls.ListenerSet.Namespace, ls.ListenerSet.Name))
			parent = "ListenerSet " + ls.ListenerSet.Namespace + "/" + ls.ListenerSet.Name
		}
		if !p.Accepted {
			b.problem(obj, gvk, parentField(parentRefs, p.Ref, i), "not accepted by %s (%s): %s", parent, p.Reason, p.Message)
		}
	}
	b.checkBackendRefs(obj, gvk, ra, refs)
	if !ra.Accepted() {
		return nil
	}
	return ra
}

// parentListeners are KIC's listeners of a route's parents (getGatewayListeningPorts and
// the GRPCRoute hostnames): for each parentRef naming one of our Gateways (or one of its
// ListenerSets: the set's listeners), its listeners of that sectionName, or all of them
// without one. They are read from the route's
// attachment ra (whose parents are those parentRefs, in order; attachedRoute), not from the
// Gateways, so that a translation of some routes only (Incremental, with a view of the
// attachment without Gateways) finds them too.
func parentListeners(ra *gatewayapi.RouteAttachment) []*gatewayv1.Listener {
	var out []*gatewayv1.Listener
	for _, p := range ra.Parents {
		for _, l := range p.ParentListeners() {
			if (p.Ref.SectionName == nil || *p.Ref.SectionName == l.Listener.Name) && (p.Ref.Port == nil || *p.Ref.Port == l.Listener.Port) {
				out = append(out, l.Listener)
			}
		}
	}
	return out
}

// gatewayRuleService is the Kong service of one rule of a GRPCRoute, TCPRoute, TLSRoute or
// UDPRoute (KIC's generateKongServiceFromBackendRefWithRuleNumber): named
// <kind>.<ns>.<name>.<rule>, that name as host, KIC's timeouts and retries, the protocol
// given, its backends resolved from refs (populateGatewayService) and routes.
func (b *builder) gatewayRuleService(obj client.Object, gvk schema.GroupVersionKind, name, field, protocol string,
	refs []gatewayv1.BackendRef, routes []*routeEntry) {
	if e := checkName(name); e != "" {
		b.problem(obj, gvk, field, "Kong service %s; the rule is left out", e)
		return
	}
	if e := checkServiceHost(name); e != "" {
		b.problem(obj, gvk, field, "Kong service %s; the rule is left out", e)
		return
	}
	ks := &kongService{
		routeByKey: map[string]*routeEntry{},
		routes:     routes,
		gateway:    &gatewayBackends{route: obj, gvk: gvk, field: field + ".backendRefs", refs: refs},
		svc:        b.httpKongService(name, name),
	}
	ks.svc.Protocol = kong.String(protocol)
	b.kongServices[name] = ks
}

// claimRouteName reserves a Kong route name for a route of obj, or says why it cannot be used.
func (b *builder) claimRouteName(obj client.Object, gvk schema.GroupVersionKind, name string) string {
	if e := checkName(name); e != "" {
		return "route " + e
	}
	if b.routeNameTaken(obj, gvk, name, "") {
		return fmt.Sprintf("route name %q is already used by another route", name)
	}
	b.countGatewayRoute(obj, gvk)
	return ""
}

// routeNameHolder is the route that has a Kong route name, and the object it comes from.
type routeNameHolder struct {
	key string // the route's key (an Ingress route's; "" for the others)
	obj client.Object
	gvk schema.GroupVersionKind
}

// routeNameTaken reports whether another route has name (one of key, when key is given,
// is the same route); else it gives the name to obj's route.
func (b *builder) routeNameTaken(obj client.Object, gvk schema.GroupVersionKind, name, key string) bool {
	if h, taken := b.routeNames[name]; taken && (key == "" || h.key != key) {
		b.nameTaken = true
		b.contend("route "+name, obj, gvk, h.obj, h.gvk)
		return true
	}
	b.routeNames[name] = routeNameHolder{key, obj, gvk}
	return false
}

// releaseRouteNames frees the names of routes left out.
func (b *builder) releaseRouteNames(routes []*routeEntry) {
	for _, r := range routes {
		delete(b.routeNames, *r.Name)
	}
}

// ruleNameTags are KIC's k8s-named-route-rule tags for the names given, inserted after the
// object's own tags and before the user's (konghq.com/tags).
func (b *builder) ruleNameTags(obj client.Object, gvk schema.GroupVersionKind, names []string) []*string {
	tags := b.tags(obj, gvk)
	base := len(kongstate.RefFor(obj, gvk).Tags())
	out := append([]string(nil), tags[:base]...)
	seen := map[string]bool{}
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, "k8s-named-route-rule:"+n)
		}
	}
	return kong.StringSlice(append(out, tags[base:]...)...)
}

// hasRules reports whether a route (obj, of kind gvk, with rules rules) has any, and reports
// it as KIC does when it has none: no router can route it.
func (b *builder) hasRules(obj client.Object, gvk schema.GroupVersionKind, rules int) bool {
	if rules == 0 {
		b.problem(obj, gvk, "spec.rules", "%s can't be routed: no rules provided", gvk.Kind)
	}
	return rules > 0
}

// routableRoute is what every router checks first of an HTTPRoute or a GRPCRoute: it has
// rules (hasRules), and its route annotations, which it returns, are usable.
func (b *builder) routableRoute(obj client.Object, gvk schema.GroupVersionKind, rules int) (*routeOverrides, bool) {
	if !b.hasRules(obj, gvk, rules) {
		return nil, false
	}
	return b.routeAnnotations(obj, gvk)
}
