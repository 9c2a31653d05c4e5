package kongemu

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/konductor/konductor/internal/kongplugins"
	"github.com/konductor/konductor/internal/kongrouter"
)

// The emulator's proxy: the requests a Kong node's proxy listener takes, routed by
// internal/kongrouter against the configuration the emulator holds at that moment, through the
// plugins internal/kongplugins runs, balanced across the upstream's targets and forwarded to
// the backend ProxyOptions.Resolve names (in-process backends in tests), or over the network.

// ProxyOptions configure a Proxy.
type ProxyOptions struct {
	// Resolve maps the address a request goes to (a target's, or a service's host and port)
	// to the handler that answers it; nil for an address nothing answers (Kong then tries the
	// next target, as it does after a connection failure). Without Resolve, requests are
	// forwarded over the network to that address.
	Resolve func(host string, port int) http.Handler
	// BackendTLS gives the TLS server configuration of the in-process backend at an address
	// Resolve answers, nil for one that speaks plain HTTP. With it, the proxy connects to that
	// backend as Kong does to an https service (the handshake, SNI and certificate
	// verification of upstream_tls.go); without it, an https service's in-process backend is
	// handed the request as if the handshake had succeeded.
	BackendTLS func(host string, port int) *tls.Config
	// ResolveStream is Resolve for the stream proxy (StartStreams): network is "tcp" or "udp";
	// nil for an address nothing answers.
	ResolveStream func(network, host string, port int) StreamBackend
	// AllowDebugHeader is Kong's allow_debug_header: a request with a Kong-Debug header gets
	// Kong-Route-Id, Kong-Route-Name, Kong-Service-Id and Kong-Service-Name.
	AllowDebugHeader bool
}

// Proxy is a Kong node's proxy over an Emulator. It is an http.Handler.
type Proxy struct {
	e    *Emulator
	opts ProxyOptions

	mu       sync.Mutex
	built    *sync.Cond // signalled when a view is built
	building bool
	key      proxyKey
	current  *proxyState

	requests   atomic.Int64
	unmodelled sync.Map // plugin name -> *atomic.Int64
	transport  *http.Transport
	h2c        *http.Transport
}

type proxyKey struct {
	db      *db
	version uint64
}

// proxyState is what one version of the emulator's configuration makes of requests.
type proxyState struct {
	gateway *kongrouter.Gateway
	plugins *kongplugins.Runtime
	certs   map[string]*tls.Certificate  // by SNI name ("*.example.com" for a wildcard)
	cas     map[string]*x509.Certificate // ca_certificates by id
	err     error
}

// Proxy returns the emulator's proxy.
func (e *Emulator) Proxy(opts ProxyOptions) *Proxy {
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	p := &Proxy{e: e, opts: opts, transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}, h2c: h2c}
	p.built = sync.NewCond(&p.mu)
	return p
}

// state returns the proxy's view of the emulator's configuration. When the configuration has
// changed since the last view was built, one request builds the new view (the entities are read
// under the emulator's lock as their cached JSON, the rest is done outside it) while the others
// go on with the last one, as Kong's workers go on with their router while a new one is built.
func (p *Proxy) state() *proxyState {
	p.e.mu.Lock()
	d := p.e.db
	if p.e.outside != nil {
		d = p.e.outside
	}
	key := proxyKey{db: d, version: d.version}
	p.mu.Lock()
	for {
		if p.current != nil && (p.key == key || p.building) {
			s := p.current
			p.mu.Unlock()
			p.e.mu.Unlock()
			return s
		}
		if !p.building {
			break
		}
		// The first view is being built: wait for it (without the emulator's lock).
		p.e.mu.Unlock()
		p.built.Wait()
		p.mu.Unlock()
		p.e.mu.Lock()
		p.mu.Lock()
	}
	p.building = true
	p.mu.Unlock()
	entities := map[string][]json.RawMessage{}
	for _, kind := range []string{"services", "routes", "upstreams", "targets", "plugins", "consumers",
		"keyauth_credentials", "basicauth_credentials", "acls", "certificates", "snis", "ca_certificates"} {
		s := schemas[kind]
		for _, ent := range d.list(kind) {
			entities[kind] = append(entities[kind], d.renderJSON(s, ent))
		}
	}
	flavor, version := kongrouter.Flavor(p.e.opts.RouterFlavor), p.e.opts.Version
	p.e.mu.Unlock()

	st := &proxyState{}
	cfg, err := kongrouter.ConfigFromEntityJSON(flavor, func(kind string) ([]json.RawMessage, error) { return entities[kind], nil })
	if err == nil {
		st.gateway, err = kongrouter.NewGateway(cfg, version)
	}
	if err == nil {
		st.plugins = kongplugins.New(cfg)
		st.certs = certificatesBySNI(cfg)
		st.cas = caCertificatesByID(cfg)
	}
	st.err = err
	p.mu.Lock()
	p.key, p.current, p.building = key, st, false
	p.built.Broadcast()
	p.mu.Unlock()
	return st
}

// Requests is the number of requests the proxy has taken.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Unmodelled counts, by plugin name, the requests on which a plugin applied that the proxy does
// not run (passed through).
func (p *Proxy) Unmodelled() map[string]int64 {
	out := map[string]int64{}
	p.unmodelled.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeHTTP proxies one request as a Kong node does.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p.requests.Add(1)
	st := p.state()
	requestID := newRequestID()
	req := kongRequest(r)
	if st.err != nil {
		writeKong(w, kongplugins.ErrorResponse(500, "An unexpected error occurred", nil, r.Header.Get("Accept"), requestID), p.e.opts.Version, requestID, start)
		return
	}
	d := st.gateway.Proxy(req)
	var body []byte
	bodyRead := false
	x := &kongplugins.Exchange{Request: req, Match: d.Match, Forward: d.Forward, RequestID: requestID,
		NodeID: p.e.nodeIDNow(), Hostname: p.e.opts.Hostname,
		Body: func() []byte {
			if !bodyRead {
				body, _ = io.ReadAll(r.Body)
				bodyRead = true
			}
			return body
		},
		SetBody: func(b []byte) { body, bodyRead = b, true }}
	debug := http.Header{}
	if p.opts.AllowDebugHeader && d.Match != nil && len(r.Header.Values("Kong-Debug")) > 0 {
		setIf := func(name string, v *string) {
			if v != nil && *v != "" {
				debug.Set(name, *v)
			}
		}
		setIf("Kong-Route-Id", d.Match.Route.ID)
		setIf("Kong-Route-Name", d.Match.Route.Name)
		if s := d.Match.Service; s != nil {
			setIf("Kong-Service-Id", s.ID)
			setIf("Kong-Service-Name", s.Name)
		}
	}
	answer := func(resp *kongplugins.Response) {
		for k, v := range debug {
			resp.Header[k] = v
		}
		st.plugins.HeaderFilter(x, resp.Status, resp.Header)
		if st.plugins.WantsBody(x, resp.Header) {
			resp.Body = st.plugins.BodyFilter(x, resp.Header, resp.Body)
		}
		writeKong(w, resp, p.e.opts.Version, requestID, start)
	}
	if d.Exit != nil {
		// handler.lua's access "before" answered (no route, the https redirect or 426 of an
		// https-only route, the gRPC checks) before the plugins iterator collected the
		// route's plugins: only global plugins run their response phases
		// (plugins_iterator's get_collected_iterator falls back to the global iterator), with
		// the matched route still in the context.
		m := x.Match
		x.Match = nil
		st.plugins.Access(x)
		x.Match = m
		answer(exitResponse(d.Exit, r, requestID))
		return
	}
	if resp := st.plugins.Access(x); resp != nil {
		answer(resp)
		return
	}
	for _, name := range x.Unmodelled {
		c, _ := p.unmodelled.LoadOrStore(name, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	retries := 5
	if s := d.Match.Service; s != nil && s.Retries != nil {
		retries = *s.Retries
	}
	// Kong reads the whole request body before it proxies (the route's request_buffering,
	// true by default: nginx's proxy_request_buffering), so every try sends all of it, also
	// one after a try that read it and timed out.
	if rb := d.Match.Route.RequestBuffering; rb == nil || *rb {
		x.Body()
	}
	var lastErr *kongrouter.Exit
	for try := 0; try <= retries; try++ {
		target, exit := st.gateway.PickTarget(d)
		if exit != nil {
			answer(exitResponse(exit, r, requestID))
			return
		}
		var reqBody io.Reader = r.Body
		if bodyRead {
			reqBody = bytes.NewReader(body)
		}
		switch p.forward(w, r, x, st, d, target, reqBody, debug, start) {
		case answered:
			return
		case timedOut:
			// No answer within the service's read_timeout: nginx's proxy_next_upstream
			// ("error timeout") tries the next target too, then Kong answers 504.
			lastErr = &kongrouter.Exit{Status: http.StatusGatewayTimeout}
		default:
			// Nothing answered at that address: Kong tries the next target, up to the
			// service's retries, then answers 502.
			lastErr = &kongrouter.Exit{Status: http.StatusBadGateway}
		}
	}
	answer(exitResponse(lastErr, r, requestID))
}

// nodeIDNow is the node id GET / reports.
func (e *Emulator) nodeIDNow() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nodeID
}

func exitResponse(x *kongrouter.Exit, r *http.Request, requestID string) *kongplugins.Response {
	h := x.Header.Clone()
	if x.Message == "" && x.Status < 400 {
		if h == nil {
			h = http.Header{}
		}
		return &kongplugins.Response{Status: x.Status, Header: h}
	}
	return kongplugins.ErrorResponse(x.Status, x.Message, h, r.Header.Get("Accept"), requestID)
}

// writeKong writes a response Kong gives itself, with the headers Kong adds to them.
func writeKong(w http.ResponseWriter, resp *kongplugins.Response, version, requestID string, start time.Time) {
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	h.Set("Server", "kong/"+version)
	h.Set("X-Kong-Response-Latency", strconv.FormatInt(time.Since(start).Milliseconds(), 10))
	h.Set("X-Kong-Request-Id", requestID)
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// kongRequest describes r as it reached the listener.
func kongRequest(r *http.Request) *kongrouter.Request {
	req := &kongrouter.Request{Method: r.Method, Scheme: "http", Host: r.Host, URI: r.RequestURI, Header: r.Header,
		ProtoMajor: r.ProtoMajor}
	if req.URI == "" {
		req.URI = r.URL.RequestURI()
	}
	if r.TLS != nil {
		req.Scheme, req.SNI = "https", r.TLS.ServerName
	}
	if host, port, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		req.ClientIP = host
		req.ClientPort, _ = strconv.Atoi(port)
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if host, port, err := net.SplitHostPort(addr.String()); err == nil {
			req.ServerIP = host
			req.ServerPort, _ = strconv.Atoi(port)
		}
	}
	return req
}

// forwardOutcome is how one try of a target ended.
type forwardOutcome int

const (
	answered forwardOutcome = iota
	// unreachable: nothing answered at the target's address (a connection failure).
	unreachable
	// timedOut: the target sent no response within the service's read_timeout.
	timedOut
)

// readTimeout is the service's read_timeout (Kong's default 60 s), which bounds the wait for
// the upstream's response here. Kong applies it between two reads of the response; the model
// applies it to the response's start only (a backend that starts answering is not cut off).
func readTimeout(d *kongrouter.Decision) time.Duration {
	if s := d.Match.Service; s != nil && s.ReadTimeout != nil {
		return time.Duration(*s.ReadTimeout) * time.Millisecond
	}
	return 60 * time.Second
}

// forward sends the upstream request to target and writes the response through the plugins'
// response phases. It reports whether the target answered, so that the caller tries the next
// one otherwise, as Kong does.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, x *kongplugins.Exchange, st *proxyState,
	d *kongrouter.Decision, target *kongrouter.Target, body io.Reader, debug http.Header, start time.Time) forwardOutcome {
	f := d.Forward
	u, err := url.ParseRequestURI(f.URI())
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	scheme := "http"
	if f.Scheme == "https" || f.Scheme == "grpcs" {
		scheme = "https"
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(target.Host, strconv.Itoa(target.Port))
	out := (&http.Request{Method: f.Method, URL: u, Host: f.HostHeader, Header: f.Header.Clone(), Body: io.NopCloser(body),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: "127.0.0.1:0", RequestURI: u.RequestURI()}).WithContext(r.Context())
	if f.Scheme == "grpc" || f.Scheme == "grpcs" {
		out.Proto, out.ProtoMajor, out.ProtoMinor = "HTTP/2.0", 2, 0
	}
	out.Header.Set("X-Kong-Request-Id", x.RequestID)
	upstreamStart := time.Now()
	pw := &proxyWriter{w: w, x: x, rt: st.plugins, debug: debug, version: p.e.opts.Version, start: start, upstreamStart: upstreamStart}
	timeout := readTimeout(d)
	if out.Header.Get("Upgrade") == "websocket" {
		return p.upgrade(w, out, pw, st, d, target, scheme == "https", timeout)
	}
	transport := p.transport
	if f.Scheme == "grpc" {
		transport = p.h2c
	}
	if p.opts.Resolve != nil {
		h := p.opts.Resolve(target.Host, target.Port)
		if h == nil {
			return unreachable
		}
		if p.opts.BackendTLS == nil || p.opts.BackendTLS(target.Host, target.Port) == nil {
			return serveWithin(h, pw, out, timeout)
		}
		// A TLS backend: a connection of its own, as over the network.
		transport = p.connectionTransport(st, d, target, scheme == "https")
		defer transport.CloseIdleConnections()
	} else if scheme == "https" {
		transport = p.connectionTransport(st, d, target, true)
		defer transport.CloseIdleConnections()
	}
	out.RequestURI = ""
	ctx, cancel := context.WithCancel(out.Context())
	defer cancel()
	timer := time.AfterFunc(timeout, cancel)
	resp, err := transport.RoundTrip(out.WithContext(ctx))
	if !timer.Stop() {
		// The timeout fired (and cancelled the request) before the response's start.
		if err == nil {
			resp.Body.Close()
		}
		return timedOut
	}
	if err != nil {
		return unreachable
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		pw.Header()[k] = v
	}
	pw.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			_, _ = pw.Write(buf[:n])
			pw.Flush()
		}
		if err != nil {
			break
		}
	}
	for k, v := range resp.Trailer {
		w.Header()[http.TrailerPrefix+k] = v
	}
	pw.finish()
	return answered
}

// serveWithin has an in-process backend answer out through pw, unless it has not started its
// response within timeout: then the backend's request is cancelled, whatever it writes later
// is dropped, and nothing has reached the client (the caller answers or tries again).
func serveWithin(h http.Handler, pw *proxyWriter, out *http.Request, timeout time.Duration) forwardOutcome {
	ctx, cancel := context.WithCancel(out.Context())
	defer cancel()
	gw := &gateWriter{pw: pw, header: http.Header{}, started: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(gw, out.WithContext(ctx))
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-gw.started:
	case <-done:
	case <-timer.C:
		if gw.abandon() {
			cancel()
			return timedOut
		}
	}
	<-done
	pw.finish()
	return answered
}

// gateWriter holds an in-process backend's response headers until it starts its response, so
// that a backend abandoned for its slowness leaves nothing in the client's response.
type gateWriter struct {
	pw        *proxyWriter
	header    http.Header
	started   chan struct{}
	mu        sync.Mutex
	begun     bool
	abandoned bool
}

func (g *gateWriter) Header() http.Header {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.begun {
		return g.pw.Header() // trailers are set after the response started
	}
	return g.header
}

// begin starts the response (once): the held headers go to the client's. False when the
// backend was abandoned.
func (g *gateWriter) begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.abandoned {
		return false
	}
	if !g.begun {
		g.begun = true
		// As they would arrive over the wire: names are case-insensitive (the suite's echo
		// server writes them as the request asked, "x-header-set"), so Kong's plugins see
		// one header whatever the case.
		h := g.pw.Header()
		for k, v := range g.header {
			k = textproto.CanonicalMIMEHeaderKey(k)
			h[k] = append(h[k], v...)
		}
		close(g.started)
	}
	return true
}

// abandon gives up on a backend that has not started its response; false when it has.
func (g *gateWriter) abandon() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.begun {
		return false
	}
	g.abandoned = true
	return true
}

func (g *gateWriter) WriteHeader(status int) {
	if g.begin() {
		g.pw.WriteHeader(status)
	}
}

func (g *gateWriter) Write(b []byte) (int, error) {
	if !g.begin() {
		return 0, http.ErrHandlerTimeout
	}
	return g.pw.Write(b)
}

func (g *gateWriter) Flush() {
	if g.begin() {
		g.pw.Flush()
	}
}

// proxyWriter passes an upstream response to the client through the plugins' header_filter
// (and body_filter, which buffers the body) with the headers Kong adds to proxied responses.
type proxyWriter struct {
	w             http.ResponseWriter
	x             *kongplugins.Exchange
	rt            *kongplugins.Runtime
	debug         http.Header
	version       string
	start         time.Time
	upstreamStart time.Time

	wrote  bool
	status int
	buffer *bytes.Buffer
}

func (pw *proxyWriter) Header() http.Header { return pw.w.Header() }

func (pw *proxyWriter) WriteHeader(status int) {
	if pw.wrote {
		return
	}
	if pw.prepare(status) {
		pw.buffer = &bytes.Buffer{}
		return
	}
	pw.w.WriteHeader(status)
}

// prepare passes the response's headers through the plugins' header_filter and adds Kong's;
// true when a plugin wants the body (it is then buffered).
func (pw *proxyWriter) prepare(status int) bool {
	pw.wrote, pw.status = true, status
	h := pw.w.Header()
	for k, v := range pw.debug {
		h[k] = v
	}
	pw.rt.HeaderFilter(pw.x, status, h)
	h.Set("Via", "1.1 kong/"+pw.version)
	h.Set("X-Kong-Upstream-Latency", strconv.FormatInt(time.Since(pw.upstreamStart).Milliseconds(), 10))
	h.Set("X-Kong-Proxy-Latency", strconv.FormatInt(pw.upstreamStart.Sub(pw.start).Milliseconds(), 10))
	h.Set("X-Kong-Request-Id", pw.x.RequestID)
	return pw.rt.WantsBody(pw.x, h)
}

func (pw *proxyWriter) Write(b []byte) (int, error) {
	if !pw.wrote {
		pw.WriteHeader(http.StatusOK)
	}
	if pw.buffer != nil {
		return pw.buffer.Write(b)
	}
	return pw.w.Write(b)
}

func (pw *proxyWriter) Flush() {
	if pw.buffer != nil {
		return
	}
	if f, ok := pw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes a buffered body through the body filters.
func (pw *proxyWriter) finish() {
	if !pw.wrote {
		pw.WriteHeader(http.StatusOK)
	}
	if pw.buffer == nil {
		return
	}
	body := pw.rt.BodyFilter(pw.x, pw.w.Header(), pw.buffer.Bytes())
	pw.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	pw.w.WriteHeader(pw.status)
	_, _ = pw.w.Write(body)
}

// certificatesBySNI are the configuration's certificates by their SNI names.
func certificatesBySNI(cfg *kongrouter.Config) map[string]*tls.Certificate {
	byID := map[string]*tls.Certificate{}
	for _, c := range cfg.Certificates {
		if c.ID == nil || c.Cert == nil || c.Key == nil {
			continue
		}
		if pair, err := tls.X509KeyPair([]byte(*c.Cert), []byte(*c.Key)); err == nil {
			byID[*c.ID] = &pair
		}
	}
	out := map[string]*tls.Certificate{}
	for _, s := range cfg.SNIs {
		if s.Name == nil || s.Certificate == nil || s.Certificate.ID == nil {
			continue
		}
		if c := byID[*s.Certificate.ID]; c != nil {
			out[*s.Name] = c
		}
	}
	return out
}

// certificateFor picks the certificate for a TLS handshake as Kong does: the SNI's own, else a
// wildcard's ("*.example.com", "example.*"), else the one of the SNI "*" (Kong's DEFAULT_SNI,
// kong/runloop/certificate.lua find_certificate), else the node's default certificate.
func (p *Proxy) certificateFor(hello *tls.ClientHelloInfo, fallback *tls.Certificate) (*tls.Certificate, error) {
	certs := p.state().certs
	name := strings.ToLower(hello.ServerName)
	if c := certs[name]; c != nil {
		return c, nil
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		if c := certs["*"+name[i:]]; c != nil {
			return c, nil
		}
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		if c := certs[name[:i]+".*"]; c != nil {
			return c, nil
		}
	}
	if c := certs["*"]; c != nil {
		return c, nil
	}
	return fallback, nil
}

// ProxyServer serves a Proxy on a plain HTTP listener (HTTP/1.1 and HTTP/2 without TLS) and an
// HTTPS one (HTTP/1.1 and HTTP/2, certificates by SNI from the configuration).
type ProxyServer struct {
	*Proxy
	// URL and TLSURL are the listeners' base URLs; MoreURLs those of ProxyListen.MoreAddrs, in
	// their order.
	URL, TLSURL string
	MoreURLs    []string
	// DefaultCertPEM is the certificate served to a name no configured certificate has.
	DefaultCertPEM []byte
	servers        []*http.Server
}

// ProxyListen says where a ProxyServer listens ("127.0.0.1:0" when empty). MoreAddrs are
// more plain listens, as a Kong's proxy_listen may have several: the router sees each
// request's port as the listen's (net.dst.port).
type ProxyListen struct {
	Addr, TLSAddr string
	MoreAddrs     []string
}

// Start serves the proxy on loopback ports (or the addresses given).
func (p *Proxy) Start(listen ProxyListen) (*ProxyServer, error) {
	if listen.Addr == "" {
		listen.Addr = "127.0.0.1:0"
	}
	if listen.TLSAddr == "" {
		listen.TLSAddr = "127.0.0.1:0"
	}
	ps := &ProxyServer{Proxy: p}
	plain, err := net.Listen("tcp", listen.Addr)
	if err != nil {
		return nil, err
	}
	secure, err := net.Listen("tcp", listen.TLSAddr)
	if err != nil {
		plain.Close()
		return nil, err
	}
	var more []net.Listener
	closeAll := func() {
		plain.Close()
		secure.Close()
		for _, l := range more {
			l.Close()
		}
	}
	for _, a := range listen.MoreAddrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			closeAll()
			return nil, err
		}
		more = append(more, l)
	}
	def, pemBytes, err := selfSigned()
	if err != nil {
		closeAll()
		return nil, err
	}
	ps.DefaultCertPEM = pemBytes
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	plainSrv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, Protocols: protocols}
	tlsProtocols := new(http.Protocols)
	tlsProtocols.SetHTTP1(true)
	tlsProtocols.SetHTTP2(true)
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) { return p.certificateFor(hello, &def) }}
	tlsSrv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, Protocols: tlsProtocols, TLSConfig: tlsConfig}
	ps.servers = []*http.Server{plainSrv, tlsSrv}
	ps.URL = "http://" + plain.Addr().String()
	ps.TLSURL = "https://" + secure.Addr().String()
	go func() { _ = plainSrv.Serve(plain) }()
	go func() { _ = tlsSrv.Serve(tls.NewListener(secure, tlsConfig)) }()
	for _, l := range more {
		ps.MoreURLs = append(ps.MoreURLs, "http://"+l.Addr().String())
		go func() { _ = plainSrv.Serve(l) }()
	}
	return ps, nil
}

// Close stops the listeners at once.
func (ps *ProxyServer) Close() error {
	for _, s := range ps.servers {
		_ = s.Close()
	}
	return nil
}

// Shutdown stops the listeners gracefully.
func (ps *ProxyServer) Shutdown(ctx context.Context) error {
	for _, s := range ps.servers {
		_ = s.Shutdown(ctx)
	}
	return nil
}
