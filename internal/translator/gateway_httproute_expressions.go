package translator

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// Priorities of KIC's expression routes by source kind (the two highest bits: Ingress 3,
// HTTPRoute 2, GRPCRoute 1; docs/gateway-api.md "Expressions router").
const httpRoutePriorityBase = uint64(2) << 44

// catchAllHTTPExpression is KIC's expression of a route that matches nothing in particular:
// Kong refuses an empty expression.
const catchAllHTTPExpression = `(net.protocol == "http") || (net.protocol == "https")`

// httpSplitMatch is one hostname, rule and match of an HTTPRoute: one Kong route under the
// expressions router (KIC's SplitHTTPRouteMatch). A rule without matches is one split with
// an empty match, index 0.
type httpSplitMatch struct {
	route       *gatewayv1.HTTPRoute
	ro          *routeOverrides
	hostname    string
	isolated    []string // listenerIsolation: hosts the split must not take
	ports       *matcher // listenerPortMatcher: the Kong ports of its listeners, nil for any
	rule, match int
	m           gatewayv1.HTTPRouteMatch
	priority    uint64
}

// attachedHTTPRoute is an HTTPRoute to translate with the hostnames it serves.
type attachedHTTPRoute struct {
	route     *gatewayv1.HTTPRoute
	hostnames []string
	ra        *gatewayapi.RouteAttachment
}

// httpRoutesExpressions translates HTTPRoutes for Kong's expressions router as KIC 3.5 does
// (TranslateHTTPRoutesToKongstateServices with ExpressionRoutes, groupHTTPRouteMatchesWithPrioritiesByRule):
// every route is split by hostname, rule and match; each split is a Kong route
// httproute.<ns>.<name>.<host>.<rule>.<match> with an expression and KIC's priority, in the
// Kong service of its rule, grouped and named as on the traditional router
// (gateway_httproute_services.go). Priorities order splits across all HTTPRoutes, so every split is
// made before any is translated.
func (b *builder) httpRoutesExpressions(routes []attachedHTTPRoute) {
	splits := b.httpSplits(routes)
	assignHTTPPriorities(splits)
	b.sharePriorities(gvkHTTPRoute, func(yield func(client.Object) bool) {
		for _, s := range splits {
			if !yield(s.route) {
				return
			}
		}
	})
	groups, names := b.splitRuleGroups(splits)
	for _, s := range splits {
		hr := s.route
		name := names[serviceRuleID{hr, s.rule}]
		field := fmt.Sprintf("spec.rules[%d]", s.rule)
		ks := b.kongServices[name]
		if ks == nil {
			if e := checkServiceName(name); e != "" {
				b.problem(hr, gvkHTTPRoute, field, "Kong service %s; the rule is left out", e)
				continue
			}
		}
		r, err := b.httpSplitRoute(s)
		if err != nil {
			// The other splits of the route go on; KIC sends an invalid regex on to Kong
			// (which refuses the whole configuration), konductor leaves that match out.
			b.problem(hr, gvkHTTPRoute, err.field, "HTTPRoute can't be routed: %s; the match is left out", err.msg)
			continue
		}
		if ks == nil {
			// The service is made from the first of its rules in getRuleKey order.
			first := groups[name][0]
			ks = b.httpRouteKongService(first.hr, first.rule, name)
			b.kongServices[name] = ks
		}
		if first := groups[name][0].hr; first != hr {
			// Combined services: one Kong service, named and tagged after the first
			// HTTPRoute, for the rules of several.
			b.contend("service "+name, hr, gvkHTTPRoute, first, gvkHTTPRoute)
		}
		ks.routes = append(ks.routes, r)
	}
	b.finishSplitServices(groups)
}

// httpSplits are the splits of routes (KIC's SplitHTTPRoute), those KIC translates
// (validateHTTPRoute: rules; query parameters are allowed under this router).
func (b *builder) httpSplits(routes []attachedHTTPRoute) []*httpSplitMatch {
	var splits []*httpSplitMatch
	for _, ar := range routes {
		hr := ar.route
		ro, ok := b.routableRoute(hr, gvkHTTPRoute, len(hr.Spec.Rules))
		if !ok {
			continue
		}
		hosts := ar.hostnames
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		for _, h := range hosts {
			isolated := b.listenerIsolation(hr, ar.ra, h)
			ports := b.listenerPortMatcher(hr, ar.ra, h)
			for i, rule := range hr.Spec.Rules {
				if len(rule.Matches) == 0 {
					splits = append(splits, &httpSplitMatch{route: hr, ro: ro, hostname: h, isolated: isolated, ports: ports, rule: i})
				}
				for j, m := range rule.Matches {
					splits = append(splits, &httpSplitMatch{route: hr, ro: ro, hostname: h, isolated: isolated, ports: ports, rule: i, match: j, m: m})
				}
			}
		}
	}
	return splits
}

// listenerIsolation are the hostnames that a route serving hostname h (its hostname as
// intersected with its listeners', "" for any) must not take (konductor; KIC takes them). The
// spec's listener isolation gives a request to the most specific listener that matches its
// host, and only that listener's routes may serve it: with listeners "*.example.com" and
// "*.foo.example.com", a route of the first does not take bar.foo.example.com. So: the
// hostnames of the listeners, on the ports of those the route attaches to, that one of the
// route's listeners covers and is less specific than, and whose hosts meet h. Every Gateway of
// our classes is served by the same Kong, so a port's listeners are those of all of them (as
// HTTPRouteMultipleGateways, docs/gateway-api.md), and the listeners of their attached
// ListenerSets too. Kong's expressions router says it with a negated host match. The
// Gateways and ListenerSets read are recorded.
func (b *builder) listenerIsolation(hr *gatewayv1.HTTPRoute, ra *gatewayapi.RouteAttachment, h string) []string {
	if ra == nil || b.gw == nil {
		return nil
	}
	ports := map[gatewayv1.PortNumber]bool{}
	var own []string // the hostnames of the route's listeners, "" for none
	for _, p := range ra.Parents {
		if !p.Accepted {
			continue
		}
		for _, l := range p.Listeners {
			ports[l.Listener.Port] = true
			lh := ""
			if l.Listener.Hostname != nil {
				lh = string(*l.Listener.Hostname)
			}
			own = append(own, lh)
		}
	}
	var out []string
	for _, g := range b.gw.Gateways {
		read := false
		for _, l := range g.AllListeners() {
			if !ports[l.Listener.Port] {
				continue
			}
			read = true
			if l.Set != nil {
				b.refer(hr, gvkHTTPRoute, ref(gvkListenerSet, l.Set.ListenerSet.Namespace, l.Set.ListenerSet.Name))
			}
			if l.Listener.Hostname == nil {
				continue
			}
			other := string(*l.Listener.Hostname)
			if slices.Contains(own, other) || slices.Contains(out, other) || !(coversOrIs(h, other) || coversOrIs(other, h)) {
				continue
			}
			if slices.ContainsFunc(own, func(o string) bool { return coversMoreSpecific(o, other) }) {
				out = append(out, other)
			}
		}
		if read {
			b.refer(hr, gvkHTTPRoute, ref(gvkGateway, g.Gateway.Namespace, g.Gateway.Name))
		}
	}
	sort.Strings(out)
	return out
}

// coversOrIs reports whether hostname h is other or covers it.
func coversOrIs(h, other string) bool { return h == other || coversMoreSpecific(h, other) }

// coversMoreSpecific reports whether hostname h ("" for any, "*.example.com", or exact)
// matches every host of other and other is more specific.
func coversMoreSpecific(h, other string) bool {
	switch {
	case other == h:
		return false
	case h == "":
		return true
	case strings.HasPrefix(h, "*."):
		return strings.HasSuffix(other, h[1:]) && len(other) > len(h)-1
	}
	return false
}

// hostnameInName is a split's hostname as KIC puts it in names: "*" as "_", "_" for none.
func hostnameInName(h string) string {
	if h == "" {
		return "_"
	}
	return strings.ReplaceAll(h, "*", "_")
}

// httpSplitRoute is the Kong route of one split: KIC's
// KongExpressionRouteFromHTTPRouteMatchWithPriority.
func (b *builder) httpSplitRoute(s *httpSplitMatch) (*routeEntry, *routeError) {
	hr := s.route
	name := fmt.Sprintf("httproute.%s.%s.%s.%d.%d", hr.Namespace, hr.Name, hostnameInName(s.hostname), s.rule, s.match)
	field := fmt.Sprintf("spec.rules[%d]", s.rule)
	mfield := fmt.Sprintf("spec.rules[%d].matches[%d]", s.rule, s.match)
	r := &file.FRoute{Route: kong.Route{
		ID:           kong.String(kongstate.RouteID(b.opts.Workspace, name)),
		Name:         kong.String(name),
		PreserveHost: kong.Bool(true),
		StripPath:    kong.Bool(false),
	}}
	var ruleNames []string
	if n := hr.Spec.Rules[s.rule].Name; n != nil && *n != "" {
		ruleNames = append(ruleNames, string(*n))
	}
	r.Tags = b.ruleNameTags(hr, gvkHTTPRoute, ruleNames)

	// Regexes are checked in the expression, as the Rust regex crate would (refused).
	if p := s.m.Path; p != nil {
		if _, err := httpRoutePaths(p, noRegexCheck); err != nil {
			return nil, &routeError{mfield + ".path", err.Error()}
		}
	}
	if _, err := httpRouteHeaders(s.m.Headers, noRegexCheck); err != nil {
		return nil, &routeError{mfield + ".headers", err.Error()}
	}
	filters := hr.Spec.Rules[s.rule].Filters
	var others []*matcher
	for _, h := range s.isolated {
		others = append(others, httpHostMatcher(h))
	}
	expr := group("&&", httpHostMatcher(s.hostname), not(group("||", others...)), s.ro.sniMatcher(), s.ports, httpMatchMatcher(s.m, hasPrefixRewrite(filters)))
	r.Expression = kong.String(catchAllHTTPExpression)
	if expr != nil {
		if e := expr.refused(); e != "" {
			return nil, &routeError{mfield, e}
		}
		r.Expression = kong.String(expr.expression())
	}
	r.Priority = kong.Uint64(s.priority)

	// A ReplacePrefixMatch rewrite gives request-transformer the same replace.uri as under the
	// traditional router; the paths it sets for the capture are cleared below, the capture
	// being in the expression (httpMatchMatcher).
	path := ""
	if s.m.Path != nil && s.m.Path.Value != nil {
		path = *s.m.Path.Value
	}
	host := ""
	if !strings.Contains(s.hostname, "*") {
		host = s.hostname
	}
	extensionRefs, rerr := b.addFilterPlugins(filters, path, field, host, r)
	if rerr != nil {
		return nil, rerr
	}
	s.ro.apply(r)
	// The expression carries what the traditional fields would: annotations' protocols,
	// methods and SNIs do not apply as fields.
	r.Protocols, r.Methods, r.SNIs, r.Hosts, r.Paths, r.Headers, r.RegexPriority = nil, nil, nil, nil, nil, nil, nil
	kongHTTPSRedirect(hr, s.ro, filters, host, r)
	if e := b.claimRouteName(s.route, gvkHTTPRoute, name); e != "" {
		return nil, &routeError{field, e}
	}
	return &routeEntry{FRoute: r, src: hr, srcGVK: gvkHTTPRoute, extraPlugins: extensionRefs}, nil
}

// sniMatcher is the konghq.com/snis annotation as KIC's expression routes match it:
// "tls.sni ==" each, ORed; nil without one.
func (ro *routeOverrides) sniMatcher() *matcher {
	if !ro.snisSet {
		return nil
	}
	var snis []*matcher
	for _, sni := range ro.snis {
		snis = append(snis, predicate("tls.sni", "==", sni))
	}
	return group("||", snis...)
}

// headerPredicate is KIC's matcher of one header: "http.headers.<name lowercased, - as _>",
// "==" the value or "~" a regex.
func headerPredicate(name string, regex bool, value string) *matcher {
	op := "=="
	if regex {
		op = "~"
	}
	return predicate("http.headers."+strings.ReplaceAll(strings.ToLower(name), "-", "_"), op, value)
}

// httpHostMatcher is KIC's hostMatcherFromHosts of one hostname: "http.host ==", or "=^"
// (suffix) for a wildcard; nil for none.
func httpHostMatcher(h string) *matcher {
	switch {
	case h == "":
		return nil
	case strings.HasPrefix(h, "*"):
		return predicate("http.host", "=^", strings.TrimPrefix(h, "*"))
	}
	return predicate("http.host", "==", h)
}

// httpMatchMatcher is KIC's generateMatcherFromHTTPRouteMatch: path, headers (by name),
// query parameters (by name) and method, ANDed. With capturePrefix (the rule has a
// ReplacePrefixMatch rewrite) a PathPrefix match is KIC's (http.path == "<prefix>") ||
// (http.path ~ "^<prefix>(/.*)"), whose capture request-transformer's replace.uri appends
// (KIC PR #7269, 2025; before it, the rewrite replaced the whole expression by that path
// matcher, dropping hostname, headers and the rest: KIC issue #7081).
func httpMatchMatcher(m gatewayv1.HTTPRouteMatch, capturePrefix bool) *matcher {
	var path *matcher
	if p := m.Path; p != nil && p.Type != nil {
		v := ""
		if p.Value != nil {
			v = *p.Value
		}
		switch *p.Type {
		case gatewayv1.PathMatchExact:
			path = predicate("http.path", "==", v)
		case gatewayv1.PathMatchPathPrefix:
			if capturePrefix {
				p, _ := rewritePrefix(v)
				path = group("||", predicate("http.path", "==", p), predicate("http.path", "~", "^"+rewritePrefixCapture(v)))
				break
			}
			if v == "" || v == "/" {
				path = predicate("http.path", "^=", "/")
			} else {
				v = strings.TrimSuffix(v, "/")
				path = group("||", predicate("http.path", "==", v), predicate("http.path", "^=", v+"/"))
			}
		case gatewayv1.PathMatchRegularExpression:
			if !strings.HasPrefix(v, "^") {
				v = "^" + v
			}
			path = predicate("http.path", "~", v)
		}
	}
	headers := append([]gatewayv1.HTTPHeaderMatch(nil), m.Headers...)
	sort.SliceStable(headers, func(i, j int) bool { return headers[i].Name < headers[j].Name })
	var hs []*matcher
	for _, h := range headers {
		hs = append(hs, headerPredicate(string(h.Name), h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression, h.Value))
	}
	queries := append([]gatewayv1.HTTPQueryParamMatch(nil), m.QueryParams...)
	sort.SliceStable(queries, func(i, j int) bool { return queries[i].Name < queries[j].Name })
	var qs []*matcher
	for _, q := range queries {
		op := "=="
		if q.Type != nil && *q.Type == gatewayv1.QueryParamMatchRegularExpression {
			op = "~"
		}
		qs = append(qs, predicate("http.queries."+string(q.Name), op, q.Value))
	}
	var method *matcher
	if m.Method != nil {
		method = predicate("http.method", "==", string(*m.Method))
	}
	return group("&&", path, group("&&", hs...), group("&&", qs...), method)
}

// httpMatchPriority is KIC's priority of a split without its 12 bits of relative order
// (CalculateHTTPRouteMatchPriorityTraits, EncodeToPriority): kind, precise hostname,
// hostname length, Exact path, RegularExpression path, path length - 1, method, number of
// headers, number of query parameters.
func httpMatchPriority(s *httpSplitMatch) uint64 {
	p := httpRoutePriorityBase + hostnamePriority(s.hostname)
	if path := s.m.Path; path != nil {
		if path.Type != nil && *path.Type == gatewayv1.PathMatchExact {
			p += 1 << 34
		}
		if path.Type != nil && *path.Type == gatewayv1.PathMatchRegularExpression {
			p += 1 << 33
		}
		if path.Value != nil && len(*path.Value) > 0 {
			p += uint64(len(*path.Value)-1) << 23
		}
	}
	if s.m.Method != nil {
		p += 1 << 22
	}
	p += uint64(len(s.m.Headers)) << 17
	p += uint64(len(s.m.QueryParams)) << 12
	return p
}

// hostnamePriority is the hostname's part of a split's priority, the same for HTTPRoutes and
// GRPCRoutes: bit 43 for a hostname without "*", its length from bit 35.
func hostnamePriority(h string) uint64 {
	if h == "" {
		return 0
	}
	p := uint64(len(h)) << 35
	if !strings.HasPrefix(h, "*") {
		p += 1 << 43
	}
	return p
}

// httpRelativeOrderBits are the low bits of a priority that order splits of one priority.
const httpRelativeOrderBits = 12

// assignHTTPPriorities is KIC's AssignRoutePriorityToSplitHTTPRouteMatches (assignPriorities
// with 12 bits of relative order).
func assignHTTPPriorities(splits []*httpSplitMatch) {
	assignPriorities(splits, httpRelativeOrderBits, httpMatchPriority,
		func(a, b *httpSplitMatch) bool {
			return splitBefore(a.route, b.route, a.rule, b.rule, a.match, b.match)
		},
		func(s *httpSplitMatch, p uint64) { s.priority = p })
}

// assignPriorities is KIC's scheme for split routes: splits alone at their priority get all
// relative-order bits set; splits that share one are sorted (before) and get all bits set,
// minus one, minus two, ... (at least 0).
func assignPriorities[S any](splits []S, relativeBits int, priority func(S) uint64, before func(a, b S) bool, set func(S, uint64)) {
	byPriority := map[uint64][]S{}
	for _, s := range splits {
		p := priority(s)
		byPriority[p] = append(byPriority[p], s)
	}
	top := uint64(1)<<relativeBits - 1
	for p, ss := range byPriority {
		sort.SliceStable(ss, func(i, j int) bool { return before(ss[i], ss[j]) })
		for i, s := range ss {
			set(s, p+top-min(uint64(i), top))
		}
	}
}

// splitBefore is KIC's order of splits of one priority (compareSplitHTTPRouteMatchesRelativePriority,
// and the GRPCRoute one): the older route first, then by namespace, name, rule and match.
func splitBefore(ra, rb client.Object, ruleA, ruleB, matchA, matchB int) bool {
	ta, tb := ra.GetCreationTimestamp(), rb.GetCreationTimestamp()
	switch {
	case !ta.Equal(&tb):
		return ta.Before(&tb)
	case ra.GetNamespace() != rb.GetNamespace():
		return ra.GetNamespace() < rb.GetNamespace()
	case ra.GetName() != rb.GetName():
		return ra.GetName() < rb.GetName()
	case ruleA != ruleB:
		return ruleA < ruleB
	}
	return matchA < matchB
}
