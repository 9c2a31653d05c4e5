package explain

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongplugins"
	"github.com/konductor/konductor/internal/kongrouter"
	"github.com/konductor/konductor/internal/translator"
)

// Input is the configuration requests are explained against.
type Input struct {
	// Config is Kong's configuration, its Flavor the gateways' router_flavor.
	Config *kongrouter.Config
	// KongVersion is the gateways' version (the Via header; "" is taken as 3.10.0).
	KongVersion string
	// Objects are the Kubernetes objects the configuration was translated from, when known
	// (manifests, the cluster): an Ingress's rule and path index, and whether an object left
	// out would have taken the request, are read from them.
	Objects []client.Object
	// Problems are the translation's problems (what it left out), when known.
	Problems []translator.Problem
	// LegacyRegexDetection is the Ingress class's enableLegacyRegexDetection.
	LegacyRegexDetection bool
	// Fallback are the objects a running controller's fallback configuration left out (Kong
	// refused them, or they depend on one it refused), and Refused the configuration Kong
	// refused, whose routes say what those objects would have taken (--from-controller).
	Fallback []FallbackObject
	Refused  *kongrouter.Config
}

// FallbackObject is an object the controller's fallback configuration left out.
type FallbackObject struct {
	Source Source
	// Why: "broken" (Kong refused its entities) or "excluded" (it depends on a broken one).
	Why string
}

// Explainer explains requests against one configuration; building it builds Kong's routers
// once, so that each request is answered quickly.
type Explainer struct {
	in      Input
	gw      *kongrouter.Gateway
	plugins *kongplugins.Runtime
	sources *sources
	targets map[string][]*kong.Target // by upstream id
}

// New builds an Explainer.
func New(in Input) (*Explainer, error) {
	if in.Config == nil {
		return nil, errors.New("explain: no configuration")
	}
	if in.KongVersion == "" {
		in.KongVersion = "3.10.0"
	}
	gw, err := kongrouter.NewGateway(in.Config, in.KongVersion)
	if err != nil {
		return nil, fmt.Errorf("explain: Kong's router refuses the configuration: %w", err)
	}
	e := &Explainer{in: in, gw: gw, plugins: kongplugins.New(in.Config), sources: newSources(in),
		targets: map[string][]*kong.Target{}}
	for _, t := range in.Config.Targets {
		if t.Upstream != nil && t.Upstream.ID != nil {
			e.targets[*t.Upstream.ID] = append(e.targets[*t.Upstream.ID], t)
		}
	}
	return e, nil
}

// Request is the request to explain, as a client sends it.
type Request struct {
	// URL is absolute: http or https, the host (and port) Kong is reached by, the path and query.
	URL    string
	Method string // GET when empty
	Header http.Header
	// SNI is the TLS server name (https only; the URL's host when empty).
	SNI string
	// SourceIP is the client's address (127.0.0.1 when empty).
	SourceIP string
}

// Explanation is the answer for one request.
type Explanation struct {
	Request RequestLine `json:"request"`
	Router  string      `json:"router"`
	// Route is the route that takes the request; nil when none does.
	Route    *Route    `json:"route,omitempty"`
	Service  *Service  `json:"service,omitempty"`
	Upstream *Upstream `json:"upstream,omitempty"`
	// Forward is the request the upstream receives, after the plugins' access phase; nil when
	// Kong answers before it (Answer), but for the balancer's 503 (no target), where it is the
	// request a target would receive.
	Forward *Forward `json:"upstreamRequest,omitempty"`
	// Answer is the response Kong gives itself: no route (404), an https-only route's
	// redirect, a gRPC check, or a plugin's answer.
	Answer  *Answer  `json:"answer,omitempty"`
	Plugins []Plugin `json:"plugins,omitempty"`
	// Losers are the other routes that match, in the order Kong evaluates them, each with why
	// it loses.
	Losers []Loser `json:"alsoMatched,omitempty"`
	// Nearest are, when no route matches, the routes that miss the request by the fewest
	// fields, with what differs.
	Nearest []Near `json:"nearest,omitempty"`
	// LeftOut are the objects translation left out (or routes Kong's router refused) that
	// would have taken the request.
	LeftOut []LeftOut `json:"leftOut,omitempty"`
}

// RequestLine is the request as explained.
type RequestLine struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	SNI    string      `json:"sni,omitempty"`
	Source string      `json:"sourceIP"`
}

// Route is a Kong route with what it matches on and where it came from.
type Route struct {
	Name       string              `json:"name"`
	ID         string              `json:"id"`
	Hosts      []string            `json:"hosts,omitempty"`
	Paths      []string            `json:"paths,omitempty"`
	Methods    []string            `json:"methods,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	Expression string              `json:"expression,omitempty"`
	// MatchedPath is the part of the path the route matched (what strip_path strips).
	MatchedPath string    `json:"matchedPath,omitempty"`
	Priority    *Priority `json:"priority,omitempty"`
	Source      *Source   `json:"source,omitempty"`
}

// Priority is a route's priority as Kong computes it, and its parts.
type Priority struct {
	Value Hex `json:"value"`
	// Fields are the fields counted in the weight (traditional routes).
	Fields         []string `json:"fields,omitempty"`
	PlainHostsOnly bool     `json:"plainHostsOnly,omitempty"`
	Headers        int      `json:"headers,omitempty"`
	RegexPaths     bool     `json:"regexPaths,omitempty"`
	RegexPriority  int      `json:"regexPriority,omitempty"`
	PathLength     int      `json:"pathLength,omitempty"`
	// Expression: the route's own priority (expressions router).
	Expression bool `json:"expression,omitempty"`
}

// Hex is a priority in JSON and YAML: "0x..." (a layout of bits, beyond the integers JSON
// readers keep exactly).
type Hex uint64

func (h Hex) MarshalText() ([]byte, error) { return []byte(fmt.Sprintf("%#x", uint64(h))), nil }

func (h *Hex) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 0, 64)
	*h = Hex(v)
	return err
}

// Service is the Kong service a route proxies to.
type Service struct {
	Name   string  `json:"name"`
	URL    string  `json:"url"`
	Source *Source `json:"source,omitempty"`
}

// Upstream is the upstream a service's host names, with its targets.
type Upstream struct {
	Name    string   `json:"name"`
	Targets []Target `json:"targets"`
	Source  *Source  `json:"source,omitempty"`
}

// Target is one of an upstream's targets.
type Target struct {
	Target string `json:"target"`
	Weight int    `json:"weight"`
}

// Forward is the request the upstream receives.
type Forward struct {
	Method string `json:"method"`
	// URL is where it goes: the service's address, or the target picked first.
	URL  string `json:"url"`
	Path string `json:"path"`
	Host string `json:"host"`
	// Added are headers the upstream receives that the client did not send (or with another
	// value); Removed are the client's headers it does not receive.
	Added   http.Header `json:"added,omitempty"`
	Removed []string    `json:"removed,omitempty"`
}

// Answer is a response Kong gives itself.
type Answer struct {
	Status  int    `json:"status"`
	Message string `json:"message,omitempty"`
	// By is what answered: "router" (no route), "route" (https-only, gRPC checks), "balancer"
	// (no target), or the plugin's name.
	By string `json:"by"`
}

// Plugin is a plugin that applies to the request, in Kong's order.
type Plugin struct {
	Name string `json:"name"`
	// Scope is what the plugin's configuration is attached to: global, or route, service and
	// consumer combined.
	Scope  string  `json:"scope"`
	Source *Source `json:"source,omitempty"`
	// Ran: its access phase ran; Answered: it answered the request; Unmodelled: konductor
	// does not run it (it applies, what it does is not shown).
	Ran        bool `json:"ran,omitempty"`
	Answered   bool `json:"answered,omitempty"`
	Unmodelled bool `json:"unmodelled,omitempty"`
}

// Loser is a route that also matches and loses.
type Loser struct {
	Route Route `json:"route"`
	// Decider is the part of Kong's priority that ranks the winner first (kongrouter.Part*;
	// "" for equal priorities).
	Decider string `json:"decider"`
	Why     string `json:"why"`
}

// Near is a route that misses the request, with what differs.
type Near struct {
	Route   Route    `json:"route"`
	Differs []string `json:"differs"`
}

// LeftOut is an object left out on the way that would have taken the request.
type LeftOut struct {
	Source   Source   `json:"source"`
	Problems []string `json:"problems"`
}

// maxNearest is how many nearest routes a no-match lists.
const maxNearest = 3

// ParseRequest checks r and makes it the request Kong receives.
func ParseRequest(r Request) (*kongrouter.Request, RequestLine, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, RequestLine{}, fmt.Errorf("explain: the URL %q: %w", r.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, RequestLine{}, fmt.Errorf("explain: the URL %q: give an absolute http:// or https:// URL (Kong's proxy is reached by one)", r.URL)
	}
	if u.Host == "" {
		return nil, RequestLine{}, fmt.Errorf("explain: the URL %q has no host", r.URL)
	}
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	if strings.ContainsAny(method, " \t/:") {
		return nil, RequestLine{}, fmt.Errorf("explain: %q is not an HTTP method", r.Method)
	}
	src := r.SourceIP
	if src == "" {
		src = "127.0.0.1"
	}
	if net.ParseIP(src) == nil {
		return nil, RequestLine{}, fmt.Errorf("explain: --source-ip %q is not an IP address", r.SourceIP)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, RequestLine{}, fmt.Errorf("explain: the URL's port %q", p)
		}
	}
	uri := u.EscapedPath()
	if uri == "" {
		uri = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		uri += "?" + u.RawQuery
	}
	h := http.Header{}
	for k, v := range r.Header {
		h[textproto.CanonicalMIMEHeaderKey(k)] = append([]string(nil), v...)
	}
	sni := r.SNI
	if sni == "" && u.Scheme == "https" {
		sni = u.Hostname()
	}
	if sni != "" && u.Scheme != "https" {
		return nil, RequestLine{}, errors.New("explain: --sni goes with an https:// URL")
	}
	req := &kongrouter.Request{Method: method, Scheme: u.Scheme, Host: u.Host, URI: uri, Header: h, SNI: sni,
		ClientIP: src, ClientPort: 40000, ServerIP: "127.0.0.1", ServerPort: port, ProtoMajor: 1}
	if strings.HasPrefix(h.Get("Content-Type"), "application/grpc") {
		// gRPC is HTTP/2 (Kong answers 426 to gRPC over HTTP/1).
		req.ProtoMajor = 2
	}
	line := RequestLine{Method: method, URL: u.Scheme + "://" + u.Host + uri, SNI: sni, Source: src}
	if len(h) > 0 {
		line.Header = h
	}
	return req, line, nil
}

// Explain answers for one request.
func (e *Explainer) Explain(r Request) (*Explanation, error) {
	req, line, err := ParseRequest(r)
	if err != nil {
		return nil, err
	}
	out := &Explanation{Request: line, Router: string(e.gw.HTTPRouter().Flavor())}
	// Every route is asked once what of the request it misses: the routes that miss nothing are
	// the candidates (the first wins), the others the nearest of a miss. A miss is then
	// answered without walking the router a second time.
	misses, err := e.gw.AllMisses(req)
	if err != nil {
		return nil, fmt.Errorf("explain: Kong's router cannot take the request: %w", err)
	}
	var d *kongrouter.Decision
	if slices.ContainsFunc(misses, func(m []string) bool { return len(m) == 0 }) {
		d = e.gw.Proxy(req)
	}
	if d == nil || d.Match == nil {
		exit := kongrouter.NoRoute()
		out.Answer = &Answer{Status: exit.Status, Message: exit.Message, By: "router"}
		out.Nearest = e.nearest(req, misses)
		out.LeftOut = e.leftOut(req, nil)
		return out, nil
	}
	m := d.Match
	out.Route = e.route(m.Matcher, m.MatchedPath, req)
	if m.Service != nil {
		out.Service = &Service{Name: deref(m.Service.Name), URL: serviceURL(m), Source: e.sources.of(m.Service.Tags)}
	}
	if d.Upstream != nil {
		up := &Upstream{Name: deref(d.Upstream.Name), Source: e.sources.of(d.Upstream.Tags), Targets: []Target{}}
		for _, t := range e.targets[deref(d.Upstream.ID)] {
			w := 100
			if t.Weight != nil {
				w = *t.Weight
			}
			up.Targets = append(up.Targets, Target{Target: deref(t.Target), Weight: w})
		}
		sort.Slice(up.Targets, func(i, j int) bool { return up.Targets[i].Target < up.Targets[j].Target })
		out.Upstream = up
	}
	out.Losers = e.losers(req, m, misses)
	out.LeftOut = e.leftOut(req, out.Route.Source)
	if d.Exit != nil {
		// The route's own checks answer before any plugin runs.
		out.Answer = &Answer{Status: d.Exit.Status, Message: d.Exit.Message, By: "route"}
		return out, nil
	}
	x := &kongplugins.Exchange{Request: req, Match: m, Forward: d.Forward,
		Body: func() []byte { return nil }, SetBody: func([]byte) {}, RequestID: "explain"}
	resp := e.plugins.Access(x)
	out.Plugins = e.pluginList(x, resp)
	if resp != nil {
		out.Answer = &Answer{Status: resp.Status, Message: strings.TrimSpace(string(resp.Body)), By: answeredBy(out.Plugins)}
		return out, nil
	}
	if _, exit := e.gw.PickTarget(d); exit != nil {
		// No target: Kong answers 503. The request it would send is still what a user
		// debugging a path asks for (strip_path, the rewrite), to the service's address.
		out.Answer = &Answer{Status: exit.Status, Message: exit.Message, By: "balancer"}
	}
	out.Forward = forward(req, d.Forward)
	return out, nil
}

func answeredBy(ps []Plugin) string {
	for _, p := range ps {
		if p.Answered {
			return p.Name
		}
	}
	return "plugin"
}

func serviceURL(m *kongrouter.Match) string {
	host := m.Upstream.Host
	if m.Upstream.Type == "ipv6" {
		host = "[" + strings.Trim(host, "[]") + "]"
	}
	return m.UpstreamScheme + "://" + host + ":" + strconv.Itoa(m.Upstream.Port) + m.Upstream.Path
}

// route describes a matcher's route: what it matches on, its priority parts (of the part of a
// route Kong split by path length, when split), and its source.
func (e *Explainer) route(m *kongrouter.Matcher, matchedPath string, req *kongrouter.Request) *Route {
	r := m.Route
	out := &Route{Name: deref(r.Name), ID: deref(r.ID), Hosts: strs(r.Hosts), Paths: strs(r.Paths), Methods: strs(r.Methods),
		Headers: r.Headers, Expression: deref(r.Expression), MatchedPath: matchedPath}
	parts := kongrouter.PriorityPartsOf(matcherRoute(m))
	out.Priority = &Priority{Value: Hex(m.Priority), Fields: parts.Fields, PlainHostsOnly: parts.PlainHostsOnly, Headers: parts.Headers,
		RegexPaths: parts.RegexPaths, RegexPriority: parts.RegexPriority, PathLength: parts.PathLength, Expression: parts.Expression}
	out.Source = e.sources.ofRoute(r, m.Service, req)
	return out
}

// matcherRoute is the route a matcher evaluates: the route, or the part of it Kong split off.
func matcherRoute(m *kongrouter.Matcher) *kong.Route {
	if !m.Split {
		return m.Route
	}
	part := *m.Route
	part.Paths = kong.StringSlice(m.Paths...)
	return &part
}

// pluginList lists the plugins that apply in Kong's order, with what each did.
func (e *Explainer) pluginList(x *kongplugins.Exchange, resp *kongplugins.Response) []Plugin {
	ran := map[string]bool{}
	for _, n := range x.Ran {
		ran[n] = true
	}
	unmodelled := map[string]bool{}
	for _, n := range x.Unmodelled {
		unmodelled[n] = true
	}
	var out []Plugin
	last := ""
	if resp != nil && len(x.Ran) > 0 {
		last = x.Ran[len(x.Ran)-1]
	}
	for _, p := range x.Collected() {
		name := deref(p.Name)
		var scope []string
		if p.Route != nil {
			scope = append(scope, "route")
		}
		if p.Service != nil {
			scope = append(scope, "service")
		}
		if p.Consumer != nil {
			scope = append(scope, "consumer")
		}
		if len(scope) == 0 {
			scope = []string{"global"}
		}
		out = append(out, Plugin{Name: name, Scope: strings.Join(scope, "+"), Source: e.sources.of(p.Tags), Ran: ran[name],
			Answered: name == last, Unmodelled: unmodelled[name]})
	}
	return out
}

// forward is the upstream request with its headers compared to the client's.
func forward(req *kongrouter.Request, f *kongrouter.UpstreamRequest) *Forward {
	host := f.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	out := &Forward{Method: f.Method, URL: f.Scheme + "://" + host + ":" + strconv.Itoa(f.Port) + f.URI(), Path: f.URI(), Host: f.HostHeader,
		Added: http.Header{}}
	for k, v := range f.Header {
		if !slices.Equal(req.Header[k], v) {
			out.Added[k] = v
		}
	}
	for k := range req.Header {
		if _, ok := f.Header[k]; !ok {
			out.Removed = append(out.Removed, k)
		}
	}
	sort.Strings(out.Removed)
	if len(out.Added) == 0 {
		out.Added = nil
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func strs(ps []*string) []string {
	var out []string
	for _, p := range ps {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}
