package translator

import (
	"fmt"
	"regexp"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// grpcRoutes translates the GRPCRoutes attached to our Gateways as KIC's traditional router
// translation does (docs/kong-facts.md "GRPCRoute"), oldest first:
//
//   - Each rule is a Kong service grpcroute.<ns>.<name>.<rule>, protocol "grpc" when a parent
//     listener (of the parentRef's sectionName) is HTTP, else "grpcs".
//   - Each match is a Kong route grpcroute.<ns>.<name>.<rule>.<match>, protocols grpc and
//     grpcs, path "~/<service>/<method>" from the method match, headers from the header
//     matches; a rule without matches is route <rule>.0, on the route's hosts or, without
//     any, on path "/".
//   - Hosts are the route's hostnames, or else the hostnames of its parent listeners.
//
// A match Kong would refuse (an invalid regex, ...) is left out and reported: the rule's other
// matches and the other rules go on (KIC sends it, and Kong refuses the whole configuration).
func (b *builder) grpcRoutes() {
	routes := append([]*gatewayv1.GRPCRoute(nil), b.snap.GRPCRoutes...)
	sortByAge(routes)
	var expressions []attachedGRPCRoute
	for _, gr := range routes {
		if gr == nil {
			continue
		}
		ra := b.attachedRoute(gr, gvkGRPCRoute, gatewayapi.KindGRPCRoute, gr.Spec.ParentRefs, routeBackendRefs(gr))
		if ra == nil {
			continue
		}
		if b.opts.ExpressionRoutes {
			expressions = append(expressions, attachedGRPCRoute{gr, parentListeners(ra)})
			continue
		}
		b.grpcRoute(gr, parentListeners(ra))
	}
	if b.opts.ExpressionRoutes {
		b.grpcRoutesExpressions(expressions)
	}
}

// attachedGRPCRoute is a GRPCRoute that a parent accepted, with its parent listeners.
type attachedGRPCRoute struct {
	route     *gatewayv1.GRPCRoute
	listeners []*gatewayv1.Listener
}

// grpcRouteHosts are the hosts of gr's routes: its hostnames, or else the hostnames of its
// parent listeners.
func grpcRouteHosts(gr *gatewayv1.GRPCRoute, listeners []*gatewayv1.Listener) []string {
	var hosts []string
	for _, h := range gr.Spec.Hostnames {
		hosts = append(hosts, string(h))
	}
	if len(hosts) == 0 {
		for _, l := range listeners {
			if l.Hostname != nil {
				hosts = append(hosts, string(*l.Hostname))
			}
		}
	}
	return hosts
}

// grpcRoute translates gr, whose parent listeners are listeners (parentListeners).
func (b *builder) grpcRoute(gr *gatewayv1.GRPCRoute, listeners []*gatewayv1.Listener) {
	ro, ok := b.routableRoute(gr, gvkGRPCRoute, len(gr.Spec.Rules))
	if !ok {
		return
	}
	protocol := grpcServiceProtocol(listeners)
	hosts := grpcRouteHosts(gr, listeners)
	// KIC tags every route of a GRPCRoute with the names of all its rules.
	var ruleNames []string
	for _, rule := range gr.Spec.Rules {
		if rule.Name != nil {
			ruleNames = append(ruleNames, string(*rule.Name))
		}
	}
	tags := b.ruleNameTags(gr, gvkGRPCRoute, ruleNames)
	for i, rule := range gr.Spec.Rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		if len(rule.Filters) > 0 {
			// KIC's traditional router translation ignores GRPCRoute filters; say so rather
			// than drop them silently.
			b.problem(gr, gvkGRPCRoute, field+".filters", "GRPCRoute filters are not supported; they are ignored")
		}
		routes := b.grpcRuleRoutes(gr, ro, i, hosts, tags)
		if len(routes) == 0 {
			continue // each left-out route is reported
		}
		var backendRefs []gatewayv1.BackendRef
		for _, be := range rule.BackendRefs {
			backendRefs = append(backendRefs, be.BackendRef)
		}
		name := fmt.Sprintf("grpcroute.%s.%s.%d", gr.Namespace, gr.Name, i)
		b.gatewayRuleService(gr, gvkGRPCRoute, name, field, protocol, backendRefs, routes)
	}
}

// grpcServiceProtocol is the protocol of a GRPCRoute's Kong services given its parent
// listeners: "grpc" when one (of the parentRef's sectionName) is HTTP, else "grpcs".
func grpcServiceProtocol(listeners []*gatewayv1.Listener) string {
	for _, l := range listeners {
		if l.Protocol == gatewayv1.HTTPProtocolType {
			return "grpc"
		}
	}
	return "grpcs"
}

// grpcRuleRoutes builds the Kong routes of rule i: one per match. A route Kong would refuse
// is left out and reported alone; the rule's other routes stay.
func (b *builder) grpcRuleRoutes(gr *gatewayv1.GRPCRoute, ro *routeOverrides, i int, hosts []string, tags []*string) []*routeEntry {
	rule := gr.Spec.Rules[i]
	leftOut := "the match is left out"
	if len(rule.Matches) <= 1 {
		leftOut = "the rule is left out"
	}
	var out []*routeEntry
	if len(rule.Matches) == 0 {
		out = b.appendGRPCRoute(out, gr, ro, i, 0, nil, hosts, tags, leftOut)
	}
	for j := range rule.Matches {
		out = b.appendGRPCRoute(out, gr, ro, i, j, &rule.Matches[j], hosts, tags, leftOut)
	}
	return out
}

// appendGRPCRoute appends to out the Kong route of match j of rule i (m nil: the rule has no
// matches), or reports why Kong would refuse it.
func (b *builder) appendGRPCRoute(out []*routeEntry, gr *gatewayv1.GRPCRoute, ro *routeOverrides, i, j int,
	m *gatewayv1.GRPCRouteMatch, hosts []string, tags []*string, leftOut string) []*routeEntry {
	r, err := b.grpcKongRoute(gr, ro, i, j, m, hosts, tags)
	if err != nil {
		b.problem(gr, gvkGRPCRoute, err.field, "GRPCRoute can't be routed: %s; %s", err.msg, leftOut)
		return out
	}
	return append(out, &routeEntry{FRoute: r, src: gr, srcGVK: gvkGRPCRoute})
}

// grpcKongRoute is the Kong route grpcroute.<ns>.<name>.<i>.<j> of match m of rule i (m nil:
// the rule has no matches), or why Kong would refuse it.
func (b *builder) grpcKongRoute(gr *gatewayv1.GRPCRoute, ro *routeOverrides, i, j int,
	m *gatewayv1.GRPCRouteMatch, hosts []string, tags []*string) (*file.FRoute, *routeError) {
	name := fmt.Sprintf("grpcroute.%s.%s.%d.%d", gr.Namespace, gr.Name, i, j)
	r := &file.FRoute{Route: kong.Route{
		ID:        kong.String(kongstate.RouteID(b.opts.Workspace, name)),
		Name:      kong.String(name),
		Protocols: kong.StringSlice("grpc", "grpcs"),
		Tags:      tags,
	}}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, kong.String(h))
	}
	if m == nil && len(r.Hosts) == 0 {
		// Kong needs hosts, headers or paths on a gRPC route: this one takes everything.
		r.Paths = kong.StringSlice("/")
	}
	if m != nil {
		mfield := fmt.Sprintf("spec.rules[%d].matches[%d]", i, j)
		if m.Method != nil {
			p, e := grpcMethodPath(m.Method)
			if e != "" {
				return nil, &routeError{mfield + ".method", e}
			}
			if e := b.routePath(p); e != "" {
				return nil, &routeError{mfield + ".method", e}
			}
			r.Paths = kong.StringSlice(p)
		}
		headers, e := grpcHeaders(m.Headers, b.headerRegex)
		if e != "" {
			return nil, &routeError{mfield + ".headers", e}
		}
		if len(headers) > 0 {
			r.Headers = headers
		}
	}
	ro.apply(r)
	if e := b.claimRouteName(gr, gvkGRPCRoute, name); e != "" {
		return nil, &routeError{fmt.Sprintf("spec.rules[%d]", i), e}
	}
	return r, nil
}

// grpcMethodPath is KIC's path of a gRPC method match, a regex path "~/<service>/<method>":
// an omitted service is ".+"; an omitted method is "" for Exact and ".+" for
// RegularExpression; Exact quotes the regex metacharacters of service and method and anchors
// the method with "$" (so /svc/Echo does not also match /svc/EchoTwo).
func grpcMethodPath(m *gatewayv1.GRPCMethodMatch) (string, string) {
	t := gatewayv1.GRPCMethodMatchExact
	if m.Type != nil && *m.Type != "" {
		t = *m.Type
	}
	service, method := ".+", ""
	switch t {
	case gatewayv1.GRPCMethodMatchExact:
		if m.Service != nil {
			service = regexp.QuoteMeta(*m.Service)
		}
		if m.Method != nil {
			method = regexp.QuoteMeta(*m.Method) + "$"
		}
	case gatewayv1.GRPCMethodMatchRegularExpression:
		method = ".+"
		if m.Service != nil {
			service = *m.Service
		}
		if m.Method != nil {
			method = *m.Method
		}
	default:
		return "", fmt.Sprintf("unsupported method match type %q", t)
	}
	p := "/" + service + "/" + method
	if e := checkPCRE(p); e != "" {
		return "", fmt.Sprintf("invalid regex %q: %s", p, e)
	}
	return "~" + p, ""
}

// grpcHeaders maps header matches: Exact as the value (several matches of one name add
// values, as in KIC), RegularExpression as "~*<v>" (KIC sends the regex as a plain value,
// which matches only a header equal to the regex text).
func grpcHeaders(hs []gatewayv1.GRPCHeaderMatch, checkRegex func(string) string) (map[string][]string, string) {
	out := map[string][]string{}
	for _, h := range hs {
		n := string(h.Name)
		if e := checkHeaderName(n); e != "" {
			return nil, e
		}
		v := h.Value
		if h.Type != nil && *h.Type == gatewayv1.GRPCHeaderMatchRegularExpression {
			if e := checkRegex(v); e != "" {
				return nil, fmt.Sprintf("invalid regex %q for header %s: %s", v, n, e)
			}
			v = "~*" + v
		}
		out[n] = append(out[n], v)
	}
	return out, ""
}
