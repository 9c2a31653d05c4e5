package explain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/kong/go-kong/kong"
	netv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongrouter"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
)

// Source is the Kubernetes object an entity was translated from, and for a route the part of
// it: an Ingress's spec.rules[Rule].http.paths[Path], an HTTPRoute's or GRPCRoute's
// spec.rules[Rule].matches[Match].
type Source struct {
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Rule      *int   `json:"rule,omitempty"`
	Path      *int   `json:"path,omitempty"`
	Match     *int   `json:"match,omitempty"`
}

// String is "Kind namespace/name" with the part's field path.
func (s Source) String() string {
	out := s.Kind + " " + s.Name
	if s.Namespace != "" {
		out = s.Kind + " " + s.Namespace + "/" + s.Name
	}
	switch {
	case s.Rule != nil && s.Path != nil:
		out += fmt.Sprintf(" spec.rules[%d].http.paths[%d]", *s.Rule, *s.Path)
	case s.Rule != nil && s.Match != nil:
		out += fmt.Sprintf(" spec.rules[%d].matches[%d]", *s.Rule, *s.Match)
	case s.Rule != nil:
		out += fmt.Sprintf(" spec.rules[%d]", *s.Rule)
	}
	return out
}

func (s Source) key() string { return s.Kind + "/" + s.Namespace + "/" + s.Name }

// sources reads entities' tags back to objects, with the objects and problems of the input.
type sources struct {
	ingresses  map[string]*netv1.Ingress
	httpRoutes map[string]*gatewayv1.HTTPRoute
	problems   map[string][]translator.Problem // by Source.key
	order      []string                        // problem objects in the translation's order
	legacy     bool
}

func newSources(in Input) *sources {
	s := &sources{ingresses: map[string]*netv1.Ingress{}, httpRoutes: map[string]*gatewayv1.HTTPRoute{},
		problems: map[string][]translator.Problem{}, legacy: in.LegacyRegexDetection}
	for _, o := range in.Objects {
		switch o := o.(type) {
		case *netv1.Ingress:
			s.ingresses[Source{Kind: "Ingress", Namespace: o.Namespace, Name: o.Name}.key()] = o
		case *gatewayv1.HTTPRoute:
			s.httpRoutes[Source{Kind: "HTTPRoute", Namespace: o.Namespace, Name: o.Name}.key()] = o
		}
	}
	for _, p := range in.Problems {
		if p.Warning {
			continue
		}
		k := Source{Kind: p.Object.Kind, Namespace: p.Object.Namespace, Name: p.Object.Name}.key()
		if _, ok := s.problems[k]; !ok {
			s.order = append(s.order, k)
		}
		s.problems[k] = append(s.problems[k], p)
	}
	return s
}

// of reads the object an entity's tags name (the first tag of each k8s-* prefix, as
// kongstate.ObjectRefFromTags reads them; a uid is not needed: manifests may have none).
func (s *sources) of(tags []*string) *Source {
	var src Source
	first := func(dst *string, t, prefix string) {
		if v, ok := strings.CutPrefix(t, prefix); ok && *dst == "" {
			*dst = v
		}
	}
	for _, t := range tags {
		if t != nil {
			first(&src.Name, *t, kongstate.TagName)
			first(&src.Namespace, *t, kongstate.TagNamespace)
			first(&src.Kind, *t, kongstate.TagKind)
		}
	}
	if src.Kind == "" || src.Name == "" {
		return nil
	}
	return &src
}

// ofRoute is the source of a route with the part of it that takes req: the Ingress path whose
// Kong paths take it (of the route's host and backend), or the HTTPRoute rule and match: the
// match of the route's whose paths take it (KIC groups a backend's matches into one route
// under the traditional routers), else the one the route's name carries
// (httproute.<ns>.<name>.<host>.<rule>.<match>: one route per match under expressions).
func (s *sources) ofRoute(r *kong.Route, svc *kong.Service, req *kongrouter.Request) *Source {
	src := s.of(r.Tags)
	if src == nil {
		return nil
	}
	switch src.Kind {
	case "Ingress":
		if ing := s.ingresses[src.key()]; ing != nil && req != nil {
			backend := ""
			if svc != nil {
				if b := s.of(svc.Tags); b != nil && b.Kind == "Service" {
					backend = b.Name
				}
			}
			if ip := s.ingressPath(ing, r, backend, req); ip != nil {
				src.Rule, src.Path = &ip.Rule, &ip.Index
			}
		}
	case "HTTPRoute", "GRPCRoute":
		if hr := s.httpRoutes[src.key()]; hr != nil && req != nil && len(r.Paths) > 0 {
			// KIC groups the matches of one backend into one route named after the first:
			// the match is the one of the route's whose paths take the request.
			routePaths := map[string]bool{}
			for _, p := range strs(r.Paths) {
				routePaths[p] = true
			}
			var cands []ruleRoute
			var routes []*kong.Route
			for _, rr := range httpRouteRoutes(hr) {
				if allIn(strs(rr.route.Paths), routePaths) {
					c := *rr.route
					c.Hosts = nil // the route's hosts took the request already
					cands, routes = append(cands, rr), append(routes, &c)
				}
			}
			if i := pick(routes, req); i >= 0 {
				src.Rule, src.Match = &cands[i].rule, &cands[i].match
				return src
			}
		}
		// Under the traditional routers an HTTPRoute route's name is its first match's,
		// whatever matches KIC grouped into it: only an expression route's name says its
		// match. KIC makes a route per GRPCRoute match under both.
		parts := strings.Split(deref(r.Name), ".")
		if (r.Expression != nil || src.Kind == "GRPCRoute") && len(parts) >= 5 && (parts[0] == "httproute" || parts[0] == "grpcroute") {
			rule, err1 := strconv.Atoi(parts[len(parts)-2])
			match, err2 := strconv.Atoi(parts[len(parts)-1])
			if err1 == nil && err2 == nil {
				src.Rule, src.Match = &rule, &match
			}
		}
	}
	return src
}

// ingressPath is the path of ing, among those of the route's hosts and backend (the Service's
// name, "" for any), whose Kong paths take req's path, the one of Kong's greatest priority (the
// one Kong would pick had each path a route of its own); nil when none does (a default
// backend's route).
func (s *sources) ingressPath(ing *netv1.Ingress, r *kong.Route, backend string, req *kongrouter.Request) *translator.IngressPath {
	hosts := routeHosts(r) // an expression route's from its expression
	routePaths := map[string]bool{}
	for _, p := range strs(r.Paths) {
		routePaths[p] = true
	}
	var cands []translator.IngressPath
	var routes []*kong.Route
	byID := map[string]int{} // route id -> index in cands
	for _, ip := range translator.IngressPaths(ing, s.legacy) {
		if !containsHost(hosts, ip.Host) || !allIn(ip.KongPaths, routePaths) || (backend != "" && ip.Backend != backend) {
			continue
		}
		for _, kp := range ip.KongPaths {
			byID[indexID(len(routes))] = len(cands)
			routes = append(routes, &kong.Route{Paths: kong.StringSlice(kp)})
		}
		cands = append(cands, ip)
	}
	// One route per Kong path: Kong's router ranks them.
	i := pick(routes, &kongrouter.Request{URI: req.URI})
	if i < 0 {
		return nil
	}
	return &cands[byID[indexID(i)]]
}

// allIn reports whether every path is one of the route's (a route without paths, an
// expression route, takes every path of its Ingress's host).
func allIn(paths []string, routePaths map[string]bool) bool {
	if len(routePaths) == 0 {
		return true
	}
	for _, p := range paths {
		if !routePaths[p] {
			return false
		}
	}
	return true
}

func containsHost(hosts []string, h string) bool {
	if h == "" {
		return len(hosts) == 0
	}
	for _, x := range hosts {
		if x == h {
			return true
		}
	}
	return false
}

// indexNamespace makes the ids of the routes of one question to Kong's router.
var indexNamespace = uuid.MustParse("6f0d3c52-4b0e-4e55-9d0a-3b7c1f1e2a90")

func indexID(i int) string {
	return uuid.NewSHA1(indexNamespace, []byte(strconv.Itoa(i))).String()
}

// leftOut are the objects translation left out (in part), and the routes Kong's router
// refuses, that would have taken req: each problem's part of its object (an Ingress path, an
// HTTPRoute rule, or the whole object) asked of Kong's router as routes of their own. A part
// that is the source of the route that took req was not left out.
func (e *Explainer) leftOut(req *kongrouter.Request, took *Source) []LeftOut {
	var out []LeftOut
	for _, k := range e.sources.order {
		var lo *LeftOut
		for _, p := range e.sources.problems[k] {
			rule, path := fieldIndex(p.Field)
			if took != nil && took.key() == k && (rule < 0 || (took.Rule != nil && *took.Rule == rule && (path < 0 || (took.Path != nil && *took.Path == path)))) {
				continue
			}
			if !takes(e.sources.partRoutes(k, rule, path), req) {
				continue
			}
			if lo == nil {
				lo = &LeftOut{Source: Source{Kind: p.Object.Kind, Namespace: p.Object.Namespace, Name: p.Object.Name}}
			}
			lo.Problems = append(lo.Problems, strings.TrimPrefix(p.String(), p.Object.String()+": "))
		}
		if lo != nil {
			out = append(out, *lo)
		}
	}
	out = append(out, e.fallbackLeftOut(req)...)
	for _, ref := range e.gw.HTTPRouter().Refused() {
		r := *ref.Route
		r.Expression, r.ID = nil, nil
		if ref.Route.Expression != nil && len(r.Hosts) == 0 && len(r.Paths) == 0 {
			// An expression Kong refuses says nothing it could be asked about.
			continue
		}
		if !takes([]*kong.Route{&r}, req) {
			continue
		}
		src := e.sources.of(ref.Route.Tags)
		if src == nil {
			src = &Source{Kind: "Kong route", Name: deref(ref.Route.Name)}
		}
		out = append(out, LeftOut{Source: *src, Problems: []string{"Kong's router refuses route " + deref(ref.Route.Name) + ": " + ref.Err.Error()}})
	}
	return out
}

// fieldPart reads the rule and path a problem's field is about (-1: not named).
var fieldPart = regexp.MustCompile(`^spec\.rules\[(\d+)\](?:\.http\.paths\[(\d+)\])?`)

func fieldIndex(field string) (rule, path int) {
	m := fieldPart.FindStringSubmatch(field)
	if m == nil {
		return -1, -1
	}
	rule, _ = strconv.Atoi(m[1])
	path = -1
	if m[2] != "" {
		path, _ = strconv.Atoi(m[2])
	}
	return rule, path
}

// partRoutes are the routes of an object's part (rule and path, -1 for all) as its hosts and
// paths would make them; none for an object whose kind is not read.
func (s *sources) partRoutes(key string, rule, path int) []*kong.Route {
	var routes []*kong.Route
	if ing := s.ingresses[key]; ing != nil {
		for _, ip := range translator.IngressPaths(ing, s.legacy) {
			if (rule < 0 || ip.Rule == rule) && (path < 0 || ip.Index == path) {
				routes = append(routes, &kong.Route{Hosts: hostList(ip.Host), Paths: kong.StringSlice(ip.KongPaths...)})
			}
		}
	} else if hr := s.httpRoutes[key]; hr != nil {
		for _, r := range httpRouteRoutes(hr) {
			if rule < 0 || r.rule == rule {
				routes = append(routes, r.route)
			}
		}
	}
	return routes
}

func hostList(h string) []*string {
	if h == "" {
		return nil
	}
	return kong.StringSlice(h)
}

// httpRouteRoutes are an HTTPRoute's matches as traditional routes: its hostnames, each
// match's path (Exact: the path alone; PathPrefix: whole segments; RegularExpression), method
// and exact headers.
// ruleRoute is an HTTPRoute match (spec.rules[rule].matches[match]) as a traditional route.
type ruleRoute struct {
	rule, match int
	route       *kong.Route
}

func httpRouteRoutes(hr *gatewayv1.HTTPRoute) []ruleRoute {
	var hosts []*string
	for _, h := range hr.Spec.Hostnames {
		hosts = append(hosts, kong.String(string(h)))
	}
	var out []ruleRoute
	for i, rule := range hr.Spec.Rules {
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for j, m := range matches {
			r := &kong.Route{Hosts: hosts, Paths: kong.StringSlice("/")}
			if m.Path != nil && m.Path.Value != nil {
				v := *m.Path.Value
				switch {
				case m.Path.Type != nil && *m.Path.Type == gatewayv1.PathMatchExact:
					r.Paths = kong.StringSlice("~" + v + "$")
				case m.Path.Type != nil && *m.Path.Type == gatewayv1.PathMatchRegularExpression:
					r.Paths = kong.StringSlice("~" + v)
				case strings.Trim(v, "/") != "":
					base := "/" + strings.Trim(v, "/")
					r.Paths = kong.StringSlice(base+"/", "~"+base+"$")
				}
			}
			if m.Method != nil {
				r.Methods = kong.StringSlice(string(*m.Method))
			}
			for _, h := range m.Headers {
				if h.Type == nil || *h.Type == gatewayv1.HeaderMatchExact {
					if r.Headers == nil {
						r.Headers = map[string][]string{}
					}
					r.Headers[string(h.Name)] = []string{h.Value}
				}
			}
			out = append(out, ruleRoute{i, j, r})
		}
	}
	return out
}

// takes asks Kong's router whether one of routes takes req.
func takes(routes []*kong.Route, req *kongrouter.Request) bool { return pick(routes, req) >= 0 }

// pick asks Kong's router which of routes takes req, each a route of its own (its id the one
// indexID gives its index): the index of the one, -1 for none.
func pick(routes []*kong.Route, req *kongrouter.Request) int {
	var rs []kongrouter.RouteService
	for i, r := range routes {
		c := *r
		c.ID = kong.String(indexID(i))
		c.Protocols = kong.StringSlice("http", "https")
		rs = append(rs, kongrouter.RouteService{Route: &c})
	}
	if len(rs) == 0 {
		return -1
	}
	rt, err := kongrouter.New(rs, kongrouter.Options{Flavor: kongrouter.TraditionalCompatible})
	if err != nil {
		return -1
	}
	m, err := rt.Exec(kongrouter.Params{Method: req.Method, URI: req.URI, Host: req.Host, Scheme: req.Scheme, Headers: req.Header})
	if err != nil || m == nil {
		return -1
	}
	for i := range routes {
		if indexID(i) == deref(m.Route.ID) {
			return i
		}
	}
	return -1
}

// expressionPriorityWhy says which part of KIC's priority of expression routes orders won
// over lost, when both come from one kind of object.
func (s *sources) expressionPriorityWhy(won, lost *kong.Route, pw, pl uint64) string {
	a, b := s.of(won.Tags), s.of(lost.Tags)
	if a == nil || b == nil {
		return ""
	}
	if a.Kind != b.Kind {
		return fmt.Sprintf(": KIC ranks %s routes above %s routes", a.Kind, b.Kind)
	}
	if part := translator.ExpressionPriorityPart(a.Kind, pw, pl); part != "" {
		return ": KIC's priority part that decides is the " + part
	}
	return ""
}

// fallbackLeftOut are the objects the controller's fallback left out whose routes, in the
// configuration Kong refused, take req (asked of Kong's router over those routes alone).
func (e *Explainer) fallbackLeftOut(req *kongrouter.Request) []LeftOut {
	if len(e.in.Fallback) == 0 || e.in.Refused == nil {
		return nil
	}
	why := map[string]string{}
	for _, f := range e.in.Fallback {
		why[f.Source.key()] = f.Why
	}
	var routes []kongrouter.RouteService
	for _, r := range e.in.Refused.Routes {
		if src := e.sources.of(r.Tags); src != nil && why[src.key()] != "" && r.ID != nil {
			routes = append(routes, kongrouter.RouteService{Route: r})
		}
	}
	if len(routes) == 0 {
		return nil
	}
	rt, err := kongrouter.New(routes, kongrouter.Options{Flavor: e.in.Refused.Flavor})
	if err != nil {
		return nil
	}
	cands, err := rt.Candidates(kongrouter.Params{Method: req.Method, URI: stripQuery(req.URI), Host: req.Host, Scheme: req.Scheme,
		Headers: req.Header, SNI: req.SNI})
	if err != nil {
		return nil
	}
	var out []LeftOut
	seen := map[string]bool{}
	for _, m := range cands {
		src := e.sources.of(m.Route.Tags)
		if seen[src.key()] {
			continue
		}
		seen[src.key()] = true
		msg := "left out by the fallback configuration: Kong refused its entities"
		if why[src.key()] == "excluded" {
			msg = "left out by the fallback configuration: it depends on an object whose entities Kong refused"
		}
		out = append(out, LeftOut{Source: *src, Problems: []string{msg + " (route " + deref(m.Route.Name) + " would take the request)"}})
	}
	return out
}

// stripQuery is a request target's path.
func stripQuery(uri string) string {
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		return uri[:i]
	}
	return uri
}
