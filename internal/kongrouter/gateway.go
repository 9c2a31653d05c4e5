package kongrouter

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kong/go-kong/kong"
)

// Gateway is a Kong node's data plane decisions over one Config: the router of each subsystem,
// the protocol checks Kong makes after a match, the upstream and its targets, the plugins that
// apply, and the request as the upstream receives it (kong/runloop/handler.lua, balancer).
type Gateway struct {
	cfg     *Config
	http    *Router
	stream  *Router
	version string

	services  map[string]*kong.Service
	upstreams map[string]*kong.Upstream // by name: a service whose host names one is balanced
	targets   map[string][]*kong.Target // by upstream id
	consumers map[string]*kong.Consumer
	plugins   []*kong.Plugin

	balancer sync.Mutex
	rr       map[string]*weightedRR
}

// Subsystem protocols (kong/constants.lua's PROTOCOLS_WITH_SUBSYSTEM).
var streamProtocols = map[string]bool{"tcp": true, "tls": true, "tls_passthrough": true, "udp": true}

// NewGateway builds the routers of cfg as Kong's runloop does (new_router in handler.lua): a
// route goes to each subsystem one of its protocols belongs to, with its service, unless the
// service is disabled; a service of the other subsystem leaves the route serviceless. version
// is the Kong version the gateway reports (the Via header).
func NewGateway(cfg *Config, version string) (*Gateway, error) {
	g := &Gateway{cfg: cfg, version: version, services: map[string]*kong.Service{}, upstreams: map[string]*kong.Upstream{},
		targets: map[string][]*kong.Target{}, consumers: map[string]*kong.Consumer{}, rr: map[string]*weightedRR{}}
	for _, s := range cfg.Services {
		if s.ID != nil {
			g.services[*s.ID] = s
		}
	}
	for _, u := range cfg.Upstreams {
		if u.Name != nil {
			g.upstreams[*u.Name] = u
		}
	}
	for _, t := range cfg.Targets {
		if t.Upstream != nil && t.Upstream.ID != nil {
			g.targets[*t.Upstream.ID] = append(g.targets[*t.Upstream.ID], t)
		}
	}
	for _, c := range cfg.Consumers {
		if c.ID != nil {
			g.consumers[*c.ID] = c
		}
	}
	for _, p := range cfg.Plugins {
		if p.Enabled == nil || *p.Enabled {
			g.plugins = append(g.plugins, p)
		}
	}
	var httpRoutes, streamRoutes []RouteService
	for _, r := range cfg.Routes {
		var svc *kong.Service
		if r.Service != nil && r.Service.ID != nil {
			svc = g.services[*r.Service.ID]
			if svc != nil && svc.Enabled != nil && !*svc.Enabled {
				continue
			}
		}
		inHTTP, inStream := false, false
		for _, p := range strs(r.Protocols) {
			if streamProtocols[p] {
				inStream = true
			} else {
				inHTTP = true
			}
		}
		if inHTTP {
			s := svc
			if s != nil && streamProtocols[stringOf(s.Protocol)] {
				s = nil
			}
			httpRoutes = append(httpRoutes, RouteService{Route: r, Service: s})
		}
		if inStream {
			s := svc
			if s != nil && !streamProtocols[stringOf(s.Protocol)] {
				s = nil
			}
			streamRoutes = append(streamRoutes, RouteService{Route: r, Service: s})
		}
	}
	var err error
	if g.http, err = New(httpRoutes, Options{Flavor: cfg.Flavor}); err != nil {
		return nil, err
	}
	if g.stream, err = New(streamRoutes, Options{Flavor: cfg.Flavor, Stream: true}); err != nil {
		return nil, err
	}
	return g, nil
}

// HTTPRouter and StreamRouter are the gateway's routers.
func (g *Gateway) HTTPRouter() *Router   { return g.http }
func (g *Gateway) StreamRouter() *Router { return g.stream }

// Config is the configuration the gateway was built from.
func (g *Gateway) Config() *Config { return g.cfg }

// Request is an HTTP request as it reaches a Kong proxy listener.
type Request struct {
	Method string
	// Scheme is "http" or "https": how the request reached Kong.
	Scheme string
	// Host is the Host header (or :authority), possibly with a port.
	Host string
	// URI is the request target: the path as sent, with its query.
	URI    string
	Header http.Header
	SNI    string
	// ClientIP and ClientPort are the peer's address; ServerIP and ServerPort the listener's.
	ClientIP   string
	ClientPort int
	ServerIP   string
	ServerPort int
	// ProtoMajor is the HTTP version's major number (2 for HTTP/2).
	ProtoMajor int
}

// Exit is a response Kong gives itself instead of proxying.
type Exit struct {
	Status  int
	Message string // the error message Kong's JSON error body carries ("" for none)
	Header  http.Header
}

// NoRoute is Kong's answer to a request no route takes.
func NoRoute() *Exit {
	return &Exit{Status: http.StatusNotFound, Message: "no Route matched with those values"}
}

// Decision is what Kong does with a request before its plugins run: an Exit, or the route,
// service and upstream request to proxy. A serviceless route has a Forward too: its plugins may
// answer (KIC's request-termination routes); PickTarget answers 503 if none does.
type Decision struct {
	Match    *Match
	Exit     *Exit
	Upstream *kong.Upstream // when the service's host names an upstream
	// Forward is the request as the upstream receives it, before plugins change it.
	Forward *UpstreamRequest
}

// UpstreamRequest is the request Kong sends upstream.
type UpstreamRequest struct {
	Method string
	Scheme string // the service's protocol
	// Host and Port are where it goes: the service's host and port, or a target's once picked.
	Host string
	Port int
	// Path is the escaped upstream path; RawQuery the query sent after it, as the request
	// carried it, and ForceQuery a "?" sent without a query (Kong keeps "/foo?").
	Path       string
	RawQuery   string
	ForceQuery bool
	// HostHeader is the Host header: the request's with preserve_host, else the service's or
	// target's host (with the port unless it is the scheme's default), set when the target is
	// known (SetTarget).
	HostHeader string
	// Header is the request's headers with the ones Kong sets (X-Forwarded-*, X-Real-IP, Via).
	Header http.Header
}

// Proxy decides what Kong does with req in its router and the checks after it (handler.lua's
// access phase "before"): 404 without a matching route, the https redirect or 426 of an
// https-only route, the gRPC checks, else the upstream request.
func (g *Gateway) Proxy(req *Request) *Decision {
	m, err := g.http.Exec(httpParams(req))
	if err != nil || m == nil {
		return &Decision{Exit: NoRoute()}
	}
	d := &Decision{Match: m}
	protocols := map[string]bool{}
	for _, p := range strs(m.Route.Protocols) {
		protocols[p] = true
	}
	forwardedProto := req.Scheme
	forwardedHost, forwardedPort := nginxHost(req.Host), req.ServerPort
	if _, port, ok := splitHostPort(req.Host); ok && !strings.HasPrefix(req.Host, "[") {
		forwardedPort = port
	}
	if protocols["https"] && !protocols["http"] && forwardedProto != "https" {
		code := 426
		if m.Route.HTTPSRedirectStatusCode != nil {
			code = *m.Route.HTTPSRedirectStatusCode
		}
		switch code {
		case 426:
			d.Exit = &Exit{Status: 426, Message: "Please use HTTPS protocol",
				Header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"TLS/1.2, HTTP/1.1"}}}
			return d
		case 301, 302, 307, 308:
			d.Exit = &Exit{Status: code, Header: http.Header{"Location": {"https://" + forwardedHost + req.URI}}}
			return d
		}
	}
	if protocols["grpc"] || protocols["grpcs"] {
		if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/grpc") {
			d.Exit = &Exit{Status: 415, Message: "Non-gRPC request matched gRPC route"}
			return d
		}
		if req.ProtoMajor != 2 {
			d.Exit = &Exit{Status: 426, Message: "Please use HTTP2 protocol", Header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"HTTP/2"}}}
			return d
		}
		if !protocols["grpc"] && forwardedProto != "https" {
			d.Exit = &Exit{Status: 200, Header: http.Header{"Content-Type": {"application/grpc"}, "Grpc-Status": {"1"},
				"Grpc-Message": {"gRPC request matched gRPCs route"}}}
			return d
		}
	}
	f := &UpstreamRequest{Method: req.Method, Scheme: m.UpstreamScheme, Host: m.Upstream.Host, Port: m.Upstream.Port,
		Path: EscapePath(m.UpstreamURI), Header: req.Header.Clone()}
	if f.Header == nil {
		f.Header = http.Header{}
	}
	if i := strings.IndexByte(req.URI, '?'); i >= 0 {
		f.RawQuery = req.URI[i+1:]
		f.ForceQuery = f.RawQuery == ""
	}
	if u, ok := g.upstreams[m.Upstream.Host]; ok {
		d.Upstream = u
	}
	if xff := req.Header.Get("X-Forwarded-For"); xff != "" {
		f.Header.Set("X-Forwarded-For", xff+", "+req.ClientIP)
	} else {
		f.Header.Set("X-Forwarded-For", req.ClientIP)
	}
	f.Header.Set("X-Forwarded-Proto", forwardedProto)
	f.Header.Set("X-Forwarded-Host", forwardedHost)
	f.Header.Set("X-Forwarded-Port", strconv.Itoa(forwardedPort))
	path := req.URI
	if i := strings.IndexByte(path[min(1, len(path)):], '?'); i >= 0 {
		path = path[:i+1]
	}
	f.Header.Set("X-Forwarded-Path", path)
	if m.Prefix != "" && m.Prefix != "/" {
		f.Header.Set("X-Forwarded-Prefix", m.Prefix)
	} else {
		f.Header.Del("X-Forwarded-Prefix")
	}
	f.Header.Set("X-Real-IP", req.ClientIP)
	via := "1.1 kong/" + g.version
	if req.ProtoMajor == 2 {
		via = "2 kong/" + g.version
	}
	if v := req.Header.Get("Via"); v != "" {
		via = v + ", " + via
	}
	f.Header.Set("Via", via)
	for _, h := range hopByHop(req.Header) {
		f.Header.Del(h)
	}
	// Kong passes a WebSocket upgrade on (and no other): kong/runloop/handler.lua sets
	// $upstream_upgrade and $upstream_connection, which the nginx template sends upstream.
	if strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		f.Header.Set("Upgrade", "websocket")
		f.Header.Set("Connection", "keep-alive, Upgrade")
	}
	if m.UpstreamHost != "" {
		f.HostHeader = m.UpstreamHost
	}
	d.Forward = f
	return d
}

// httpParams are the router's facts of an HTTP request (Exec takes the query off the URI).
func httpParams(req *Request) Params {
	return Params{Method: req.Method, URI: req.URI, Host: req.Host, Scheme: req.Scheme, SrcIP: req.ClientIP,
		SrcPort: req.ClientPort, DstIP: req.ServerIP, DstPort: req.ServerPort, SNI: req.SNI,
		Headers: req.Header, Queries: queryArgs(req.URI)}
}

// Candidates are the http router's matchers that take req, in evaluation order (the first
// is the one Proxy routes by), each answered as if alone (Router.Candidates).
func (g *Gateway) Candidates(req *Request) ([]*Match, error) {
	p := httpParams(req)
	p.URI = stripURIArgs(p.URI)
	return g.http.Candidates(p)
}

// Misses are the fields of m's expression that req fails (Router.Misses).
func (g *Gateway) Misses(m *Matcher, req *Request) ([]string, error) {
	p := httpParams(req)
	p.URI = stripURIArgs(p.URI)
	return g.http.Misses(m, p)
}

// AllMisses are Router.AllMisses of the http router over req.
func (g *Gateway) AllMisses(req *Request) ([][]string, error) {
	p := httpParams(req)
	p.URI = stripURIArgs(p.URI)
	return g.http.AllMisses(p)
}

// hopByHop are the headers a proxy does not forward: the standard ones and those Connection
// names.
func hopByHop(h http.Header) []string {
	out := []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "TE", "Trailer"}
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// nginxHost is nginx's $host, which Kong reads as the request's host (ctx.host): the Host
// header lower-cased without its port, or the server's server_name ("kong" in Kong's nginx
// template) when the request names no host.
func nginxHost(host string) string {
	if host == "" {
		return "kong"
	}
	return strings.ToLower(hostOnly(host))
}

func hostOnly(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i > 0 {
			return host[:i+1]
		}
	}
	h, _, ok := splitHostPort(host)
	if ok {
		return h
	}
	return host
}

// queryArgs are the request's query arguments as ngx.req.get_uri_args() gives them to the
// router: decoded, an argument without "=" as "".
func queryArgs(uri string) map[string][]string {
	i := strings.IndexByte(uri, '?')
	if i < 0 {
		return nil
	}
	out := map[string][]string{}
	for _, part := range strings.FieldsFunc(uri[i+1:], func(r rune) bool { return r == '&' }) {
		k, v, _ := strings.Cut(part, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || k == "" {
			continue
		}
		out[k] = append(out[k], v)
	}
	return out
}

// Target is where a request goes after balancing.
type Target struct {
	Host string
	Port int
	// Hostname is the Host header's name for it: the upstream's host_header, else the target's.
	Hostname string
}

// PickTarget balances d across its upstream's targets by weight (smooth weighted round robin;
// a target of weight 0 takes nothing), or takes the service's own host and port. It answers
// Kong's 503 when the upstream has no target to take the request, and completes the upstream
// request's address and Host header.
func (g *Gateway) PickTarget(d *Decision) (*Target, *Exit) {
	if d.Match.Service == nil {
		// A serviceless route no plugin answered (nginx's error page in Kong's template).
		return nil, &Exit{Status: http.StatusServiceUnavailable, Message: "no Service found with those values"}
	}
	f := d.Forward
	t := &Target{Host: f.Host, Port: f.Port, Hostname: f.Host}
	if d.Upstream != nil {
		var candidates []*kong.Target
		for _, tg := range g.targets[stringOf(d.Upstream.ID)] {
			if tg.Weight == nil || *tg.Weight > 0 {
				candidates = append(candidates, tg)
			}
		}
		if len(candidates) == 0 {
			return nil, &Exit{Status: http.StatusServiceUnavailable, Message: "failure to get a peer from the ring-balancer"}
		}
		picked := g.pick(stringOf(d.Upstream.ID), candidates)
		host, port := targetAddress(stringOf(picked.Target))
		t = &Target{Host: host, Port: port, Hostname: host}
		if d.Upstream.HostHeader != nil && *d.Upstream.HostHeader != "" {
			t.Hostname = *d.Upstream.HostHeader
		}
	}
	f.Host, f.Port = t.Host, t.Port
	if f.HostHeader == "" {
		f.HostHeader = t.Hostname
		if (t.Port != 80 && t.Port != 443) || (t.Port == 80 && f.Scheme != "http" && f.Scheme != "grpc") ||
			(t.Port == 443 && f.Scheme != "https" && f.Scheme != "grpcs") {
			f.HostHeader += ":" + strconv.Itoa(t.Port)
		}
	}
	return t, nil
}

// targetAddress splits a target ("host:port", "[v6]:port"); Kong's default port is 8000.
func targetAddress(target string) (string, int) {
	host, port := target, 8000
	if i := strings.LastIndexByte(target, ':'); i > 0 && !strings.HasSuffix(target, "]") {
		if p, err := strconv.Atoi(target[i+1:]); err == nil {
			host, port = target[:i], p
		}
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port
}

// weightedRR is a smooth weighted round robin over an upstream's targets.
type weightedRR struct {
	key     string
	current map[string]int
}

func (g *Gateway) pick(upstream string, targets []*kong.Target) *kong.Target {
	g.balancer.Lock()
	defer g.balancer.Unlock()
	sorted := append([]*kong.Target(nil), targets...)
	sort.Slice(sorted, func(i, j int) bool { return stringOf(sorted[i].Target) < stringOf(sorted[j].Target) })
	var key strings.Builder
	total := 0
	for _, t := range sorted {
		w := 100
		if t.Weight != nil {
			w = *t.Weight
		}
		total += w
		key.WriteString(stringOf(t.Target) + "=" + strconv.Itoa(w) + ",")
	}
	rr := g.rr[upstream]
	if rr == nil || rr.key != key.String() {
		rr = &weightedRR{key: key.String(), current: map[string]int{}}
		g.rr[upstream] = rr
	}
	var best *kong.Target
	for _, t := range sorted {
		w := 100
		if t.Weight != nil {
			w = *t.Weight
		}
		name := stringOf(t.Target)
		rr.current[name] += w
		if best == nil || rr.current[name] > rr.current[stringOf(best.Target)] {
			best = t
		}
	}
	rr.current[stringOf(best.Target)] -= total
	return best
}

// URI is the request target sent upstream: the path and the query.
func (f *UpstreamRequest) URI() string {
	if f.RawQuery != "" || f.ForceQuery {
		return f.Path + "?" + f.RawQuery
	}
	return f.Path
}

// StreamRequest is a connection as it reaches a Kong stream listener.
type StreamRequest struct {
	// Scheme is "tcp", "tls" (Kong terminated TLS or read the SNI) or "udp".
	Scheme     string
	SNI        string
	ClientIP   string
	ClientPort int
	ServerIP   string
	ServerPort int
}

// ProxyStream decides where a stream connection goes: the route and service, and the upstream
// when the service's host names one (PickTarget then balances it as for HTTP). nil: no route
// takes it (Kong closes the connection).
func (g *Gateway) ProxyStream(req *StreamRequest) (*Decision, error) {
	m, err := g.stream.Select(Params{Scheme: req.Scheme, SNI: req.SNI, SrcIP: req.ClientIP, SrcPort: req.ClientPort,
		DstIP: req.ServerIP, DstPort: req.ServerPort})
	if err != nil || m == nil {
		return nil, err
	}
	d := &Decision{Match: m, Forward: &UpstreamRequest{Scheme: m.UpstreamScheme, Host: m.Upstream.Host, Port: m.Upstream.Port,
		Header: http.Header{}}}
	if u, ok := g.upstreams[m.Upstream.Host]; ok {
		d.Upstream = u
	}
	return d, nil
}
