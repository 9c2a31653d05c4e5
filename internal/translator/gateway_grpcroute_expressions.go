package translator

import (
	"fmt"
	"slices"
	"sort"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongstate"
)

// grpcRoutePriorityBase is the kind bits of GRPCRoutes' expression routes (docs/gateway-api.md
// "Expressions router").
const grpcRoutePriorityBase = uint64(1) << 44

// grpcRelativeOrderBits are the low bits of a GRPCRoute priority that order splits of one
// priority.
const grpcRelativeOrderBits = 8

// grpcSplitMatch is one hostname, rule and match of a GRPCRoute (KIC's SplitGRPCRouteMatch).
type grpcSplitMatch struct {
	route       *gatewayv1.GRPCRoute
	ro          *routeOverrides
	hostname    string
	rule, match int
	m           gatewayv1.GRPCRouteMatch
	priority    uint64
}

// grpcRoutesExpressions translates GRPCRoutes for Kong's expressions router as KIC does:
// split by spec.hostnames, rule and match (SplitGRPCRoute); Kong service
// grpcroute.<ns>.<name>.<host>.<rule> (protocol as in the traditional translation), route
// .<match> with an expression and KIC's priority (AssignRoutePriorityToSplitGRPCRouteMatches).
func (b *builder) grpcRoutesExpressions(routes []attachedGRPCRoute) {
	var splits []*grpcSplitMatch
	protocols := map[*gatewayv1.GRPCRoute]string{}
	for _, attached := range routes {
		gr := attached.route
		ro, ok := b.routableRoute(gr, gvkGRPCRoute, len(gr.Spec.Rules))
		if !ok {
			continue
		}
		protocols[gr] = grpcServiceProtocol(attached.listeners)
		// konductor: without spec.hostnames, the parent listeners' hostnames, as on the
		// traditional router (KIC splits by spec.hostnames only, so such a GRPCRoute took the
		// requests of every host, its listener's hostname ignored).
		var hosts []string
		for _, h := range grpcRouteHosts(gr, attached.listeners) {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		for i, rule := range gr.Spec.Rules {
			if len(rule.Filters) > 0 {
				b.problem(gr, gvkGRPCRoute, fmt.Sprintf("spec.rules[%d].filters", i), "GRPCRoute filters are not supported; they are ignored")
			}
		}
		for _, h := range hosts {
			for i, rule := range gr.Spec.Rules {
				if len(rule.Matches) == 0 {
					splits = append(splits, &grpcSplitMatch{route: gr, ro: ro, hostname: h, rule: i})
				}
				for j, m := range rule.Matches {
					splits = append(splits, &grpcSplitMatch{route: gr, ro: ro, hostname: h, rule: i, match: j, m: m})
				}
			}
		}
	}
	assignGRPCPriorities(splits)
	b.sharePriorities(gvkGRPCRoute, func(yield func(client.Object) bool) {
		for _, s := range splits {
			if !yield(s.route) {
				return
			}
		}
	})

	// Routes by service, services in the order first made.
	var names []string
	byService := map[string][]*routeEntry{}
	owner := map[string]*grpcSplitMatch{}
	for _, s := range splits {
		name := fmt.Sprintf("grpcroute.%s.%s.%s.%d", s.route.Namespace, s.route.Name, hostnameInName(s.hostname), s.rule)
		r, err := b.grpcSplitRoute(s)
		if err != nil {
			b.problem(s.route, gvkGRPCRoute, err.field, "GRPCRoute can't be routed: %s; the match is left out", err.msg)
			continue
		}
		if _, ok := owner[name]; !ok {
			owner[name] = s
			names = append(names, name)
		}
		byService[name] = append(byService[name], r)
	}
	for _, name := range names {
		s := owner[name]
		var refs []gatewayv1.BackendRef
		for _, be := range s.route.Spec.Rules[s.rule].BackendRefs {
			refs = append(refs, be.BackendRef)
		}
		b.gatewayRuleService(s.route, gvkGRPCRoute, name, fmt.Sprintf("spec.rules[%d]", s.rule), protocols[s.route], refs, byService[name])
	}
}

// grpcSplitRoute is KIC's KongExpressionRouteFromSplitGRPCRouteMatchWithPriority.
func (b *builder) grpcSplitRoute(s *grpcSplitMatch) (*routeEntry, *routeError) {
	gr := s.route
	name := fmt.Sprintf("grpcroute.%s.%s.%s.%d.%d", gr.Namespace, gr.Name, hostnameInName(s.hostname), s.rule, s.match)
	mfield := fmt.Sprintf("spec.rules[%d].matches[%d]", s.rule, s.match)
	method, e := grpcMethodMatcher(s.m.Method)
	if e != "" {
		return nil, &routeError{mfield + ".method", e}
	}
	if _, e := grpcHeaders(s.m.Headers, noRegexCheck); e != "" {
		return nil, &routeError{mfield + ".headers", e}
	}
	headers := append([]gatewayv1.GRPCHeaderMatch(nil), s.m.Headers...)
	sort.SliceStable(headers, func(i, j int) bool { return headers[i].Name < headers[j].Name })
	var hs []*matcher
	for _, h := range headers {
		hs = append(hs, headerPredicate(string(h.Name), h.Type != nil && *h.Type == gatewayv1.GRPCHeaderMatchRegularExpression, h.Value))
	}
	// KIC tags every route of a GRPCRoute with the names of all its rules.
	var ruleNames []string
	for _, rule := range gr.Spec.Rules {
		if rule.Name != nil {
			ruleNames = append(ruleNames, string(*rule.Name))
		}
	}
	// konductor: strip_path false. KIC leaves it out, so Kong's default (true) applies to
	// these routes, which have no grpc protocols (the grpc routes' default is false); Kong's
	// expressions router then strips what the expression matched of http.path, the whole
	// "/<service>/<method>" for a method match, and the backend gets "/" (the conformance
	// suite's GRPCExactMethodMatching under the expressions router; docs/gateway-api.md).
	r := &file.FRoute{Route: kong.Route{
		ID:           kong.String(kongstate.RouteID(b.opts.Workspace, name)),
		Name:         kong.String(name),
		StripPath:    kong.Bool(false),
		PreserveHost: kong.Bool(true),
		Tags:         b.ruleNameTags(gr, gvkGRPCRoute, ruleNames),
		Priority:     kong.Uint64(s.priority),
	}}
	expr := group("&&", method, group("&&", hs...), httpHostMatcher(s.hostname), s.ro.sniMatcher())
	r.Expression = kong.String(catchAllHTTPExpression)
	if expr != nil {
		if e := expr.refused(); e != "" {
			return nil, &routeError{mfield, e}
		}
		r.Expression = kong.String(expr.expression())
	}
	s.ro.apply(r)
	r.Protocols, r.Methods, r.SNIs, r.Hosts, r.Paths, r.Headers, r.RegexPriority = nil, nil, nil, nil, nil, nil, nil
	if e := b.claimRouteName(s.route, gvkGRPCRoute, name); e != "" {
		return nil, &routeError{fmt.Sprintf("spec.rules[%d]", s.rule), e}
	}
	return &routeEntry{FRoute: r, src: gr, srcGVK: gvkGRPCRoute}, nil
}

// grpcMethodMatcher is KIC's methodMatcherFromGRPCMethodMatch: Exact service and method
// "http.path == /S/M", service only "^= /S/", method only "=^ /M"; RegularExpression
// "~ ^/S/M" with ".+" for a part not given; neither part (or no method match) "^= /" for
// a method match, nil without one.
func grpcMethodMatcher(m *gatewayv1.GRPCMethodMatch) (*matcher, string) {
	if m == nil {
		return nil, ""
	}
	if m.Service == nil && m.Method == nil {
		return predicate("http.path", "^=", "/"), ""
	}
	t := gatewayv1.GRPCMethodMatchExact
	if m.Type != nil && *m.Type != "" {
		t = *m.Type
	}
	switch t {
	case gatewayv1.GRPCMethodMatchExact:
		switch {
		case m.Method == nil:
			return predicate("http.path", "^=", "/"+*m.Service+"/"), ""
		case m.Service == nil:
			return predicate("http.path", "=^", "/"+*m.Method), ""
		}
		return predicate("http.path", "==", "/"+*m.Service+"/"+*m.Method), ""
	case gatewayv1.GRPCMethodMatchRegularExpression:
		service, method := ".+", ".+"
		if m.Service != nil {
			service = *m.Service
		}
		if m.Method != nil {
			method = *m.Method
		}
		// The regex is checked with the whole expression (matcher.refused).
		return predicate("http.path", "~", "^/"+service+"/"+method), ""
	}
	return nil, fmt.Sprintf("unsupported method match type %q", t)
}

// grpcMatchPriority is KIC's priority of a GRPCRoute split without its relative order
// (CalculateGRCPRouteMatchPriorityTraits, EncodeToPriority).
func grpcMatchPriority(s *grpcSplitMatch) uint64 {
	p := grpcRoutePriorityBase + hostnamePriority(s.hostname)
	if m := s.m.Method; m != nil {
		if m.Service != nil {
			p += uint64(len(*m.Service)) << 24
		}
		if m.Method != nil {
			p += uint64(len(*m.Method)) << 13
		}
	}
	p += uint64(len(s.m.Headers)) << 8
	return p
}

// assignGRPCPriorities is KIC's AssignRoutePriorityToSplitGRPCRouteMatches (assignPriorities
// with 8 bits of relative order).
func assignGRPCPriorities(splits []*grpcSplitMatch) {
	assignPriorities(splits, grpcRelativeOrderBits, grpcMatchPriority,
		func(a, b *grpcSplitMatch) bool {
			return splitBefore(a.route, b.route, a.rule, b.rule, a.match, b.match)
		},
		func(s *grpcSplitMatch, p uint64) { s.priority = p })
}
