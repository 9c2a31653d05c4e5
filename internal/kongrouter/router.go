package kongrouter

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongrules"
)

// RouteService is a route with the service it proxies to (nil: a serviceless route).
type RouteService struct {
	Route   *kong.Route
	Service *kong.Service
}

// Options says which router is built.
type Options struct {
	// Flavor is Kong's router_flavor (default traditional_compatible).
	Flavor Flavor
	// Stream builds the stream subsystem's router (tcp, tls, tls_passthrough and udp routes);
	// otherwise the http subsystem's.
	Stream bool
}

// Router is Kong's router over a set of routes: kong/router/atc.lua with the expressions or
// the traditional_compatible flavor's expressions and priorities.
type Router struct {
	opts     Options
	matchers []*Matcher // in evaluation order: priority, then id, both descending
	byID     map[uuid.UUID]RouteService
	fields   []string
	refused  []Refusal
}

// Matcher is one entry of the router: a route, or a part of a route whose paths Kong split by
// length, with the expression and priority it is evaluated with.
type Matcher struct {
	ID         uuid.UUID
	Route      *kong.Route // the route as configured (the original of a split one)
	Service    *kong.Service
	Paths      []string // the paths of this part, when the route was split
	Split      bool
	Expression string
	Priority   uint64
	m          *matcher
}

// Refusal is a route Kong's router leaves out, with the error Kong logs.
type Refusal struct {
	Route *kong.Route
	Err   error
}

// errUncategorized is atc.lua's error for a route without an id: the whole router fails.
var errUncategorized = errors.New("could not categorize route")

// splitNamespace is the uuid v5 namespace of atc's split routes (transform.lua).
var splitNamespace = uuid.MustParse("7f145bf9-0dce-4f91-98eb-debbce4b9f6b")

// New builds a router as atc.lua's new_from_scratch does: http routes with paths of several
// lengths (or regex and plain paths) are split into one matcher per group, each matcher gets
// the flavor's expression and priority, and a matcher Kong's router refuses (a bad expression, a
// duplicate id and priority) is left out and listed in Refused. A route without an id fails the
// whole router, as in Kong.
func New(routes []RouteService, opts Options) (*Router, error) {
	if opts.Flavor == "" {
		opts.Flavor = TraditionalCompatible
	}
	r := &Router{opts: opts, byID: map[uuid.UUID]RouteService{}}
	parts := make([]routePart, len(routes))
	for i, rs := range routes {
		parts[i] = routePart{RouteService: rs, origin: rs.Route}
	}
	if !opts.Stream {
		parts = splitByPath(parts)
	}
	keys := map[string]bool{}
	seenField := map[string]bool{}
	for _, rs := range parts {
		if rs.Route == nil || rs.Route.ID == nil {
			return nil, errUncategorized
		}
		m, err := r.newMatcher(rs)
		id := m.ID
		r.byID[id] = RouteService{Route: rs.origin, Service: rs.Service}
		if err == nil {
			key := strconv.FormatUint(m.Priority, 16) + "/" + id.String()
			if keys[key] {
				err = errors.New("UUID already exists")
			}
			keys[key] = true
		}
		if err != nil {
			r.refused = append(r.refused, Refusal{Route: rs.origin, Err: fmt.Errorf("could not add route: %s, err: %w", *rs.Route.ID, err)})
			delete(r.byID, id)
			continue
		}
		r.matchers = append(r.matchers, m)
		for _, f := range m.m.fields {
			if !seenField[f] {
				seenField[f] = true
				r.fields = append(r.fields, f)
			}
		}
	}
	sort.SliceStable(r.matchers, func(i, j int) bool {
		a, b := r.matchers[i], r.matchers[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return bytes.Compare(a.ID[:], b.ID[:]) > 0
	})
	sort.Strings(r.fields)
	return r, nil
}

// routePart is a route, or one of the parts Kong splits a route into, with the route it is of.
type routePart struct {
	RouteService
	origin *kong.Route
}

func (r *Router) newMatcher(rs routePart) (*Matcher, error) {
	route := rs.Route
	m := &Matcher{Route: rs.origin, Service: rs.Service}
	if rs.origin != route {
		m.Split, m.Paths = true, strs(route.Paths)
	}
	id, err := uuid.Parse(*route.ID)
	if err != nil {
		return m, fmt.Errorf("invalid uuid: %s", *route.ID)
	}
	m.ID = id
	var expr string
	if r.opts.Flavor == Expressions {
		expr, err = ExpressionsFlavorExpression(route)
	} else {
		expr, err = TraditionalExpression(route)
	}
	if err != nil {
		return m, err
	}
	if expr == "" {
		return m, errors.New("could not find expression, route: " + *route.ID)
	}
	m.Expression, m.Priority = expr, Priority(route)
	m.m, err = compileMatcher(expr, r.opts.Stream)
	return m, err
}

// splitByPath is transform.lua's split_routes_and_services_by_path.
func splitByPath(out []routePart) []routePart {
	n := len(out)
	for i := 0; i < n; i++ {
		route := out[i].Route
		if route == nil || route.Expression != nil || len(route.Paths) <= 1 {
			continue
		}
		var groups [][]*string
		index := map[int]int{}
		for _, p := range route.Paths {
			k := 0
			if p != nil && !strings.HasPrefix(*p, "~") {
				k = len(*p)
			}
			g, ok := index[k]
			if !ok {
				g = len(groups)
				index[k] = g
				groups = append(groups, nil)
			}
			groups[g] = append(groups[g], p)
		}
		if len(groups) == 1 {
			continue
		}
		for g, paths := range groups {
			part := *route
			part.Paths = paths
			if route.ID != nil {
				part.ID = kong.String(uuid.NewHash(sha1.New(), splitNamespace, []byte(*route.ID+"#"+strconv.Itoa(g+1)), 5).String())
			}
			rs := routePart{RouteService: RouteService{Route: &part, Service: out[i].Service}, origin: route}
			if g == 0 {
				out[i] = rs
			} else {
				out = append(out, rs)
			}
		}
	}
	return out
}

// Matchers are the router's entries in the order it evaluates them.
func (r *Router) Matchers() []*Matcher { return r.matchers }

// Refused are the routes Kong's router leaves out, with Kong's error.
func (r *Router) Refused() []Refusal { return r.refused }

// Flavor is the router's flavor.
func (r *Router) Flavor() Flavor { return r.opts.Flavor }

// Params are the request facts the router reads (atc.lua's select() parameters). A zero value
// is absent: its field gets no value, and a predicate on it does not match.
type Params struct {
	Method  string
	URI     string // the path the router matches (select: as given)
	Host    string // the Host header, possibly with a port
	Scheme  string // net.protocol: http, https, tcp, tls, udp
	SrcIP   string
	SrcPort int
	DstIP   string
	DstPort int
	SNI     string
	// Headers by name; names are read as Kong's get_headers() does (case-insensitive, "-" and
	// "_" alike).
	Headers map[string][]string
	// Queries by name, exactly; an argument without a value is "".
	Queries map[string][]string
}

// Match is what the router answers for a request (atc.lua's match_t).
type Match struct {
	Matcher *Matcher
	Route   *kong.Route
	Service *kong.Service
	// MatchedPath is the part of the path the matcher matched (a prefix, or a regex's match).
	MatchedPath string
	// Prefix is the part stripped from the path: MatchedPath when the route strips its path.
	Prefix      string
	URICaptures map[string]string // a regex path's captures ("0" the whole match), nil without groups
	Upstream    UpstreamURL
	// UpstreamScheme is the service's protocol.
	UpstreamScheme string
	// UpstreamHost is the request's Host when the route preserves it, else "".
	UpstreamHost string
	// UpstreamURI is the path sent upstream (Exec only; before escaping and the query).
	UpstreamURI string
}

// UpstreamURL is the service's address (upstream_url_t).
type UpstreamURL struct {
	Type string // ipv4, ipv6 or name
	Host string
	Port int
	Path string // http services only
}

// Select matches params as atc.lua's matching() does: nil when no route matches, an error when
// the request cannot be put to the router (a value that is not UTF-8 in a field a route reads).
func (r *Router) Select(p Params) (*Match, error) {
	ctx, err := r.context(p)
	if err != nil {
		return nil, err
	}
	res := atcMatch{matches: map[string]string{}, captures: map[string]string{}}
	for _, m := range r.matchers {
		if m.m.execute(ctx, &res) {
			return r.result(m, p, res)
		}
		res.reset()
	}
	return nil, nil
}

// Candidates are every matcher that matches p, in the order the router evaluates them: the
// first is the one Select answers, the others lose to it (explain's "what also matched").
// Each is answered as Select would answer it alone.
func (r *Router) Candidates(p Params) ([]*Match, error) {
	ctx, err := r.context(p)
	if err != nil {
		return nil, err
	}
	var out []*Match
	for _, m := range r.matchers {
		res := atcMatch{matches: map[string]string{}, captures: map[string]string{}}
		if !m.m.execute(ctx, &res) {
			continue
		}
		if match, err := r.result(m, p, res); err == nil {
			out = append(out, match)
		}
	}
	return out, nil
}

// Misses are the fields of m's expression that p fails, sorted: for a request no route takes,
// what differs from a route (explain's nearest routes). A failed AND fails by the parts that
// fail; a failed OR by what fails in each of its sides; a failed NOT by what it negates.
func (r *Router) Misses(m *Matcher, p Params) ([]string, error) {
	if m.m == nil {
		return nil, errors.New("matcher " + m.ID.String() + " was refused")
	}
	ctx, err := r.context(p)
	if err != nil {
		return nil, err
	}
	res := atcMatch{matches: map[string]string{}, captures: map[string]string{}}
	return m.m.misses(ctx, &res), nil
}

// AllMisses are Misses of every matcher, in Matchers' order, the request's facts read once (a
// miss over a large configuration asks every route).
func (r *Router) AllMisses(p Params) ([][]string, error) {
	ctx, err := r.context(p)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(r.matchers))
	res := atcMatch{matches: map[string]string{}, captures: map[string]string{}}
	for i, m := range r.matchers {
		out[i] = m.m.misses(ctx, &res)
		res.reset()
	}
	return out, nil
}

// misses evaluates the expression once, every predicate of it (no short circuit), and keeps
// the fields of the parts that fail it: a failed AND's failing sides, a failed OR's sides, a
// failed NOT's whole operand. res is scratch space, shared by the calls of one request.
func (m *matcher) misses(ctx atcContext, res *atcMatch) []string {
	w := missWalk{m: m, ctx: ctx, res: res, out: []string{}}
	w.collect(m.root)
	sort.Strings(w.out)
	return slices.Compact(w.out)
}

// missWalk is one matcher's misses being collected.
type missWalk struct {
	m   *matcher
	ctx atcContext
	res *atcMatch
	out []string
}

func (w *missWalk) collect(n *kongrules.ATCNode) bool {
	switch n.Op {
	case kongrules.ATCAnd:
		l := w.collect(n.Left)
		return w.collect(n.Right) && l
	case kongrules.ATCOr:
		mark := len(w.out)
		l := w.collect(n.Left)
		if r := w.collect(n.Right); l || r {
			w.out = w.out[:mark] // one side takes the request: nothing of the OR misses
			return true
		}
		return false
	case kongrules.ATCNot:
		if w.m.eval(n.Left, w.ctx, w.res) {
			w.all(n.Left)
			return false
		}
		return true
	}
	if w.m.predicate(n.Predicate, w.ctx, w.res) {
		return true
	}
	w.out = append(w.out, n.Predicate.Field)
	return false
}

// all adds every field n tests.
func (w *missWalk) all(n *kongrules.ATCNode) {
	if n == nil {
		return
	}
	if n.Op == kongrules.ATCPredicateNode {
		w.out = append(w.out, n.Predicate.Field)
		return
	}
	w.all(n.Left)
	w.all(n.Right)
}

func (r *Router) result(m *Matcher, p Params, res atcMatch) (*Match, error) {
	rs, ok := r.byID[m.ID]
	if !ok {
		// Kong's route table lost this id to a refused duplicate: Kong's Lua fails here.
		return nil, fmt.Errorf("route %s matched but is not in the route table", m.ID)
	}
	out := &Match{Matcher: m, Route: rs.Route, Service: rs.Service}
	out.UpstreamScheme, out.Upstream = serviceInfo(rs.Service)
	if r.opts.Stream {
		out.Upstream.Path = ""
		if boolOf(rs.Route.PreserveHost) {
			out.UpstreamHost = p.SNI
		}
		return out, nil
	}
	out.MatchedPath = res.matches["http.path"]
	if boolOf(rs.Route.StripPath) {
		out.Prefix = out.MatchedPath
	}
	if len(res.captures) >= 2 {
		out.URICaptures = map[string]string{}
		for k, v := range res.captures {
			out.URICaptures[k] = v
		}
	}
	if boolOf(rs.Route.PreserveHost) {
		out.UpstreamHost = p.Host
	}
	return out, nil
}

func boolOf(b *bool) bool { return b != nil && *b }

// httpSubsystemProtocols are the service protocols of Kong's http subsystem.
var httpSubsystemProtocols = map[string]bool{"http": true, "https": true, "grpc": true, "grpcs": true, "ws": true, "wss": true}

// serviceInfo is utils.lua's get_service_info.
func serviceInfo(s *kong.Service) (string, UpstreamURL) {
	var u UpstreamURL
	var protocol string
	if s != nil {
		protocol = stringOf(s.Protocol)
		u.Host = stringOf(s.Host)
		if s.Port != nil {
			u.Port = *s.Port
		}
	}
	if u.Port == 0 {
		switch protocol {
		case "https":
			u.Port = 443
		case "http":
			u.Port = 80
		}
	}
	u.Type = hostnameType(u.Host)
	if httpSubsystemProtocols[protocol] {
		u.Path = "/"
		if s.Path != nil {
			u.Path = *s.Path
		}
	}
	return protocol, u
}

func stringOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// hostnameType is kong.tools.ip's hostname_type.
func hostnameType(host string) string {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Is4() {
			return "ipv4"
		}
		return "ipv6"
	}
	if hp, err := netip.ParseAddrPort(host); err == nil && hp.Addr().Is4() {
		return "ipv4"
	}
	return "name"
}

// Exec is atc.lua's exec(): the request URI without its query and normalized is matched, with
// the Host header's host and port, and the upstream path is worked out (set_upstream_uri).
func (r *Router) Exec(p Params) (*Match, error) {
	requestURI := p.URI
	p.URI = stripURIArgs(requestURI)
	m, err := r.Select(p)
	if m == nil || err != nil {
		return m, err
	}
	prefix := m.Prefix
	if prefix == "" {
		prefix = "/"
	}
	postfix := ""
	if len(prefix) < len(p.URI) {
		postfix = p.URI[len(prefix):]
	}
	base := m.Upstream.Path
	if base == "" {
		base = "/"
	}
	m.UpstreamURI = upstreamURIv0(boolOf(m.Route.StripPath), sanitizeURIPostfix(postfix), p.URI, base)
	return m, nil
}
