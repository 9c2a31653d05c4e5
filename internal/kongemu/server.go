package kongemu

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	rnd "math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/konductor/konductor/internal/kongrules"
)

// Mode is the storage mode the emulated Kong runs in.
type Mode string

const (
	// DBLess is Kong with database=off: configuration through POST /config only.
	DBLess Mode = "off"
	// Postgres is Kong with a database: configuration through entity CRUD.
	Postgres Mode = "postgres"
)

// Options configure an Emulator. The zero value is a DB-less Kong 3.10.0 (community
// edition, traditional_compatible router).
type Options struct {
	// Mode is DBLess (default) or Postgres.
	Mode Mode
	// Version reported by GET / (default "3.10.0").
	Version string
	// AdminToken, when set, must be sent in the Kong-Admin-Token header.
	AdminToken string
	// Seed makes fractional faults deterministic (default 1).
	Seed uint64
	// Now is the clock for timestamps and the audit log (default time.Now).
	Now func() time.Time
	// Hostname reported by GET / (default "kongemu").
	Hostname string
	// RouterFlavor reported by GET / (default RouterTraditionalCompatible). Under
	// RouterExpressions routes also take an ATC expression and a priority.
	RouterFlavor string
	// Edition is Community (default) or Enterprise. Only Kong Gateway Enterprise has
	// consumer groups (and consumer-group-scoped plugins) and the mtls-auth plugin.
	Edition Edition
	// ProxyListen and StreamListen are Kong's proxy_listen and stream_listen settings, one
	// listen each (default Kong's: "0.0.0.0:8000 reuseport backlog=16384" and
	// "0.0.0.0:8443 http2 ssl reuseport backlog=16384"; stream "off"). GET / reports them
	// parsed, as configuration.proxy_listeners and stream_listeners (listeners.go).
	ProxyListen, StreamListen []string
	// AuditConfigRoutes records, in the audit entry of each configuration a DB-less
	// emulator loads, the tags of its routes (AuditEntry.RouteTags): tests that must show a
	// route was never served, not only that it is not served now, read them.
	AuditConfigRoutes bool
	// AdminMaxBodySize is Kong's nginx_admin_client_max_body_size, in nginx's size syntax
	// (default kongrules.DefaultAdminMaxBodySize, "10m"; "0": no limit): a request with a
	// larger body is answered 413 with nginx's page before any handler runs, as Kong's admin
	// server does. GET / reports it.
	AdminMaxBodySize string
}

// Router flavors (Kong's router_flavor setting).
const (
	RouterTraditionalCompatible = "traditional_compatible"
	RouterExpressions           = "expressions"
)

// Edition is the Kong Gateway edition the emulator reports and behaves as.
type Edition string

// The editions.
const (
	Community  Edition = "community"
	Enterprise Edition = "enterprise"
)

// Emulator is an in-memory emulation of Kong's Admin API. It is an http.Handler.
type Emulator struct {
	opts    Options
	maxBody int64 // opts.AdminMaxBodySize in bytes, 0 for none
	prof    profile
	nodeID  string

	mu         sync.Mutex
	db         *db
	configHash string // DB-less: md5 hex of the loaded config, or 32 zeros
	rawConfig  map[string]any
	audit      []AuditEntry
	requests   map[string]int
	total      int
	faults     []*faultRule
	faultHits  []FaultHit
	rejectNext []ConfigRejection
	rng        *rnd.Rand
	// workspaces by name (Enterprise only; nil for Kong OSS), default included
	// (workspaces.go); outside is the default workspace's store while e.db is another's.
	workspaces map[string]*workspace
	outside    *db
}

const emptyHash = "00000000000000000000000000000000"

// New returns an Emulator with the given options.
func New(opts Options) *Emulator {
	if opts.Mode == "" {
		opts.Mode = DBLess
	}
	if opts.Version == "" {
		opts.Version = "3.10.0"
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Hostname == "" {
		opts.Hostname = "kongemu"
	}
	if opts.ProxyListen == nil {
		opts.ProxyListen = []string{"0.0.0.0:8000 reuseport backlog=16384", "0.0.0.0:8443 http2 ssl reuseport backlog=16384"}
	}
	if opts.StreamListen == nil {
		opts.StreamListen = []string{"off"}
	}
	if opts.RouterFlavor == "" {
		opts.RouterFlavor = RouterTraditionalCompatible
	}
	if opts.Edition == "" {
		opts.Edition = Community
	}
	maxBody, err := kongrules.ParseNginxSize(opts.AdminMaxBodySize)
	if err != nil { // unset or unreadable: Kong's default (Kong itself refuses to start)
		opts.AdminMaxBodySize = kongrules.DefaultAdminMaxBodySize
		maxBody, _ = kongrules.ParseNginxSize(opts.AdminMaxBodySize)
	}
	e := &Emulator{
		maxBody:    maxBody,
		opts:       opts,
		prof:       newProfile(opts),
		nodeID:     uuid.NewString(),
		db:         newDB(),
		configHash: emptyHash,
		requests:   map[string]int{},
		rng:        rnd.New(rnd.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
	}
	if opts.Edition == Enterprise {
		e.workspaces = e.newWorkspaces()
	}
	return e
}

// Mode reports the emulator's storage mode.
func (e *Emulator) Mode() Mode { return e.opts.Mode }

func (e *Emulator) dbless() bool { return e.opts.Mode == DBLess }

// ServeHTTP implements http.Handler.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.total++
	e.requests[r.Method+" "+r.URL.Path]++
	f := e.pickFault(r)
	e.mu.Unlock()

	w.Header().Set("Server", "kong/"+e.opts.Version)
	if e.tooLarge(w, r) {
		return
	}
	if e.opts.AdminToken != "" && r.Header.Get("Kong-Admin-Token") != e.opts.AdminToken {
		writeJSON(w, http.StatusUnauthorized, map[string]any{
			"message": "Invalid credentials. Token or User credentials required"})
		return
	}
	if f != nil {
		if done := e.applyFault(w, r, f); done {
			return
		}
	}
	e.route(w, r)
}

// tooLarge answers 413 to a request whose body is over the limit, as nginx does before Kong
// sees the request: at once when its Content-Length says so, else (a chunked body) once more
// than the limit was read. It reports whether it answered; the body of a request it lets
// through is then read from memory.
func (e *Emulator) tooLarge(w http.ResponseWriter, r *http.Request) bool {
	if e.maxBody <= 0 || r.Body == nil || r.Body == http.NoBody {
		return false
	}
	over := r.ContentLength > e.maxBody
	if !over && r.ContentLength < 0 {
		b, err := io.ReadAll(io.LimitReader(r.Body, e.maxBody+1))
		if err == nil {
			over = int64(len(b)) > e.maxBody
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
	}
	if !over {
		return false
	}
	// nginx closes the connection after this answer (the body is not read).
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = io.WriteString(w, kongrules.RequestEntityTooLargeBody)
	return true
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if body == nil {
		return
	}
	_, _ = w.Write(marshalJSON(body))
}

// writeJSONBytes writes body, already JSON, as writeJSON writes a value.
func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshalJSON is json.Marshal, with Kong's answer to an error of its own in case of failure.
func marshalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"message":"An unexpected error occurred"}`)
	}
	return b
}

func writeErr(w http.ResponseWriter, err *apiError) { writeJSON(w, err.Status, err.Body) }

var methodNotAllowed = msgErr(http.StatusMethodNotAllowed, "Method not allowed")

// route dispatches a request to the node, config, schema, tag or CRUD handlers, or, on
// Kong Gateway Enterprise, to a workspace's (workspaces.go).
func (e *Emulator) route(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	segs := []string{}
	if path != "" {
		segs = strings.Split(strings.TrimPrefix(path, "/"), "/")
	}
	if e.workspaces != nil && len(segs) > 0 && !topLevel(segs[0]) {
		e.routeWorkspace(w, r, segs)
		return
	}
	e.routeSegs(w, r, segs)
}

// routeSegs is route after the workspace prefix, if any.
func (e *Emulator) routeSegs(w http.ResponseWriter, r *http.Request, segs []string) {
	if len(segs) == 0 {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeErr(w, methodNotAllowed)
			return
		}
		writeJSON(w, http.StatusOK, e.info())
		return
	}
	switch segs[0] {
	case "status":
		if len(segs) != 1 {
			writeErr(w, errNotFound)
			return
		}
		if r.Method != http.MethodGet {
			writeErr(w, methodNotAllowed)
			return
		}
		writeJSON(w, http.StatusOK, e.status())
		return
	case "config":
		if len(segs) != 1 {
			writeErr(w, errNotFound)
			return
		}
		e.handleConfig(w, r)
		return
	case "schemas":
		e.handleSchemas(w, r, segs[1:])
		return
	case "tags":
		e.handleTags(w, r, segs[1:])
		return
	case "endpoints":
		e.handleEndpoints(w, r)
		return
	case "workspaces":
		if e.workspaces != nil {
			e.handleWorkspaces(w, r, nil, segs[1:]) // routeWorkspace serves /{ws}/workspaces
			return
		}
	}
	e.handleCRUD(w, r, segs)
}

// readBody reads a JSON object body. ok=false means a response was written.
func readBody(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeErr(w, msgErr(http.StatusBadRequest, "Cannot read body"))
		return nil, false
	}
	ct := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, true
	}
	if ct == "application/x-www-form-urlencoded" {
		m, err := formBody(string(raw))
		if err != nil {
			writeErr(w, msgErr(http.StatusBadRequest, "Cannot parse form body"))
			return nil, false
		}
		m[formMarker] = true
		return m, true
	}
	if ct != "" && ct != "application/json" {
		writeErr(w, msgErr(http.StatusUnsupportedMediaType, "Unsupported Media Type"))
		return nil, false
	}
	v, err := decodeJSON(raw)
	if err != nil {
		writeErr(w, msgErr(http.StatusBadRequest, "Cannot parse JSON body"))
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		writeErr(w, msgErr(http.StatusBadRequest, "Cannot parse JSON body"))
		return nil, false
	}
	return m, true
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

// formMarker flags a body that came form-encoded (values are strings).
const formMarker = "\x00form"

// Server is an Emulator served on a loopback port.
type Server struct {
	*Emulator
	// URL is the base URL, e.g. "http://127.0.0.1:34567".
	URL string
	// CertPEM is the server certificate (TLS only), for clients to trust.
	CertPEM []byte
	srv     *http.Server
	ln      net.Listener
}

// StartOptions configure Start.
type StartOptions struct {
	// Addr to listen on (default "127.0.0.1:0").
	Addr string
	// TLS serves HTTPS with a self-signed certificate generated in memory
	// unless Certificate is set.
	TLS         bool
	Certificate *tls.Certificate
}

// Start serves e on a loopback port (plain HTTP). Close the returned server when done.
func (e *Emulator) Start() (*Server, error) { return e.StartWith(StartOptions{}) }

// StartTLS serves e over HTTPS with a self-signed certificate.
func (e *Emulator) StartTLS() (*Server, error) { return e.StartWith(StartOptions{TLS: true}) }

// StartWith serves e as configured by so.
func (e *Emulator) StartWith(so StartOptions) (*Server, error) {
	addr := so.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Emulator: e, ln: ln, srv: &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}}
	scheme := "http"
	if so.TLS {
		cert := so.Certificate
		if cert == nil {
			c, pemBytes, err := selfSigned()
			if err != nil {
				ln.Close()
				return nil, err
			}
			cert = &c
			s.CertPEM = pemBytes
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})
		s.ln = ln
		scheme = "https"
	}
	s.URL = scheme + "://" + ln.Addr().String()
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server at once.
func (s *Server) Close() error { return s.srv.Close() }

// Shutdown stops the server gracefully.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// selfSigned makes an in-memory certificate for 127.0.0.1, ::1 and localhost.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "kongemu"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * 365 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pemBytes := pemEncode("CERTIFICATE", der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pemBytes, nil
}
