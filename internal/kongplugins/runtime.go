package kongplugins

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongrouter"
)

// handler is one plugin as Kong runs it: its PRIORITY, whether it can be scoped to a consumer,
// and its phases (nil when it has none).
type handler struct {
	priority     int
	noConsumer   bool
	access       func(x *Exchange, conf config) *Response
	headerFilter func(x *Exchange, conf config, status int, h http.Header)
	// bodyFilter rewrites a response body; wantsBody says whether it will for this response.
	wantsBody  func(conf config, h http.Header) bool
	bodyFilter func(x *Exchange, conf config, h http.Header, body []byte) []byte
}

// handlers are the plugins this package runs. Kong's PRIORITY values are read from each
// plugin's handler.lua.
var handlers = map[string]*handler{}

// priorities are the PRIORITY of bundled plugins that are passed through (ordering only).
var priorities = map[string]int{
	"correlation-id": 100001, "bot-detection": 2500, "mtls-auth": 1600, "jwt": 1450, "oauth2": 1400,
	"openid-connect": 1050, "hmac-auth": 1030, "request-size-limiting": 951, "rate-limiting": 910,
	"rate-limiting-advanced": 910, "proxy-cache": 100, "opentelemetry": 14, "prometheus": 13,
	"http-log": 12, "file-log": 9,
}

func priorityOf(name string) int {
	if h := handlers[name]; h != nil {
		return h.priority
	}
	return priorities[name]
}

// Modelled reports whether the package runs the plugin (others are passed through and counted).
func Modelled(name string) bool { return handlers[name] != nil }

// Runtime runs the plugins of one Kong configuration.
type Runtime struct {
	names      []string                           // plugin names configured, in Kong's run order
	byScope    map[string]map[string]*kong.Plugin // name -> "route:service:consumer" -> plugin
	consumers  map[string]*kong.Consumer
	byUsername map[string]*kong.Consumer
	keyAuths   map[string]*kong.KeyAuth
	basicAuths map[string]*kong.BasicAuth
	acls       map[string][]string // consumer id -> groups
}

// New indexes cfg's enabled plugins, consumers and credentials.
func New(cfg *kongrouter.Config) *Runtime {
	rt := &Runtime{byScope: map[string]map[string]*kong.Plugin{}, consumers: map[string]*kong.Consumer{},
		byUsername: map[string]*kong.Consumer{}, keyAuths: map[string]*kong.KeyAuth{},
		basicAuths: map[string]*kong.BasicAuth{}, acls: map[string][]string{}}
	for _, p := range cfg.Plugins {
		if p.Name == nil || (p.Enabled != nil && !*p.Enabled) {
			continue
		}
		name := *p.Name
		if rt.byScope[name] == nil {
			rt.byScope[name] = map[string]*kong.Plugin{}
			rt.names = append(rt.names, name)
		}
		rt.byScope[name][scopeKey(refID(p.Route), refID(p.Service), refID(p.Consumer))] = p
	}
	sort.Slice(rt.names, func(i, j int) bool {
		a, b := rt.names[i], rt.names[j]
		if pa, pb := priorityOf(a), priorityOf(b); pa != pb {
			return pa > pb
		}
		return a > b
	})
	for _, c := range cfg.Consumers {
		if c.ID != nil {
			rt.consumers[*c.ID] = c
		}
		if c.Username != nil {
			rt.byUsername[*c.Username] = c
		}
	}
	for _, k := range cfg.KeyAuths {
		if k.Key != nil {
			rt.keyAuths[*k.Key] = k
		}
	}
	for _, b := range cfg.BasicAuths {
		if b.Username != nil {
			rt.basicAuths[*b.Username] = b
		}
	}
	for _, a := range cfg.ACLGroups {
		if a.Consumer != nil && a.Consumer.ID != nil && a.Group != nil {
			rt.acls[*a.Consumer.ID] = append(rt.acls[*a.Consumer.ID], *a.Group)
		}
	}
	return rt
}

func refID(r any) string {
	switch r := r.(type) {
	case *kong.Route:
		if r != nil && r.ID != nil {
			return *r.ID
		}
	case *kong.Service:
		if r != nil && r.ID != nil {
			return *r.ID
		}
	case *kong.Consumer:
		if r != nil && r.ID != nil {
			return *r.ID
		}
	}
	return ""
}

func scopeKey(route, service, consumer string) string { return route + ":" + service + ":" + consumer }

// lookup is plugins_iterator.lua's lookup_cfg: the most specific configuration of the plugin for
// the route, service and consumer known so far.
func (rt *Runtime) lookup(name string, x *Exchange) *kong.Plugin {
	scopes := rt.byScope[name]
	var route, service, consumer string
	if x.Match != nil {
		route = refID(x.Match.Route)
		service = refID(x.Match.Service)
	}
	if x.Consumer != nil && !(handlers[name] != nil && handlers[name].noConsumer) {
		consumer = refID(x.Consumer)
	}
	if x.Match == nil {
		return scopes[scopeKey("", "", "")]
	}
	// Kong's combinations, most specific first: route, service, consumer.
	for _, combo := range [][3]bool{
		{true, true, true}, {true, false, true}, {false, true, true}, {true, true, false},
		{false, false, true}, {true, false, false}, {false, true, false}, {false, false, false},
	} {
		if (combo[0] && route == "") || (combo[1] && service == "") || (combo[2] && consumer == "") {
			continue
		}
		key := scopeKey(pick(combo[0], route), pick(combo[1], service), pick(combo[2], consumer))
		if p := scopes[key]; p != nil {
			return p
		}
	}
	return nil
}

func pick(use bool, id string) string {
	if use {
		return id
	}
	return ""
}

// Exchange is one request on its way through Kong's plugins.
type Exchange struct {
	Request *kongrouter.Request
	// Match is the route the router chose, nil when none matched (then only global plugins run
	// their response phases).
	Match *kongrouter.Match
	// Forward is the request the upstream receives; access plugins change it.
	Forward *kongrouter.UpstreamRequest
	// Body returns the request body (read once by the caller); SetBody replaces what is sent.
	Body    func() []byte
	SetBody func([]byte)
	// RequestID is Kong's request id (X-Kong-Request-Id), quoted by error bodies.
	RequestID string
	// NodeID and Hostname describe the Kong node (request-termination's echo).
	NodeID, Hostname string

	Consumer   *kong.Consumer
	Credential any // *kong.KeyAuth or *kong.BasicAuth

	runtime     *Runtime
	collected   []*kong.Plugin
	corsHandled bool // a preflight the cors plugin took: no CORS headers on its response
	// Unmodelled are the plugins that applied and that this package does not run.
	Unmodelled []string
	// Ran are the plugins whose access phase ran, in order.
	Ran []string
}

// Response is a response Kong gives itself.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Access runs the access phase: each configured plugin name in Kong's order, its configuration
// looked up with the consumer authenticated so far; the first response a plugin gives ends it
// (later plugins are still collected for the response phases, as Kong collects them).
func (rt *Runtime) Access(x *Exchange) *Response {
	x.runtime = rt
	var exit *Response
	for _, name := range rt.names {
		p := rt.lookup(name, x)
		if p == nil {
			continue
		}
		x.collected = append(x.collected, p)
		if exit != nil || x.Match == nil {
			continue
		}
		h := handlers[name]
		if h == nil {
			x.Unmodelled = append(x.Unmodelled, name)
			continue
		}
		if h.access == nil {
			continue
		}
		x.Ran = append(x.Ran, name)
		exit = h.access(x, config(p.Config))
	}
	return exit
}

// Collected are the plugins that apply to the exchange, in Kong's order (after Access).
func (x *Exchange) Collected() []*kong.Plugin { return x.collected }

// HeaderFilter runs the header_filter phase of the collected plugins on a response, whether
// the upstream or Kong gave it.
func (rt *Runtime) HeaderFilter(x *Exchange, status int, h http.Header) {
	for _, p := range x.collected {
		if hd := handlers[*p.Name]; hd != nil && hd.headerFilter != nil {
			hd.headerFilter(x, config(p.Config), status, h)
		}
	}
}

// WantsBody reports whether a collected plugin rewrites this response's body (the caller then
// buffers it for BodyFilter).
func (rt *Runtime) WantsBody(x *Exchange, h http.Header) bool {
	for _, p := range x.collected {
		if hd := handlers[*p.Name]; hd != nil && hd.wantsBody != nil && hd.wantsBody(config(p.Config), h) {
			return true
		}
	}
	return false
}

// BodyFilter runs the body_filter phase over a whole response body.
func (rt *Runtime) BodyFilter(x *Exchange, h http.Header, body []byte) []byte {
	for _, p := range x.collected {
		if hd := handlers[*p.Name]; hd != nil && hd.bodyFilter != nil && hd.wantsBody(config(p.Config), h) {
			body = hd.bodyFilter(x, config(p.Config), h, body)
		}
	}
	return body
}

// config is a plugin's configuration with Kong's defaults filled.
type config map[string]any

func (c config) str(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c config) boolean(key string) bool {
	b, _ := c[key].(bool)
	return b
}

func (c config) number(key string, def float64) float64 {
	switch v := c[key].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case json.Number:
		f, _ := v.Float64()
		return f
	}
	return def
}

func (c config) strings(key string) []string {
	var out []string
	switch v := c[key].(type) {
	case []any:
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = v
	}
	return out
}

func (c config) sub(key string) config {
	m, _ := c[key].(map[string]any)
	return config(m)
}

// exit is kong.response.exit: a table body as JSON (cjson escapes "/"), a string as is.
func exit(status int, body any, header http.Header) *Response {
	if header == nil {
		header = http.Header{}
	}
	r := &Response{Status: status, Header: header}
	switch b := body.(type) {
	case nil:
	case string:
		r.Body = []byte(b)
	default:
		raw, _ := json.Marshal(b)
		r.Body = []byte(strings.ReplaceAll(string(raw), "/", `\/`))
		if header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/json; charset=utf-8")
		}
	}
	return r
}

// defaultMessages are kong.response.error's messages by status (kong/pdk/response.lua).
var defaultMessages = map[int]string{
	400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found", 405: "Method not allowed",
	408: "Request timeout", 409: "Conflict", 413: "Request size limit exceeded", 414: "URI too long",
	415: "Unsupported media type", 426: "Upgrade required", 429: "API rate limit exceeded",
	500: "An unexpected error occurred", 502: "An invalid response was received from the upstream server",
	503: "The upstream server is currently unavailable", 504: "The upstream server is timing out",
}

// ErrorResponse is kong.response.error: Kong's error template for the request's Accept header,
// with the request id.
func ErrorResponse(status int, message string, header http.Header, accept, requestID string) *Response {
	if header == nil {
		header = http.Header{}
	}
	if message == "" {
		message = defaultMessages[status]
		if message == "" {
			message = fmt.Sprintf("The upstream server responded with %d", status)
		}
	}
	contentType := header.Get("Content-Type")
	if contentType == "" {
		contentType = negotiate(accept)
		header.Set("Content-Type", contentType)
	}
	var body string
	switch {
	case strings.HasPrefix(contentType, "application/grpc"):
	case strings.HasPrefix(contentType, "text/html"):
		body = fmt.Sprintf("<!doctype html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n    <title>Error</title>\n  </head>\n  <body>\n    <h1>Error</h1>\n    <p>%s.</p>\n    <p>request_id: %s</p>\n  </body>\n</html>\n", message, requestID)
	case strings.HasPrefix(contentType, "text/plain"):
		body = fmt.Sprintf("%s\nrequest_id: %s\n", message, requestID)
	case strings.HasPrefix(contentType, "application/xml"):
		body = fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<error>\n  <message>%s</message>\n  <requestid>%s</requestid>\n</error>\n", message, requestID)
	default:
		body = fmt.Sprintf("{\n  \"message\":\"%s\",\n  \"request_id\":\"%s\"\n}", message, requestID)
	}
	return &Response{Status: status, Header: header, Body: []byte(body)}
}

// negotiate is kong.tools.http's get_response_type: the first media type of Accept Kong has a
// template for, JSON by default.
func negotiate(accept string) string {
	for _, part := range strings.Split(accept, ",") {
		mt := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		switch mt {
		case "application/json", "application/*":
			return "application/json; charset=utf-8"
		case "text/html":
			return "text/html; charset=utf-8"
		case "text/plain", "text/*":
			return "text/plain; charset=utf-8"
		case "application/xml":
			return "application/xml; charset=utf-8"
		}
	}
	return "application/json; charset=utf-8"
}

func (x *Exchange) errorResponse(status int, message string, header http.Header) *Response {
	return ErrorResponse(status, message, header, x.Request.Header.Get("Accept"), x.RequestID)
}
