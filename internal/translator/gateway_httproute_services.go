package translator

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/kong/go-kong/kong"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// The Kong services of HTTPRoutes, as KIC 3.5 makes them on both routers (KIC's
// subtranslator/httproute.go TranslateHTTPRoutesToKongstateServices,
// groupRulesFromHTTPRoutesByKongServiceName, getHTTPBackendRefsKey, getSortedItemsString,
// getRuleKey, translateHTTPRouteRulesMetaToKongstateService; since KIC PR #6766, in 3.4,
// the expressions router goes through them too, its split routes put in the service of
// their rule; the same in Kong/kong-operator's ingress-controller/ copy):
//
//   - the rules of one HTTPRoute whose backendRefs are the same set share a Kong service
//     httproute.<ns>.<name>.<lowest rule index of them>: each backendRef is compared as
//     written (JSON), their order not counted, so [a, b] and [b, a] share one, while a
//     namespace given as the route's own or a weight set to the default make another; with
//     combined services the rules of a namespace's HTTPRoutes are keyed by their backends
//     instead (gateway_httproute_combined.go);
//   - a service's rules are ordered by getRuleKey, "<ns>/<name>.<rule>" (a string order:
//     rule 10 comes before rule 2); the first one's backendRefs, read as its HTTPRoute's
//     (ReferenceGrants, problems), are the service's backends; every rule's backendRequest
//     timeout other than the default is set in that order, the last one winning;
//   - its routes: on the traditional router by filters, then by matches of one HTTPRoute with
//     the same method, headers and query parameters, named after the first match in that
//     order; on the expressions router one per hostname and match of its rules
//     (gateway_httproute_expressions.go).

// serviceRule is one rule of an attached HTTPRoute, among the rules of its Kong service.
type serviceRule struct {
	hr        *gatewayv1.HTTPRoute
	ro        *routeOverrides
	hostnames []string
	listeners []*gatewayv1.Listener
	rule      int
}

// key is KIC's getRuleKey, the order of a service's rules.
func (c serviceRule) key() string {
	return c.hr.Namespace + "/" + c.hr.Name + "." + strconv.Itoa(c.rule)
}

// serviceRuleID is one rule of one HTTPRoute.
type serviceRuleID struct {
	hr   *gatewayv1.HTTPRoute
	rule int
}

// httpRuleServiceNames are the names of the Kong services of hr's rules, by rule index
// (KIC's groupRulesFromHTTPRoutesByKongServiceName).
func (b *builder) httpRuleServiceNames(hr *gatewayv1.HTTPRoute) []string {
	names := make([]string, len(hr.Spec.Rules))
	if b.opts.CombinedServicesFromDifferentHTTPRoutes {
		for i, rule := range hr.Spec.Rules {
			names[i] = combinedServiceName(hr.Namespace, rule.BackendRefs)
		}
		return names
	}
	// groupRulesByBackendRefs keeps the rules' order: a group's first rule is its lowest.
	// konductor: rules with the same backendRefs but different backendRequest timeouts are
	// told apart too (KIC gives their one service the timeout of the last of them, so a rule
	// gets another rule's timeout); each timeout's rules are a service named after their
	// lowest rule, the first rule's keeping KIC's name.
	keys := make([]string, len(hr.Spec.Rules))
	timeouts := map[string]map[string]bool{}
	for i, rule := range hr.Spec.Rules {
		keys[i] = sortedJSONKey(rule.BackendRefs) // getSortedItemsString
		if timeouts[keys[i]] == nil {
			timeouts[keys[i]] = map[string]bool{}
		}
		timeouts[keys[i]][ruleTimeoutKey(rule)] = true
	}
	first := map[string]int{}
	for i, rule := range hr.Spec.Rules {
		k := keys[i]
		if len(timeouts[k]) > 1 {
			k += "\x00" + ruleTimeoutKey(rule)
		}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
		names[i] = fmt.Sprintf("httproute.%s.%s.%d", hr.Namespace, hr.Name, first[k])
	}
	return names
}

// addHTTPRouteRules adds the rules of hr, attached as ra, to the rules of their Kong
// services (traditional router), when KIC translates hr (httpRouteTranslatable).
func (b *builder) addHTTPRouteRules(groups map[string][]serviceRule, hr *gatewayv1.HTTPRoute, ra *gatewayapi.RouteAttachment) map[string][]serviceRule {
	ro, ok := b.httpRouteTranslatable(hr)
	if !ok {
		return groups
	}
	if groups == nil {
		groups = map[string][]serviceRule{}
	}
	listeners := parentListeners(ra)
	for i, name := range b.httpRuleServiceNames(hr) {
		groups[name] = append(groups[name], serviceRule{hr: hr, ro: ro, hostnames: ra.Hostnames, listeners: listeners, rule: i})
	}
	return groups
}

// httpRuleServices makes the Kong service of each group of rules, in name order
// (traditional router).
func (b *builder) httpRuleServices(groups map[string][]serviceRule) {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.httpRuleService(n, groups[n])
	}
	b.httpRouteProtocols = nil
}

// httpRuleService makes the Kong service name of rules (KIC's
// translateHTTPRouteRulesMetaToKongstateService). A route that cannot be made is left out
// alone, reported; the service stays with the others.
func (b *builder) httpRuleService(name string, rules []serviceRule) {
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].key() < rules[j].key() })
	first := rules[0]
	if e := checkServiceName(name); e != "" {
		for _, r := range rules {
			b.problem(r.hr, gvkHTTPRoute, fmt.Sprintf("spec.rules[%d]", r.rule), "Kong service %s; the rule is left out", e)
		}
		return
	}
	var listeners []*gatewayv1.Listener
	seen := map[*gatewayv1.HTTPRoute]bool{}
	for _, r := range rules {
		if !seen[r.hr] {
			seen[r.hr] = true
			listeners = append(listeners, r.listeners...)
			if r.hr != first.hr {
				// Combined services: one Kong service, named and tagged after the first
				// HTTPRoute, for the rules of several.
				b.contend("service "+name, r.hr, gvkHTTPRoute, first.hr, gvkHTTPRoute)
			}
		}
	}
	b.httpRouteProtocols = httpListenerProtocols(listeners)
	routes := b.httpRuleRoutes(rules)
	if len(routes) == 0 {
		return // each left-out route is reported
	}
	sort.Slice(routes, func(i, j int) bool { return *routes[i].Name < *routes[j].Name })

	ks := b.httpRouteKongService(first.hr, first.rule, name)
	ks.routes = routes
	applyRuleTimeouts(ks, rules)
	b.kongServices[name] = ks
}

// httpRuleRoutes are the traditional routes of a service's rules, in getRuleKey order (KIC's
// translateHTTPRouteRulesMetaToKongstateRoutes): by filters (as a set), then by HTTPRoute
// and match key, in the order first seen, each named after its first match.
func (b *builder) httpRuleRoutes(rules []serviceRule) []*routeEntry {
	var routes []*routeEntry
	var filterOrder []string
	byFilters := map[string][]serviceRule{}
	for _, r := range rules {
		k := sortedJSONKey(r.hr.Spec.Rules[r.rule].Filters)
		if _, ok := byFilters[k]; !ok {
			filterOrder = append(filterOrder, k)
		}
		byFilters[k] = append(byFilters[k], r)
	}
	type matchGroup struct {
		c  serviceRule
		ms []httpMatchRef
	}
	for _, fk := range filterOrder {
		frules := byFilters[fk]
		filters := frules[0].hr.Spec.Rules[frules[0].rule].Filters
		var matchOrder []string
		byMatch := map[string]*matchGroup{}
		for _, c := range frules {
			rule := c.hr.Spec.Rules[c.rule]
			if len(rule.Matches) == 0 {
				routes = append(routes, b.httpKongRoute(c.hr, c.ro, c.hostnames, c.rule, 0, nil, filters)...)
				continue
			}
			for j, m := range rule.Matches {
				// KIC's match key holds the HTTPRoute: matches of two routes never share a
				// Kong route.
				k := c.hr.Namespace + "/" + c.hr.Name + "\x00" + matchKey(m)
				g := byMatch[k]
				if g == nil {
					g = &matchGroup{c: c}
					byMatch[k] = g
					matchOrder = append(matchOrder, k)
				}
				g.ms = append(g.ms, httpMatchRef{c.rule, j, m})
			}
		}
		for _, mk := range matchOrder {
			g := byMatch[mk]
			routes = append(routes, b.httpKongRoute(g.c.hr, g.c.ro, g.c.hostnames, g.ms[0].rule, g.ms[0].match, g.ms, filters)...)
		}
	}
	return routes
}

// splitRuleGroups are the rules of the expressions router's splits by Kong service, each
// rule once, in getRuleKey order (the first one's backendRefs are the service's), and the
// service of each rule.
func (b *builder) splitRuleGroups(splits []*httpSplitMatch) (map[string][]serviceRule, map[serviceRuleID]string) {
	groups := map[string][]serviceRule{}
	names := map[serviceRuleID]string{}
	for _, s := range splits {
		id := serviceRuleID{s.route, s.rule}
		if _, ok := names[id]; ok {
			continue
		}
		ruleNames := b.httpRuleServiceNames(s.route)
		for i, n := range ruleNames {
			names[serviceRuleID{s.route, i}] = n
			groups[n] = append(groups[n], serviceRule{hr: s.route, ro: s.ro, rule: i})
		}
	}
	for _, rules := range groups {
		sort.SliceStable(rules, func(i, j int) bool { return rules[i].key() < rules[j].key() })
	}
	return groups, names
}

// finishSplitServices finishes the Kong services of the expressions router: routes in name
// order, every rule's timeout (applyRuleTimeouts).
func (b *builder) finishSplitServices(groups map[string][]serviceRule) {
	for name, rules := range groups {
		ks := b.kongServices[name]
		if ks == nil {
			continue // every split of it was left out, reported
		}
		sort.Slice(ks.routes, func(i, j int) bool { return *ks.routes[i].Name < *ks.routes[j].Name })
		applyRuleTimeouts(ks, rules)
	}
}

// applyRuleTimeouts gives ks the backendRequest timeout of its rules, in getRuleKey order,
// the last one other than the default winning (KIC's applyTimeoutToServiceFromHTTPRouteRule
// over the service's rules, whether or not one of their routes was left out).
func applyRuleTimeouts(ks *kongService, rules []serviceRule) {
	for _, r := range rules {
		if ms, ok := ruleTimeout(r.hr.Spec.Rules[r.rule]); ok {
			ks.svc.ConnectTimeout, ks.svc.ReadTimeout, ks.svc.WriteTimeout = kong.Int(ms), kong.Int(ms), kong.Int(ms)
		}
	}
}

// ruleTimeoutKey tells rules apart by the service timeout they ask for ("" for Kong's default).
func ruleTimeoutKey(rule gatewayv1.HTTPRouteRule) string {
	if ms, ok := ruleTimeout(rule); ok {
		return strconv.Itoa(ms)
	}
	return ""
}

// ruleTimeout is rule's backendRequest timeout in milliseconds when it sets one other than
// Kong's default. A zero one (no timeout, which Kong cannot say) or an unparsable one (the
// API server validates the format) is none.
func ruleTimeout(rule gatewayv1.HTTPRouteRule) (int, bool) {
	t := rule.Timeouts
	if t == nil || t.BackendRequest == nil {
		return 0, false
	}
	d, err := time.ParseDuration(string(*t.BackendRequest))
	if err != nil || d <= 0 {
		return 0, false
	}
	ms := int(d.Milliseconds())
	return ms, ms != kongDefaultTimeout
}
