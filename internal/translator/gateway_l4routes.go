package translator

import (
	"fmt"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// l4Rule is one rule of a TCPRoute, TLSRoute or UDPRoute reduced to what translation reads.
type l4Rule struct {
	name        *gatewayv1.SectionName
	backendRefs []gatewayv1.BackendRef
}

// l4GatewayRoute is a TCPRoute, TLSRoute or UDPRoute reduced to what translation reads.
type l4GatewayRoute struct {
	obj        client.Object
	gvk        schema.GroupVersionKind
	kind       string
	prefix     string // of Kong names: tcproute, tlsroute, udproute
	parentRefs []gatewayv1.ParentReference
	hostnames  []gatewayv1.Hostname
	rules      []l4Rule
}

// l4Routes translates the TCPRoutes, UDPRoutes and TLSRoutes attached to our Gateways into
// Kong stream routes as KIC does (docs/kong-facts.md "TCPRoute, UDPRoute, TLSRoute"), each
// kind oldest first: every rule is a Kong service <kind>.<ns>.<name>.<rule> (protocol tcp,
// or udp for a UDPRoute) with one route <kind>.<ns>.<name>.<rule>.0. A TCPRoute's or
// UDPRoute's route matches the ports of its parent listeners of its protocol
// (destinations); a TLSRoute's matches its hostnames (snis), with protocol tls, or
// tls_passthrough when a parent listener passes TLS through. Under the expressions router
// the route matches by KIC's expression instead of destinations and snis (kong_streamexpressions.go).
func (b *builder) l4Routes() {
	var all []l4GatewayRoute
	all = appendL4Routes(all, b.snap.TCPRoutes, func(r *gatewayv1.TCPRoute) l4GatewayRoute {
		gr := l4GatewayRoute{obj: r, gvk: gvkTCPRoute, kind: gatewayapi.KindTCPRoute, prefix: "tcproute", parentRefs: r.Spec.ParentRefs}
		for _, rule := range r.Spec.Rules {
			gr.rules = append(gr.rules, l4Rule{rule.Name, rule.BackendRefs})
		}
		return gr
	})
	all = appendL4Routes(all, b.snap.UDPRoutes, func(r *gatewayv1.UDPRoute) l4GatewayRoute {
		gr := l4GatewayRoute{obj: r, gvk: gvkUDPRoute, kind: gatewayapi.KindUDPRoute, prefix: "udproute", parentRefs: r.Spec.ParentRefs}
		for _, rule := range r.Spec.Rules {
			gr.rules = append(gr.rules, l4Rule{rule.Name, rule.BackendRefs})
		}
		return gr
	})
	all = appendL4Routes(all, b.snap.TLSRoutes, func(r *gatewayv1.TLSRoute) l4GatewayRoute {
		gr := l4GatewayRoute{obj: r, gvk: gvkTLSRoute, kind: gatewayapi.KindTLSRoute, prefix: "tlsroute", parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames}
		for _, rule := range r.Spec.Rules {
			gr.rules = append(gr.rules, l4Rule{rule.Name, rule.BackendRefs})
		}
		return gr
	})
	ports := portOwners{}
	for _, gr := range all {
		ra := b.attachedRoute(gr.obj, gr.gvk, gr.kind, gr.parentRefs, routeBackendRefs(gr.obj))
		if ra == nil {
			continue
		}
		b.l4GatewayRoute(gr, parentListeners(ra), ports)
	}
}

// portOwners are the TCPRoutes and UDPRoutes that took each Kong stream port ("TCP/9000"):
// the oldest route naming a port gets its connections (the spec: only the oldest route
// attached to a listener receives traffic). One Kong serves every Gateway, so a port is one
// Kong listen whichever Gateway's listener names it; and Kong picks among stream routes that
// match alike by route ID (the ATC router's tie-break), not by age, so the newer routes must
// not have the port at all. KIC sends them all.
type portOwners map[string]client.Object

// appendL4Routes appends the routes of objs, oldest first, reduced by reduce.
func appendL4Routes[E any, T interface {
	*E
	client.Object
}](all []l4GatewayRoute, objs []T, reduce func(T) l4GatewayRoute) []l4GatewayRoute {
	sorted := objects(objs)
	sortByAge(sorted)
	for _, o := range sorted {
		all = append(all, reduce(o.(T)))
	}
	return all
}

// l4GatewayRoute translates gr, whose parent listeners are listeners (parentListeners); a
// TCPRoute or UDPRoute takes the ports of ports no older route took.
func (b *builder) l4GatewayRoute(gr l4GatewayRoute, listeners []*gatewayv1.Listener, ports portOwners) {
	fail := func(field, format string, args ...any) {
		b.problem(gr.obj, gr.gvk, field, "%s can't be routed: %s", gr.kind, fmt.Sprintf(format, args...))
	}
	if gr.kind == gatewayapi.KindTLSRoute && len(gr.hostnames) == 0 {
		fail("spec.hostnames", "no hostnames provided")
		return
	}
	if len(gr.rules) == 0 {
		fail("spec.rules", "no rules provided")
		return
	}
	var protocols []string
	var destinations []*kong.CIDRPort
	serviceProtocol := "tcp"
	switch gr.kind {
	case gatewayapi.KindTCPRoute, gatewayapi.KindUDPRoute:
		want := gatewayv1.TCPProtocolType
		protocols = []string{"tcp"}
		if gr.kind == gatewayapi.KindUDPRoute {
			want, protocols, serviceProtocol = gatewayv1.UDPProtocolType, []string{"udp"}, "udp"
		}
		var taken []string
		for _, l := range listeners {
			if l.Protocol != want {
				continue
			}
			key := fmt.Sprintf("%s/%d", want, l.Port)
			if owner, ok := ports[key]; ok && owner != gr.obj {
				taken = append(taken, fmt.Sprintf("%d (%s)", l.Port, client.ObjectKeyFromObject(owner)))
				continue
			}
			ports[key] = gr.obj
			destinations = append(destinations, &kong.CIDRPort{Port: kong.Int(int(l.Port))})
		}
		if len(taken) > 0 && len(destinations) == 0 {
			fail("spec.parentRefs", "every port of its listeners is taken by an older %s: %s; only the oldest route on a port gets its connections",
				gr.kind, strings.Join(taken, ", "))
			return
		}
		if len(taken) > 0 {
			b.problems = append(b.problems, Problem{Object: kongstate.RefFor(gr.obj, gr.gvk), Field: "spec.parentRefs", Warning: true,
				Message: fmt.Sprintf("ports taken by an older %s are left to it: %s; only the oldest route on a port gets its connections",
					gr.kind, strings.Join(taken, ", "))})
		}
		if len(destinations) == 0 {
			// KIC would send a stream route that matches nothing, which Kong refuses.
			fail("spec.parentRefs", "no parent listener of protocol %s gives it a port", want)
			return
		}
	case gatewayapi.KindTLSRoute:
		protocols = []string{"tls"}
		for _, l := range listeners {
			if l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModePassthrough && hostnamesReach(l, gr.hostnames) {
				protocols = []string{"tls_passthrough"}
			}
		}
	}
	// Under the expressions router the hostnames are put in KIC's expression, filtered by
	// its rule instead of Kong's (kong_streamexpressions.go); a TLSRoute none of whose hostnames is
	// left would be an empty expression, which Kong refuses.
	var expr string
	if b.opts.ExpressionRoutes {
		var snis []string
		for _, h := range gr.hostnames {
			snis = append(snis, string(h))
		}
		expr, _ = l4Expression(snis, destinationPorts(destinations))
		if expr == "" {
			fail("spec.hostnames", "no hostname KIC's expression can match (only plain hostnames, no wildcard, go in tls.sni under the expressions router)")
			return
		}
		for h, host := range gr.hostnames {
			if !kicValidSNI.MatchString(string(host)) {
				b.warnSkippedSNI(gr.obj, gr.gvk, fmt.Sprintf("spec.hostnames[%d]", h), string(host), "the route matches its other hostnames only")
			}
		}
	}
	// KIC stops at the first rule it cannot translate; the rules before it stay.
	for i, rule := range gr.rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		if len(rule.backendRefs) == 0 && gr.kind != gatewayapi.KindTLSRoute {
			fail(field+".backendRefs", "%s rules must include at least one backendRef", gr.kind)
			return
		}
		name := fmt.Sprintf("%s.%s.%s.%d.0", gr.prefix, gr.obj.GetNamespace(), gr.obj.GetName(), i)
		if e := b.claimRouteName(gr.obj, gr.gvk, name); e != "" {
			fail(field, "%s", e)
			return
		}
		var ruleName []string
		if rule.name != nil {
			ruleName = []string{string(*rule.name)}
		}
		r := &file.FRoute{Route: kong.Route{
			ID:           kong.String(kongstate.RouteID(b.opts.Workspace, name)),
			Name:         kong.String(name),
			Protocols:    kong.StringSlice(protocols...),
			Destinations: destinations,
			Tags:         b.ruleNameTags(gr.obj, gr.gvk, ruleName),
		}}
		if b.opts.ExpressionRoutes {
			setL4Expression(&r.Route, expr) // hostnames are in expr, not snis Kong checks
		} else {
			for h, host := range gr.hostnames {
				if e := checkSNI(string(host)); e != "" {
					fail(fmt.Sprintf("spec.hostnames[%d]", h), "%s", e)
					b.releaseRouteNames([]*routeEntry{{FRoute: r}})
					return
				}
				r.SNIs = append(r.SNIs, kong.String(string(host)))
			}
		}
		svcName := fmt.Sprintf("%s.%s.%s.%d", gr.prefix, gr.obj.GetNamespace(), gr.obj.GetName(), i)
		b.gatewayRuleService(gr.obj, gr.gvk, svcName, field, serviceProtocol, rule.backendRefs,
			[]*routeEntry{{FRoute: r, src: gr.obj, srcGVK: gr.gvk}})
	}
}

// hostnamesReach says whether a route with hostnames attaches to listener l by hostname (a
// listener without one takes every hostname). KIC reads the TLS mode of every listener of a
// TLSRoute's parentRefs, so that a Terminate listener's route becomes tls_passthrough when a
// Passthrough listener for other hostnames shares the Gateway (TLSRouteModeMixed); only the
// listeners the route's hostnames reach say how Kong must take its connections.
func hostnamesReach(l *gatewayv1.Listener, hostnames []gatewayv1.Hostname) bool {
	if l.Hostname == nil || *l.Hostname == "" {
		return true
	}
	for _, h := range hostnames {
		if gatewayapi.Intersection(string(*l.Hostname), string(h)) != "" {
			return true
		}
	}
	return false
}
