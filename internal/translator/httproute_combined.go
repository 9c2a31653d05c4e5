package translator

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// Combined services (KIC's CombinedServicesFromDifferentHTTPRoutes gate, KIC 3.5's
// --combined-services-from-different-httproutes; Options.CombinedServicesFromDifferentHTTPRoutes).
// Read in KIC's subtranslator/httproute.go (TranslateHTTPRoutesToKongstateServices,
// groupRulesFromHTTPRoutesByKongServiceName, getKongServiceNameByBackendRefs,
// translateHTTPRouteRulesMetaToKongstateService, translateHTTPRouteRulesMetaToKongstateRoutes;
// the current copy in Kong/kong-operator ingress-controller/):
//
//   - every rule of every HTTPRoute is keyed by its backendRefs alone: the Kong service
//     httproute.<route ns>.svc.<backend>_<backend>..., each backend
//     <ns>.<name>[.<port>][.<weight>] (the namespace the route's when not given), sorted;
//     "httproute.<ns>.svc._" without backends; a name longer than 511 characters becomes
//     httproute.<ns>.svc.<first backend>_combined.<sha256 of the name, hex>. So rules of
//     different HTTPRoutes of one namespace with the same backends share one Kong service
//     (its ID from that name, its host and upstream of that name);
//   - a service's rules are ordered by "<ns>/<name>.<rule>" (a string order: rule 10 comes
//     before rule 2); the first one's backendRefs, read as its HTTPRoute's (ReferenceGrants,
//     problems), are the service's backends; every rule's backendRequest timeout other than
//     the default is set in that order, the last one winning;
//   - its routes are made as without the gate: by filters, then by matches of one HTTPRoute
//     with the same method, headers and query parameters, named after their first match;
//     never one route for two HTTPRoutes. Their protocols come from the listeners of all the
//     service's HTTPRoutes together (KIC computes them once per service).

// maxCombinedServiceName is KIC's maxKongServiceNameLength (512 - 1, Konnect's limit).
const maxCombinedServiceName = 511

// combinedRule is one rule of an attached HTTPRoute, for a combined service.
type combinedRule struct {
	hr        *gatewayv1.HTTPRoute
	ro        *routeOverrides
	hostnames []string
	listeners []*gatewayv1.Listener
	rule      int
}

// key is KIC's getRuleKey, the order of a service's rules.
func (c combinedRule) key() string {
	return c.hr.Namespace + "/" + c.hr.Name + "." + strconv.Itoa(c.rule)
}

// combinedServiceName is KIC's getKongServiceNameByBackendRefs: the Kong service of rules
// with backendRefs refs in HTTPRoutes of namespace ns.
func combinedServiceName(ns string, refs []gatewayv1.HTTPBackendRef) string {
	if len(refs) == 0 {
		return "httproute." + ns + ".svc._" // a host cannot end with "."
	}
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		bns := ns
		if r.Namespace != nil {
			bns = string(*r.Namespace)
		}
		n := bns + "." + string(r.Name) // KIC ignores group and kind here
		if r.Port != nil {
			n += "." + strconv.Itoa(int(*r.Port))
		}
		if r.Weight != nil {
			n += "." + strconv.Itoa(int(*r.Weight))
		}
		names = append(names, n)
	}
	sort.Strings(names)
	name := "httproute." + ns + ".svc." + strings.Join(names, "_")
	if len(name) > maxCombinedServiceName {
		return fmt.Sprintf("httproute.%s.svc.%s_combined.%x", ns, names[0], sha256.Sum256([]byte(name)))
	}
	return name
}

// addCombinedHTTPRoute adds the rules of hr, attached as ra, to the combined services'
// rules, when KIC translates hr (httpRouteTranslatable).
func (b *builder) addCombinedHTTPRoute(groups map[string][]combinedRule, hr *gatewayv1.HTTPRoute, ra *gatewayapi.RouteAttachment) map[string][]combinedRule {
	ro, ok := b.httpRouteTranslatable(hr)
	if !ok {
		return groups
	}
	if groups == nil {
		groups = map[string][]combinedRule{}
	}
	listeners := parentListeners(ra)
	for i, rule := range hr.Spec.Rules {
		name := combinedServiceName(hr.Namespace, rule.BackendRefs)
		groups[name] = append(groups[name], combinedRule{hr: hr, ro: ro, hostnames: ra.Hostnames, listeners: listeners, rule: i})
	}
	return groups
}

// httpCombinedServices makes the Kong service of each group of rules, in name order.
func (b *builder) httpCombinedServices(groups map[string][]combinedRule) {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.httpCombinedService(n, groups[n])
	}
	b.httpRouteProtocols = nil
}

// httpCombinedService makes the Kong service name of rules (KIC's
// translateHTTPRouteRulesMetaToKongstateService).
func (b *builder) httpCombinedService(name string, rules []combinedRule) {
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
		}
	}
	b.httpRouteProtocols = httpListenerProtocols(listeners)

	// Routes: by filters, then by HTTPRoute and match key, in the order first seen (they are
	// sorted by name below, as KIC sorts them). A route that cannot be made is left out
	// alone, as without the gate.
	var routes []*routeEntry
	var filterOrder []string
	byFilters := map[string][]combinedRule{}
	for _, r := range rules {
		k := sortedJSONKey(r.hr.Spec.Rules[r.rule].Filters)
		if _, ok := byFilters[k]; !ok {
			filterOrder = append(filterOrder, k)
		}
		byFilters[k] = append(byFilters[k], r)
	}
	type matchGroup struct {
		c  combinedRule
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
	if len(routes) == 0 {
		return // each left-out route is reported
	}
	sort.Slice(routes, func(i, j int) bool { return *routes[i].Name < *routes[j].Name })

	ks := b.httpRouteKongService(first.hr, first.rule, name)
	ks.routes = routes
	for _, r := range rules {
		if ms, ok := ruleTimeout(r.hr.Spec.Rules[r.rule]); ok {
			ks.svc.ConnectTimeout, ks.svc.ReadTimeout, ks.svc.WriteTimeout = kong.Int(ms), kong.Int(ms), kong.Int(ms)
		}
	}
	b.kongServices[name] = ks
}

// combinedSplitRules are the rules of the expressions router's splits by combined service,
// each once, in KIC's order (the first one's backendRefs are the service's).
func combinedSplitRules(splits []*httpSplitMatch) map[string][]combinedRule {
	groups := map[string][]combinedRule{}
	seen := map[combinedRuleID]bool{}
	for _, s := range splits {
		id := combinedRuleID{s.route, s.rule}
		if seen[id] {
			continue
		}
		seen[id] = true
		name := combinedServiceName(s.route.Namespace, s.route.Spec.Rules[s.rule].BackendRefs)
		groups[name] = append(groups[name], combinedRule{hr: s.route, ro: s.ro, rule: s.rule})
	}
	for _, rules := range groups {
		sort.SliceStable(rules, func(i, j int) bool { return rules[i].key() < rules[j].key() })
	}
	return groups
}

type combinedRuleID struct {
	hr   *gatewayv1.HTTPRoute
	rule int
}

// combinedSplitServices finishes the combined services of the expressions router: routes in
// name order, and the timeout of every rule in KIC's order, the last other than the default
// winning (KIC's applyTimeoutToServiceFromHTTPRouteRule over the service's rules; the
// per-HTTPRoute rule of the ungrouped translation, no timeout when a split failed, is not
// KIC's here).
func (b *builder) combinedSplitServices(groups map[string][]combinedRule) {
	for name, rules := range groups {
		ks := b.kongServices[name]
		if ks == nil {
			continue // every split of it was left out, reported
		}
		sort.Slice(ks.routes, func(i, j int) bool { return *ks.routes[i].Name < *ks.routes[j].Name })
		for _, r := range rules {
			if ms, ok := ruleTimeout(r.hr.Spec.Rules[r.rule]); ok {
				ks.svc.ConnectTimeout, ks.svc.ReadTimeout, ks.svc.WriteTimeout = kong.Int(ms), kong.Int(ms), kong.Int(ms)
			}
		}
	}
}

// ruleTimeout is rule's backendRequest timeout in milliseconds when it sets one other than
// Kong's default (a zero or unparsable one is none, as in the ungrouped translation).
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
