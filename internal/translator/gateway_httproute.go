package translator

import (
	"encoding/json"
	"fmt"
	pathlib "path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// kongDefaultTimeout is the timeout of KIC's Kong services, in milliseconds; an HTTPRoute
// rule's backendRequest timeout replaces it when different.
const kongDefaultTimeout = 60000

// httpRoutes translates the HTTPRoutes attached to our Gateways (translation-rules.md §14, and
// docs/kong-facts.md "Gateway API"), oldest first. KIC's traditional-router translation:
//
//   - Rules of one HTTPRoute with the same backendRefs (as a set) share a Kong service
//     httproute.<ns>.<name>.<first rule>, whose host and upstream have that name
//     (gateway_httproute_services.go; on both routers, and across HTTPRoutes with combined
//     services, gateway_httproute_combined.go).
//   - Among them, rules with the same filters, and matches with the same method, headers and
//     query parameters, share a Kong route httproute.<ns>.<name>.<rule>.<match> named after
//     the first match; a rule without matches is route httproute.<ns>.<name>.<rule>.0.
//   - What Kong would refuse is left out and reported on the HTTPRoute, as little as can be:
//     a match whose path it refuses (an invalid regex) leaves its Kong route's other matches
//     served; a route it refuses whole (an invalid header regex, an unsupported filter, ...)
//     leaves the service's other routes served (httpKongRoute). KIC sends them all, and Kong
//     refuses the whole configuration.
func (b *builder) httpRoutes() {
	routes := append([]*gatewayv1.HTTPRoute(nil), b.snap.HTTPRoutes...)
	sortByAge(routes)
	var expressions []attachedHTTPRoute
	var combined map[string][]serviceRule
	for _, hr := range routes {
		if hr == nil {
			continue
		}
		ra := b.attachedRoute(hr, gvkHTTPRoute, gatewayapi.KindHTTPRoute, hr.Spec.ParentRefs, routeBackendRefs(hr))
		if ra == nil {
			continue
		}
		if b.opts.ExpressionRoutes {
			expressions = append(expressions, attachedHTTPRoute{hr, ra.Hostnames, ra})
			continue
		}
		if b.opts.CombinedServicesFromDifferentHTTPRoutes {
			combined = b.addHTTPRouteRules(combined, hr, ra)
			continue
		}
		// Without combined services the route's Kong services are its own: made now, in
		// the routes' order (which decides a route name two HTTPRoutes claim).
		b.httpRuleServices(b.addHTTPRouteRules(nil, hr, ra))
	}
	if b.opts.ExpressionRoutes {
		b.httpRoutesExpressions(expressions)
	}
	if combined != nil {
		b.httpRuleServices(combined)
	}
}

// httpListenerProtocols are the protocols of the Kong routes of an HTTPRoute attached to
// listeners (KIC 3.5.x and later, PR #7901, "secure by default"): http for an HTTP listener,
// https for an HTTPS one, sorted, the listeners being those of its parentRefs (of their
// sectionName, or all of the Gateway's without one). A route attached to an HTTP listener
// only is then [http], not served on the HTTPS port, which Kong's default [http, https]
// would do. With no HTTP or HTTPS listener among them (an accepted HTTPRoute always has
// one) the protocols are [http, https], what KIC rendered before.
func httpListenerProtocols(listeners []*gatewayv1.Listener) []string {
	var http, https bool
	for _, l := range listeners {
		switch l.Protocol {
		case gatewayv1.HTTPProtocolType:
			http = true
		case gatewayv1.HTTPSProtocolType:
			https = true
		}
	}
	switch {
	case http && !https:
		return []string{"http"}
	case https && !http:
		return []string{"https"}
	}
	return []string{"http", "https"}
}

// httpRouteTranslatable checks what KIC checks of an HTTPRoute before the traditional
// router's translation (validateHTTPRoute), reports why it is left out, and returns its
// route annotations.
func (b *builder) httpRouteTranslatable(hr *gatewayv1.HTTPRoute) (*routeOverrides, bool) {
	if !b.hasRules(hr, gvkHTTPRoute, len(hr.Spec.Rules)) {
		return nil, false
	}
	for i, rule := range hr.Spec.Rules {
		for j, m := range rule.Matches {
			if len(m.QueryParams) > 0 {
				// KIC refuses the whole HTTPRoute: Kong's traditional router cannot match on
				// query parameters, and serving the route without them would match more.
				b.problem(hr, gvkHTTPRoute, fmt.Sprintf("spec.rules[%d].matches[%d].queryParams", i, j),
					"HTTPRoute can't be routed: query param matches are supported only with the expressions router")
				return nil, false
			}
		}
	}
	return b.routeAnnotations(hr, gvkHTTPRoute)
}

// jsonKey is a stable key of v for grouping (KIC groups by deep equality the same way).
func jsonKey(v any) string {
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(j)
}

// sortedJSONKey is the key of a list whose order does not matter (filters).
func sortedJSONKey[T any](items []T) string {
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, jsonKey(it))
	}
	sort.Strings(keys)
	return strings.Join(keys, ";")
}

// httpMatchRef is one match of one rule.
type httpMatchRef struct {
	rule, match int
	m           gatewayv1.HTTPRouteMatch
}

// matchKey is KIC's key of matches that one Kong route can carry: method, headers (names
// lowercased, first of each name, sorted) and query parameters.
func matchKey(m gatewayv1.HTTPRouteMatch) string {
	seen := map[string]bool{}
	var headers []gatewayv1.HTTPHeaderMatch
	for _, h := range m.Headers {
		n := strings.ToLower(string(h.Name))
		if seen[n] {
			continue
		}
		seen[n] = true
		h.Name = gatewayv1.HTTPHeaderName(n)
		headers = append(headers, h)
	}
	sort.Slice(headers, func(i, j int) bool { return headers[i].Name < headers[j].Name })
	return jsonKey(struct {
		Method  *gatewayv1.HTTPMethod
		Headers []gatewayv1.HTTPHeaderMatch
		Query   []gatewayv1.HTTPQueryParamMatch
	}{m.Method, headers, m.QueryParams})
}

// routeError is a failure that leaves a Kong route out.
type routeError struct {
	field, msg string
}

// leftOutMatches words what leaving out the route of matches ms leaves out: the rule when
// they are all its matches (or it has none), else the matches.
func leftOutMatches(hr *gatewayv1.HTTPRoute, ms []httpMatchRef) string {
	if len(ms) == 0 || len(ms) == len(hr.Spec.Rules[ms[0].rule].Matches) && allOfRule(ms) {
		return "the rule is left out"
	}
	if len(ms) == 1 {
		return "the match is left out"
	}
	fields := make([]string, len(ms))
	for i, m := range ms {
		fields[i] = fmt.Sprintf("spec.rules[%d].matches[%d]", m.rule, m.match)
	}
	return "the matches " + strings.Join(fields, ", ") + " are left out"
}

// allOfRule: the matches ms are of one rule.
func allOfRule(ms []httpMatchRef) bool {
	for _, m := range ms {
		if m.rule != ms[0].rule {
			return false
		}
	}
	return true
}

// servedMatches is ms without the matches whose path Kong would refuse, each reported.
func (b *builder) servedMatches(hr *gatewayv1.HTTPRoute, ms []httpMatchRef) []httpMatchRef {
	var served []httpMatchRef // nil while every match so far is served: ms itself serves then
	for i, m := range ms {
		if e := b.httpMatchPathProblem(m.m.Path); e != "" {
			b.problem(hr, gvkHTTPRoute, fmt.Sprintf("spec.rules[%d].matches[%d].path", m.rule, m.match),
				"HTTPRoute can't be routed: %s; %s", e, leftOutMatches(hr, []httpMatchRef{m}))
			if served == nil {
				served = append(make([]httpMatchRef, 0, len(ms)-1), ms[:i]...)
			}
			continue
		}
		if served != nil {
			served = append(served, m)
		}
	}
	if served == nil {
		return ms
	}
	return served
}

// httpMatchPathProblem says why Kong would refuse the paths of path match p, "" when it
// takes them (or p is nil).
func (b *builder) httpMatchPathProblem(p *gatewayv1.HTTPPathMatch) string {
	if p == nil {
		return ""
	}
	paths, err := httpRoutePaths(p, b.pathRegex)
	if err != nil {
		return err.Error()
	}
	for _, kp := range paths {
		if e := b.routePath(kp); e != "" {
			return e
		}
	}
	return ""
}

// checkServiceName says why name cannot be a Kong service's name and host, "" when it can.
func checkServiceName(name string) string {
	if e := checkName(name); e != "" {
		return e
	}
	return checkServiceHost(name)
}

// httpRouteKongService is the Kong service name (also its host) of rule of hr, to the
// rule's backendRefs; routes are added by the caller.
func (b *builder) httpRouteKongService(hr *gatewayv1.HTTPRoute, rule int, name string) *kongService {
	ks := &kongService{
		routeByKey: map[string]*routeEntry{},
		gateway:    &gatewayBackends{route: hr, gvk: gvkHTTPRoute, field: fmt.Sprintf("spec.rules[%d].backendRefs", rule)},
		svc:        b.httpKongService(name, name),
	}
	for _, be := range hr.Spec.Rules[rule].BackendRefs {
		ks.gateway.refs = append(ks.gateway.refs, be.BackendRef)
	}
	return ks
}

// httpKongRoute builds the Kong route(s) of matches ms (all with the same method, headers and
// query parameters) of rule, with the rule's filters; ms nil is a rule without matches. A
// RequestRedirect needs the path of each match, so it makes one route per match. What Kong
// would refuse is left out and reported, as small as it can be: a match whose path Kong
// refuses (the route keeps the others, and its name, which KIC takes from the first match
// whether or not it is served), else the whole route (headers, filters, name). It returns
// no route when nothing is left.
func (b *builder) httpKongRoute(hr *gatewayv1.HTTPRoute, ro *routeOverrides, hostnames []string, rule, match int,
	ms []httpMatchRef, filters []gatewayv1.HTTPRouteFilter) []*routeEntry {
	redirect := false
	for _, f := range filters {
		redirect = redirect || f.Type == gatewayv1.HTTPRouteFilterRequestRedirect
	}
	if redirect && len(ms) > 1 {
		var out []*routeEntry
		for _, m := range ms {
			out = append(out, b.httpKongRoute(hr, ro, hostnames, m.rule, m.match, []httpMatchRef{m}, filters)...)
		}
		return out
	}
	served := ms
	if len(ms) > 0 {
		if served = b.servedMatches(hr, ms); len(served) == 0 {
			return nil
		}
	}
	// The filters read the path of the group's first match, as KIC's do (a ReplacePrefixMatch
	// rewrite makes the route's paths from it); of the first served one, so that a match left
	// out never reaches Kong through a rewrite.
	path := ""
	if len(served) > 0 && served[0].m.Path != nil && served[0].m.Path.Value != nil {
		path = *served[0].m.Path.Value
	}
	r, err := b.httpKongRouteOf(hr, ro, hostnames, rule, match, served, filters, path)
	if err != nil {
		b.problem(hr, gvkHTTPRoute, err.field, "HTTPRoute can't be routed: %s; %s", err.msg, leftOutMatches(hr, served))
		return nil
	}
	return []*routeEntry{r}
}

// httpKongRouteOf is httpKongRoute for one route of served matches ms (their paths checked),
// or the error that leaves it out; path is the one its filters read.
func (b *builder) httpKongRouteOf(hr *gatewayv1.HTTPRoute, ro *routeOverrides, hostnames []string, rule, match int,
	ms []httpMatchRef, filters []gatewayv1.HTTPRouteFilter, path string) (*routeEntry, *routeError) {
	name := fmt.Sprintf("httproute.%s.%s.%d.%d", hr.Namespace, hr.Name, rule, match)
	field := fmt.Sprintf("spec.rules[%d]", rule)
	r := &file.FRoute{Route: kong.Route{
		ID:           kong.String(kongstate.RouteID(b.opts.Workspace, name)),
		Name:         kong.String(name),
		Protocols:    kong.StringSlice(b.httpRouteProtocols...),
		PreserveHost: kong.Bool(true),
		StripPath:    kong.Bool(false),
	}}
	if len(r.Protocols) == 0 {
		r.Protocols = kong.StringSlice("http", "https")
	}
	for _, h := range hostnames {
		r.Hosts = append(r.Hosts, kong.String(h))
	}
	var ruleNames []string
	addRuleName := func(i int) {
		if n := hr.Spec.Rules[i].Name; n != nil && *n != "" {
			for _, x := range ruleNames {
				if x == string(*n) {
					return
				}
			}
			ruleNames = append(ruleNames, string(*n))
		}
	}
	if len(ms) == 0 {
		if len(hostnames) == 0 {
			// Kong refuses an http route with neither hosts nor paths (nor methods,
			// headers, snis); KIC refuses the rule the same way.
			return nil, &routeError{field, "no match rules or hostnames specified"}
		}
		// KIC leaves strip_path unset on the route of a rule without matches, so Kong's
		// default (true) applies.
		r.StripPath = nil
		addRuleName(rule)
	}
	seenMethods := map[string]bool{}
	for _, m := range ms {
		addRuleName(m.rule)
		if p := m.m.Path; p != nil {
			paths, _ := httpRoutePaths(p, noRegexCheck) // checked by servedMatches
			for _, kp := range paths {
				r.Paths = append(r.Paths, kong.String(kp))
			}
		}
		if m.m.Method != nil && !seenMethods[string(*m.m.Method)] {
			seenMethods[string(*m.m.Method)] = true
			r.Methods = append(r.Methods, kong.String(string(*m.m.Method)))
		}
	}
	if len(ms) > 0 {
		headers, err := httpRouteHeaders(ms[0].m.Headers, b.headerRegex)
		if err != nil {
			return nil, &routeError{fmt.Sprintf("spec.rules[%d].matches[%d].headers", ms[0].rule, ms[0].match), err.Error()}
		}
		if len(headers) > 0 {
			r.Headers = headers
		}
	}
	r.Tags = b.ruleNameTags(hr, gvkHTTPRoute, ruleNames)

	host := ""
	if len(r.Hosts) == 1 && !strings.Contains(*r.Hosts[0], "*") {
		host = *r.Hosts[0]
	}
	extensionRefs, rerr := b.addFilterPlugins(filters, path, field, host, r)
	if rerr != nil {
		return nil, rerr
	}
	ro.apply(r)
	kongHTTPSRedirect(hr, ro, filters, host, r)
	if hasPrefixRewrite(filters) {
		// A ReplacePrefixMatch rewrite made the paths: check them as the matches' were.
		for _, kp := range r.Paths {
			if e := b.routePath(*kp); e != "" {
				return nil, &routeError{field + ".matches", e}
			}
		}
	}
	if e := b.claimRouteName(hr, gvkHTTPRoute, name); e != "" {
		return nil, &routeError{field, e}
	}
	return &routeEntry{FRoute: r, src: hr, srcGVK: gvkHTTPRoute, extraPlugins: extensionRefs}, nil
}

// addFilterPlugins gives route r the plugins of filters (httpFilterPlugins), tagged as r,
// and returns the KongPlugins ExtensionRefs name; field is the rule's, for the error.
//
// host is the one exact host the route serves, "" when it serves several or a wildcard: a
// redirect that changes the scheme or port without a hostname is sent there (konductor; KIC
// writes a relative Location, which keeps the request's scheme and port: an http-to-https
// redirect answered by a redirect to itself).
func (b *builder) addFilterPlugins(filters []gatewayv1.HTTPRouteFilter, path, field, host string, r *file.FRoute) ([]string, *routeError) {
	plugins, extensionRefs, err := httpFilterPlugins(filters, path, host, r, b.opts.KongVersion.GTE(redirectPluginMinVersion))
	if err != nil {
		return nil, &routeError{field + ".filters", err.Error()}
	}
	for _, p := range plugins {
		p.Tags = r.Tags
		r.Plugins = append(r.Plugins, p)
	}
	return extensionRefs, nil
}

// httpRoutePaths maps a path match to Kong paths (KIC): Exact "~<v>$"; PathPrefix "~<v>$"
// and "<v>/" ("<v>" when it ends in "/"); RegularExpression "~<v>". Unlike KIC, the <v> of
// Exact and PathPrefix is a literal in the regex (regexp.QuoteMeta): the spec's Exact "/a.b"
// matches "/a.b" only, not "/aXb", and "/x(y" makes a regex Kong compiles, not one it refuses
// with the whole configuration (docs/migration-from-kic.md). A path without regex
// metacharacters, nearly every one, is KIC's.
func httpRoutePaths(p *gatewayv1.HTTPPathMatch, checkRegex func(string) string) ([]string, error) {
	v := "/"
	if p.Value != nil {
		v = *p.Value
	}
	t := gatewayv1.PathMatchPathPrefix
	if p.Type != nil {
		t = *p.Type
	}
	switch t {
	case gatewayv1.PathMatchExact:
		return []string{"~" + regexp.QuoteMeta(v) + "$"}, nil
	case gatewayv1.PathMatchPathPrefix:
		prefix := v
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		return []string{"~" + regexp.QuoteMeta(v) + "$", prefix}, nil
	case gatewayv1.PathMatchRegularExpression:
		if e := checkRegex(v); e != "" {
			return nil, fmt.Errorf("invalid regex %q: %s", v, e)
		}
		return []string{"~" + v}, nil
	}
	return nil, fmt.Errorf("unsupported path match type %q", t)
}

// httpRouteHeaders maps header matches: Exact as the value, RegularExpression as "~*<v>".
func httpRouteHeaders(hs []gatewayv1.HTTPHeaderMatch, checkRegex func(string) string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, h := range hs {
		n := string(h.Name)
		if _, dup := out[n]; dup {
			return nil, fmt.Errorf("multiple header matches for the same header are not allowed: %s", n)
		}
		if e := checkHeaderName(n); e != "" {
			return nil, fmt.Errorf("%s", e)
		}
		switch {
		case h.Type == nil || *h.Type == gatewayv1.HeaderMatchExact:
			out[n] = []string{h.Value}
		case *h.Type == gatewayv1.HeaderMatchRegularExpression:
			if e := checkRegex(h.Value); e != "" {
				return nil, fmt.Errorf("invalid regex %q for header %s: %s", h.Value, n, e)
			}
			out[n] = []string{"~*" + h.Value}
		default:
			return nil, fmt.Errorf("unknown/unsupported header match type: %s", *h.Type)
		}
	}
	return out, nil
}

// transformer is the configuration of a request-transformer or response-transformer plugin
// built from filters; filters of one type are merged into one plugin, lists appended.
type transformer struct {
	replaceHeaders, addHeaders, appendHeaders, removeHeaders []string
	replaceURI                                               string
}

func (t *transformer) config() kong.Configuration {
	c := kong.Configuration{}
	part := func(key string, headers []string, uri string) {
		m := map[string]any{}
		if len(headers) > 0 {
			m["headers"] = headers
		}
		if uri != "" {
			m["uri"] = uri
		}
		if len(m) > 0 {
			c[key] = m
		}
	}
	part("replace", t.replaceHeaders, t.replaceURI)
	part("add", t.addHeaders, "")
	part("append", t.appendHeaders, "")
	part("remove", t.removeHeaders, "")
	return c
}

func headerModifier(t *transformer, f *gatewayv1.HTTPHeaderFilter) {
	if f == nil {
		return
	}
	for _, h := range f.Set {
		t.replaceHeaders = append(t.replaceHeaders, string(h.Name)+":"+h.Value)
		t.addHeaders = append(t.addHeaders, string(h.Name)+":"+h.Value)
	}
	for _, h := range f.Add {
		t.appendHeaders = append(t.appendHeaders, string(h.Name)+":"+h.Value)
	}
	t.removeHeaders = append(t.removeHeaders, f.Remove...)
}

// httpFilterPlugins turns filters into plugins on route r (KIC's mapping): header modifiers
// into request-/response-transformer, RequestRedirect into request-termination plus a
// response-transformer Location header, URLRewrite into request-transformer (PrefixMatch
// also rewrites r's paths to capture the rest), ExtensionRef into the names of KongPlugins
// attached like konghq.com/plugins, CORS into Kong's cors plugin (not KIC's: it refuses CORS).
// Other filters are refused.
//
// redirectPlugin (the gateways are Kong 3.9 or later) makes a RequestRedirect with a hostname
// Kong's redirect plugin instead, which keeps the request's path (KIC's
// SupportRedirectPlugin); without a hostname the plugin cannot be used (its location must
// be an absolute URL), so the two plugins remain, which redirect to a path on the same host.
func httpFilterPlugins(filters []gatewayv1.HTTPRouteFilter, path, host string, r *file.FRoute, redirectPlugin bool) ([]*file.FPlugin, []string, error) {
	var req, resp *transformer
	var plugins []*file.FPlugin
	var extensionRefs []string
	reqT := func() *transformer {
		if req == nil {
			req = &transformer{}
		}
		return req
	}
	respT := func() *transformer {
		if resp == nil {
			resp = &transformer{}
		}
		return resp
	}
	for _, f := range filters {
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
			headerModifier(reqT(), f.RequestHeaderModifier)
		case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			headerModifier(respT(), f.ResponseHeaderModifier)
		case gatewayv1.HTTPRouteFilterRequestRedirect:
			rr := f.RequestRedirect
			if rr == nil {
				return nil, nil, fmt.Errorf("%s filter without requestRedirect", f.Type)
			}
			if rr.Hostname == nil && (rr.Scheme != nil || rr.Port != nil) && host != "" {
				rr = rr.DeepCopy()
				h := gatewayv1.PreciseHostname(host)
				rr.Hostname = &h
			}
			if rr.Hostname == nil && httpsSchemeOnly(rr) && !kongHTTPSRedirectCodes[redirectStatus(rr)] {
				// Kong's own https redirect (kongHTTPSRedirect) cannot answer this code, and a
				// Location without a host keeps the request's scheme: a redirect to itself.
				return nil, nil, fmt.Errorf("requestRedirect.statusCode %d with scheme https and no hostname: "+
					"Kong redirects to https with 301, 302, 307 or 308 only (a route with one exact hostname can use any)", redirectStatus(rr))
			}
			if redirectPlugin && rr.Hostname != nil {
				plugins = append(plugins, redirectKongPlugin(rr))
				continue
			}
			plugins = append(plugins, &file.FPlugin{Plugin: kong.Plugin{
				Name: kong.String("request-termination"), Config: kong.Configuration{"status_code": redirectStatus(rr)}}})
			p := path
			if rr.Path != nil && rr.Path.Type == gatewayv1.FullPathHTTPPathModifier && rr.Path.ReplaceFullPath != nil {
				p = *rr.Path.ReplaceFullPath
			}
			location := "Location: " + p
			if rr.Hostname != nil {
				scheme, hostPort := redirectSchemeHostPort(rr)
				location = fmt.Sprintf("Location: %s://%s", scheme, pathlib.Join(hostPort, p))
			}
			respT().addHeaders = append(respT().addHeaders, location)
		case gatewayv1.HTTPRouteFilterURLRewrite:
			if err := urlRewrite(reqT(), f.URLRewrite, path, r); err != nil {
				return nil, nil, err
			}
		case gatewayv1.HTTPRouteFilterCORS:
			if f.CORS == nil {
				return nil, nil, fmt.Errorf("%s filter without cors", f.Type)
			}
			plugins = append(plugins, corsKongPlugin(f.CORS))
		case gatewayv1.HTTPRouteFilterExtensionRef:
			ext := f.ExtensionRef
			if ext == nil || string(ext.Group) != gvkKongPlugin.Group || string(ext.Kind) != gvkKongPlugin.Kind {
				g, k := "", ""
				if ext != nil {
					g, k = string(ext.Group), string(ext.Kind)
				}
				return nil, nil, fmt.Errorf("plugin %s/%s unsupported", g, k)
			}
			extensionRefs = append(extensionRefs, string(ext.Name))
		default:
			return nil, nil, fmt.Errorf("httpFilter %s unsupported", f.Type)
		}
	}
	// KIC orders the transformers by plugin name after the request-termination.
	if req != nil {
		plugins = append(plugins, &file.FPlugin{Plugin: kong.Plugin{Name: kong.String("request-transformer"), Config: req.config()}})
	}
	if resp != nil {
		plugins = append(plugins, &file.FPlugin{Plugin: kong.Plugin{Name: kong.String("response-transformer"), Config: resp.config()}})
	}
	return plugins, extensionRefs, nil
}

// corsKongPlugin is a CORS filter as Kong's cors plugin. Kong's plugin says "all" by leaving a
// list out rather than with "*": a wildcard method list leaves methods to Kong's default (every
// method), a wildcard header list leaves headers out so that Kong echoes the request's
// Access-Control-Request-Headers (which the spec asks for when credentials are allowed). An
// origin whose host has a wildcard becomes the regex Kong matches it with (corsOriginRegex).
func corsKongPlugin(f *gatewayv1.HTTPCORSFilter) *file.FPlugin {
	cfg := kong.Configuration{}
	origins := make([]string, 0, len(f.AllowOrigins))
	for _, o := range f.AllowOrigins {
		origins = append(origins, corsOriginRegex(string(o)))
	}
	if len(origins) > 0 {
		cfg["origins"] = origins
	}
	if methods := corsList(f.AllowMethods); len(methods) > 0 {
		cfg["methods"] = methods
	}
	if headers := corsList(f.AllowHeaders); len(headers) > 0 {
		cfg["headers"] = headers
	}
	if len(f.ExposeHeaders) > 0 {
		exposed := make([]string, 0, len(f.ExposeHeaders))
		for _, h := range f.ExposeHeaders {
			exposed = append(exposed, string(h))
		}
		cfg["exposed_headers"] = exposed
	}
	cfg["credentials"] = f.AllowCredentials != nil && *f.AllowCredentials
	if f.MaxAge > 0 {
		cfg["max_age"] = int(f.MaxAge)
	}
	return &file.FPlugin{Plugin: kong.Plugin{Name: kong.String("cors"), Config: cfg}}
}

// corsList is a CORS filter's method or header list for Kong, nil for the wildcard "*" (the
// API server refuses "*" beside other values).
func corsList[T ~string](values []T) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if v == "*" {
			return nil
		}
		out = append(out, string(v))
	}
	return out
}

// corsOriginRegex is an allowed origin as Kong's cors plugin reads it: "*" and origins without a
// wildcard as they are (Kong compares those after removing a default port, as the spec does);
// a host with a wildcard, "https://*.example.com", a regex Kong anchors at both ends and
// matches against the request's scheme://host[:port]: the "*" is one or more DNS labels
// (the spec's greedy match to the left), the dots literal.
func corsOriginRegex(origin string) string {
	if origin == "*" || !strings.Contains(origin, "*") {
		return origin
	}
	scheme, rest, _ := strings.Cut(origin, "://")
	return scheme + "://" + strings.ReplaceAll(regexp.QuoteMeta(rest), `\*`, `[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*`)
}

// redirectPluginMinVersion is the first Kong with the redirect plugin (KIC's
// versions.KongRedirectPluginCutoff).
var redirectPluginMinVersion = semver.MustParse("3.9.0")

// redirectSchemeHostPort are the scheme and host[:port] of a RequestRedirect's Location
// (KIC's schemeHostPortFromHTTPPathModifier): the scheme http unless given (the redirect
// plugin needs one; the spec's "the request's scheme" cannot be said), the port only when
// given. KIC before 3.4 wrote ":80" when no port was given, which sends a client to port 80
// whatever the scheme.
func redirectSchemeHostPort(rr *gatewayv1.HTTPRequestRedirectFilter) (string, string) {
	scheme := "http"
	if rr.Scheme != nil {
		scheme = *rr.Scheme
	}
	hostPort := ""
	if rr.Hostname != nil {
		hostPort = string(*rr.Hostname)
	}
	if rr.Port != nil {
		hostPort += ":" + strconv.Itoa(int(*rr.Port))
	}
	return scheme, hostPort
}

// redirectStatus is a RequestRedirect's status code, 302 when not given (the spec's default).
func redirectStatus(rr *gatewayv1.HTTPRequestRedirectFilter) int {
	if rr.StatusCode != nil {
		return *rr.StatusCode
	}
	return 302
}

// kongHTTPSRedirectCodes are the https_redirect_status_code values with which Kong answers a
// plain-http request on an https-only route by a redirect (kong/runloop/handler.lua; its
// default, 426, answers "Please use HTTPS protocol" without a Location).
var kongHTTPSRedirectCodes = map[int]bool{301: true, 302: true, 307: true, 308: true}

// httpsSchemeOnly reports whether rr only changes the scheme to https: no port, no path (a
// hostname is the caller's to check).
func httpsSchemeOnly(rr *gatewayv1.HTTPRequestRedirectFilter) bool {
	return rr.Scheme != nil && *rr.Scheme == "https" && rr.Port == nil && rr.Path == nil
}

// kongHTTPSRedirect makes route r answer the rule's RequestRedirect to https with Kong's own
// http-to-https redirect when the filter has no hostname, port or path and r has no one exact
// host to write an absolute Location with (host ""): protocols [https] and
// https_redirect_status_code the filter's code. Kong then answers a plain-http request, in its
// router's access phase before any plugin runs, with Location "https://" .. $host ..
// $request_uri: the request's host without its port (the spec's port 443 for https), path and
// query, which no plugin can write. The rule's plugins (the request-termination and relative
// Location of httpFilterPlugins) stay for the requests Kong does not redirect: https ones,
// which match the route as before on both router flavors (protocols do not restrict an http
// route's matching, handler.lua checks them after the match), and plain-http ones a trusted
// proxy says were https (X-Forwarded-Proto with trusted_ips).
//
// Only when the redirect is the rule's only filter and the HTTPRoute sets no route protocols,
// https redirect code or plugins by annotation: Kong's redirect runs no route plugin, so a
// response header, CORS or an attached plugin would be lost; those rules keep the plugins
// alone (a relative Location: docs/translation-rules.md §15.4).
func kongHTTPSRedirect(hr *gatewayv1.HTTPRoute, ro *routeOverrides, filters []gatewayv1.HTTPRouteFilter, host string, r *file.FRoute) {
	if host != "" || len(filters) != 1 || filters[0].Type != gatewayv1.HTTPRouteFilterRequestRedirect {
		return
	}
	rr := filters[0].RequestRedirect
	if rr == nil || rr.Hostname != nil || !httpsSchemeOnly(rr) || !kongHTTPSRedirectCodes[redirectStatus(rr)] {
		return
	}
	if ro.annotationProtocols != nil || ro.forceSSL || ro.redirectCode != nil {
		return
	}
	if _, ok := hr.Annotations[annPlugins]; ok {
		return
	}
	r.Protocols = kong.StringSlice("https")
	r.HTTPSRedirectStatusCode = kong.Int(redirectStatus(rr))
}

// redirectKongPlugin is the redirect plugin of a RequestRedirect with a hostname (Kong 3.9
// and later): location <scheme>://<host>[:<port>] followed by the ReplaceFullPath path, or
// by "/" with keep_incoming_path, so that the request's path and query string are kept, as
// the spec asks of a redirect without a path modifier (a ReplacePrefixMatch, which neither
// KIC nor the plugin can do, keeps the request's path too).
func redirectKongPlugin(rr *gatewayv1.HTTPRequestRedirectFilter) *file.FPlugin {
	scheme, hostPort := redirectSchemeHostPort(rr)
	cfg := kong.Configuration{"status_code": redirectStatus(rr)}
	if rr.Path != nil && rr.Path.Type == gatewayv1.FullPathHTTPPathModifier && rr.Path.ReplaceFullPath != nil && *rr.Path.ReplaceFullPath != "" {
		cfg["location"] = scheme + "://" + hostPort + *rr.Path.ReplaceFullPath
	} else {
		cfg["location"] = scheme + "://" + hostPort + "/"
		cfg["keep_incoming_path"] = true
	}
	return &file.FPlugin{Plugin: kong.Plugin{Name: kong.String("redirect"), Config: cfg}}
}

// urlRewrite is KIC's URLRewrite: ReplaceFullPath replaces the URI; ReplacePrefixMatch
// replaces the matched prefix, with r's paths changed to "~<prefix>$" and "~<prefix>(/.*)"
// so the rest is captured; a hostname replaces the Host header.
func urlRewrite(t *transformer, f *gatewayv1.HTTPURLRewriteFilter, path string, r *file.FRoute) error {
	if f == nil || (f.Path == nil && f.Hostname == nil) {
		return fmt.Errorf("URLRewrite missing Path and Hostname")
	}
	if f.Path != nil {
		switch f.Path.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			if f.Path.ReplaceFullPath == nil {
				return fmt.Errorf("URLRewrite missing ReplaceFullPath")
			}
			if t.replaceURI == "" {
				t.replaceURI = *f.Path.ReplaceFullPath
			}
		case gatewayv1.PrefixMatchHTTPPathModifier:
			p, root := rewritePrefix(path)
			uri := "/"
			if rp := f.Path.ReplacePrefixMatch; rp != nil {
				repl := strings.TrimSuffix(*rp, "/")
				switch {
				case repl == "" && root:
					uri = `$(uri_captures[1] == nil and "/" or "/" .. uri_captures[1])`
				case repl == "":
					uri = `$(uri_captures[1] == nil and "/" or uri_captures[1])`
				case root:
					uri = repl + `$(uri_captures[1] == nil and "" or "/" .. uri_captures[1])`
				default:
					uri = repl + `$(uri_captures[1])`
				}
			}
			if t.replaceURI == "" {
				t.replaceURI = uri
			}
			// The prefix is a literal in the regexes (KIC puts it in unescaped: PathPrefix
			// allows "(", which would make Kong refuse the whole configuration).
			capture := rewritePrefixCapture(path)
			r.Paths = kong.StringSlice("~"+regexp.QuoteMeta(p)+"$", "~"+capture)
		default:
			return fmt.Errorf("unsupported path type %s for URLRewrite", f.Path.Type)
		}
	}
	if f.Hostname != nil {
		t.replaceHeaders = append(t.replaceHeaders, "host:"+string(*f.Hostname))
		t.addHeaders = append(t.addHeaders, "host:"+string(*f.Hostname))
	}
	return nil
}

// rewritePrefix is the prefix a ReplacePrefixMatch rewrite replaces (KIC's normalizePath):
// "/" for an empty or root path, else the path without its trailing "/"; root says which.
func rewritePrefix(path string) (prefix string, root bool) {
	if path == "" || path == "/" {
		return "/", true
	}
	return strings.TrimSuffix(path, "/"), false
}

// rewritePrefixCapture is the regex, without Kong's "~", that matches the paths below the
// prefix of a ReplacePrefixMatch rewrite and captures the rest as uri_captures[1]: "/(.*)"
// for the root (a Kong path cannot start with a capture, so the "/" stays out of it), else
// "<prefix>(/.*)" so "/prefix/" keeps its slash, the prefix a literal (regexp.QuoteMeta). The traditional route's second path and, with
// "^" added, the expression route's second predicate.
func rewritePrefixCapture(path string) string {
	p, root := rewritePrefix(path)
	if root {
		return "/(.*)"
	}
	return regexp.QuoteMeta(p) + "(/.*)"
}

// hasPrefixRewrite says whether filters hold a URLRewrite of type ReplacePrefixMatch (with
// or without a replacement): KIC then matches the rule's PathPrefix matches with a capture.
func hasPrefixRewrite(filters []gatewayv1.HTTPRouteFilter) bool {
	for _, f := range filters {
		if f.Type == gatewayv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil && f.URLRewrite.Path != nil &&
			f.URLRewrite.Path.Type == gatewayv1.PrefixMatchHTTPPathModifier {
			return true
		}
	}
	return false
}

// gatewayRouteSources are the Gateway API routes whose Kong routes plugins can attach to, in
// the order they were translated.
func (b *builder) gatewayRouteSources() []routeSource {
	var out []routeSource
	for i := range routeKindTable {
		k := &routeKindTable[i]
		objs := k.list(b.snap)
		sortByAge(objs)
		for _, o := range objs {
			out = append(out, routeSource{o, k.gvk})
		}
	}
	return out
}

// objects lists the non-nil objects of objs as client.Objects.
func objects[E any, T interface {
	*E
	client.Object
}](objs []T) []client.Object {
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if o != nil {
			out = append(out, o)
		}
	}
	return out
}

// parentField is the field of parentRef ref in refs, for problems.
func parentField(refs []gatewayv1.ParentReference, ref gatewayv1.ParentReference, fallback int) string {
	for i := range refs {
		if jsonKey(refs[i]) == jsonKey(ref) {
			return fmt.Sprintf("spec.parentRefs[%d]", i)
		}
	}
	return fmt.Sprintf("spec.parentRefs[%d]", fallback)
}
