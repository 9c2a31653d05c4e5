package kongemu

// The Konnect control-plane emulator.
//
// Konnect is not emulated from Konnect itself: there is no network here and Konnect's
// sources are not public. It is made from its clients, read out of KIC's sources
// (internal/adminapi/konnect.go, internal/konnect/nodes, internal/konnect/license) and out
// of go-database-reconciler v1.31.6 and go-kong v0.78.0 in Konnect mode (dump.Config
// KonnectControlPlane, diff.SyncerOpts IsKonnect, pkg/konnect): it answers what those
// clients send with what they read, and anything they do not look at is a guess.
//
//   - Authentication is mTLS only: a TLS client certificate signed by a CA of
//     KonnectOptions.ClientCAs (Start refuses the handshake without one; ServeHTTP answers
//     401 to a TLS request without a verified one). No token, no workspace.
//   - Core entities: everything under /kic/api/control-planes/{cp}/ that is not /v1/... or
//     GET /targets is the Kong Admin API of one database-mode (postgres) Enterprise Emulator
//     per control plane, with the prefix stripped (ControlPlane).
//   - Konnect-only paths under a control plane: GET /targets (every upstream's targets),
//     GET /v1/schemas/json/{entity} (JSON Schemas with the emulator's defaults,
//     konnect_schemas.go),
//     /v1/consumer-groups[/{id}[/members|/rate-limiting-advanced-config]] and
//     /v1/consumers/{c}/groups/{g}/members (go-database-reconciler's consumer group
//     writes, answered {"item": ...}), /v1/kic-nodes[/{id}] (KIC's node agent) and
//     GET /v1/licenses (KIC's license agent).
//   - Faults (SetDown, SetDelay, SetFailing) hit every path, and KonnectServer.SetDown
//     refuses connections; the per-control-plane Emulators keep their own faults.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// KonnectOptions configure a Konnect emulator.
type KonnectOptions struct {
	// ControlPlaneIDs are the control planes served (default one random UUID).
	ControlPlaneIDs []string
	// ClientCAs verify the clients' TLS certificates. Nil: NewKonnect makes a CA and a
	// client certificate signed by it (Konnect.ClientCert).
	ClientCAs *x509.CertPool
	// Now is the clock of timestamps (default time.Now), also the control planes'.
	Now func() time.Time
	// NodesPageSize is the page size of GET /v1/kic-nodes when the request gives no
	// page.size (default 100).
	NodesPageSize int
	// Version is the Kong version the control planes' Admin API reports on GET / (default
	// the Emulator's).
	Version string
	// Seed makes the control planes' fractional faults deterministic (default 1).
	Seed uint64
}

// Konnect emulates the Konnect control-plane API KIC talks to (see the comment at the top
// of konnect.go). It is an http.Handler; Start serves it over mutual TLS.
type Konnect struct {
	opts   KonnectOptions
	client *KonnectClientCert // made when KonnectOptions.ClientCAs is nil

	cps   map[string]*konnectCP
	order []string

	mu      sync.Mutex
	down    bool
	delay   time.Duration
	failing int
	log     []KonnectRequest
}

// konnectCP is one control plane. Its fields but emu are guarded by Konnect.mu.
type konnectCP struct {
	id      string
	emu     *Emulator
	nodes   map[string]*konnectNode
	nodeSeq int
	license *KonnectLicense
	rla     map[string]map[string]any // consumer group id -> rate-limiting-advanced config item
}

// KonnectRequest is one request Konnect received.
type KonnectRequest struct {
	Time         time.Time
	Method       string
	Path         string // the full path, /kic/api/control-planes/{cp}/...
	ControlPlane string // "" when the path names no control plane
	Rel          string // the path under the control plane ("/services/x", "/v1/kic-nodes")
	Status       int    // 0: the connection was closed without an answer
}

// NewKonnect returns a Konnect emulator. It panics if it cannot make the client
// certificate (KonnectOptions.ClientCAs nil), which only a broken crypto/rand does.
func NewKonnect(opts KonnectOptions) *Konnect {
	if len(opts.ControlPlaneIDs) == 0 {
		opts.ControlPlaneIDs = []string{uuid.NewString()}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NodesPageSize <= 0 {
		opts.NodesPageSize = 100
	}
	k := &Konnect{opts: opts, cps: map[string]*konnectCP{}}
	if opts.ClientCAs == nil {
		cc, err := NewKonnectClientCert()
		if err != nil {
			panic(fmt.Sprintf("kongemu: making the Konnect client certificate: %v", err))
		}
		k.client = cc
		k.opts.ClientCAs = cc.CAPool
	}
	for _, id := range opts.ControlPlaneIDs {
		if _, dup := k.cps[id]; dup {
			continue
		}
		emu := New(Options{Mode: Postgres, Edition: Enterprise, Version: opts.Version, Now: opts.Now, Seed: opts.Seed,
			Hostname: "konnect-" + id})
		k.cps[id] = &konnectCP{id: id, emu: emu, nodes: map[string]*konnectNode{}, rla: map[string]map[string]any{}}
		k.order = append(k.order, id)
	}
	return k
}

// ControlPlaneIDs returns the control planes' ids, in the order of the options.
func (k *Konnect) ControlPlaneIDs() []string { return append([]string(nil), k.order...) }

// ControlPlane returns the Admin API emulator holding control plane id's core entities
// (nil for an unknown id): read them with its Entities, Entity and Audit.
func (k *Konnect) ControlPlane(id string) *Emulator {
	if cp := k.cps[id]; cp != nil {
		return cp.emu
	}
	return nil
}

// ClientCert returns the client certificate NewKonnect made (nil when KonnectOptions gave
// ClientCAs).
func (k *Konnect) ClientCert() *KonnectClientCert { return k.client }

// KonnectControlPlanePath is the path prefix of a control plane: KIC's Konnect clients
// append their endpoints to <address> + this.
func KonnectControlPlanePath(id string) string { return "/kic/api/control-planes/" + id }

// SetDown makes every request end with the connection closed and no answer (down true)
// or be served again (false). KonnectServer.SetDown refuses connections instead.
func (k *Konnect) SetDown(down bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down = down
}

// SetDelay delays every request by d before it is served or failed (0: no delay).
func (k *Konnect) SetDelay(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.delay = d
}

// SetFailing makes every request answer status (a 5xx, or 429 with Retry-After: 1) with a
// JSON message; 0 serves requests again.
func (k *Konnect) SetFailing(status int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failing = status
}

// Requests returns every request received so far, in order (faulted ones included).
func (k *Konnect) Requests() []KonnectRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]KonnectRequest(nil), k.log...)
}

// RequestCount counts the requests whose method matches (empty: any) and whose path under
// its control plane (KonnectRequest.Rel) starts with relPrefix.
func (k *Konnect) RequestCount(method, relPrefix string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, r := range k.log {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Rel, relPrefix) {
			n++
		}
	}
	return n
}

// ResetRequests empties the request log.
func (k *Konnect) ResetRequests() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log = nil
}

// statusWriter keeps the status written, and lets the control planes' Drop fault hijack.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("not hijackable")
	}
	return hj.Hijack()
}

// ServeHTTP implements http.Handler.
func (k *Konnect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	entry := KonnectRequest{Time: k.opts.Now(), Method: r.Method, Path: r.URL.Path}
	cpid, rel, isCP := splitKonnectPath(r.URL.Path)
	if isCP {
		entry.ControlPlane, entry.Rel = cpid, rel
	}
	defer func() {
		entry.Status = sw.status
		k.mu.Lock()
		k.log = append(k.log, entry)
		k.mu.Unlock()
	}()

	k.mu.Lock()
	down, delay, failing := k.down, k.delay, k.failing
	k.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if down {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if failing != 0 {
		if failing == http.StatusTooManyRequests {
			sw.Header().Set("Retry-After", "1")
		}
		writeJSON(sw, failing, map[string]any{"message": http.StatusText(failing)})
		return
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) == 0 {
		writeJSON(sw, http.StatusUnauthorized, map[string]any{"message": "Unauthorized: a client certificate is required"})
		return
	}
	if !isCP {
		writeJSON(sw, http.StatusNotFound, map[string]any{"message": "Not found"})
		return
	}
	cp := k.cps[cpid]
	if cp == nil {
		writeJSON(sw, http.StatusNotFound, map[string]any{"message": fmt.Sprintf("control plane %q not found", cpid)})
		return
	}
	k.serveCP(sw, r, cp, rel)
}

// splitKonnectPath splits /kic/api/control-planes/{cp}/rest into cp and /rest.
func splitKonnectPath(p string) (cpid, rel string, ok bool) {
	const prefix = "/kic/api/control-planes/"
	if !strings.HasPrefix(p, prefix) {
		return "", "", false
	}
	rest := p[len(prefix):]
	cpid, rel, _ = strings.Cut(rest, "/")
	if cpid == "" {
		return "", "", false
	}
	return cpid, "/" + rel, true
}

// serveCP routes a request of control plane cp; rel is its path under the control plane.
func (k *Konnect) serveCP(w http.ResponseWriter, r *http.Request, cp *konnectCP, rel string) {
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	switch {
	case segs[0] == "v1":
		k.serveV1(w, r, cp, segs[1:])
	case len(segs) == 1 && segs[0] == "targets":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeErr(w, methodNotAllowed)
			return
		}
		cp.emu.listAllTargets(w, r)
	default:
		cp.emu.ServeHTTP(w, withPath(r, rel))
	}
}

// withPath is r with another path (and no raw path), as http.StripPrefix makes it.
func withPath(r *http.Request, p string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := new(url.URL)
	*u = *r.URL
	u.Path, u.RawPath = p, ""
	r2.URL = u
	r2.RequestURI = u.RequestURI()
	return r2
}

// listAllTargets serves Konnect's GET /targets: the targets of every upstream, paginated
// as any list (tags honoured).
func (e *Emulator) listAllTargets(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.total++
	e.requests[r.Method+" /targets"]++
	tags, or, aerr := parseTags(r.URL.Query())
	buf := &bufferedAnswer{header: w.Header()}
	if aerr != nil {
		writeErr(buf, aerr)
	} else {
		s := schemas["targets"]
		var ids []string
		if tags != nil {
			ids = e.db.taggedIDs(s.Name, tags, or)
		} else {
			ids = e.db.sortedIDs(s.Name)
		}
		e.paginateFunc(buf, r, "/targets", len(ids), func(i int) []byte {
			return e.db.renderJSON(s, e.db.ents[s.Name][ids[i]])
		})
	}
	e.mu.Unlock()
	buf.writeTo(w)
}

// innerCall serves a request to the control plane's Admin API emulator in-process and
// returns its answer (status, body).
func innerCall(ctx context.Context, e *Emulator, method, path string, body []byte) (int, []byte) {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return http.StatusBadRequest, marshalJSON(map[string]any{"message": err.Error()})
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &bufferedAnswer{header: http.Header{}}
	e.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.status, rec.body
}

// KonnectClientCert is a CA and a client certificate it signed, for Konnect's mTLS.
type KonnectClientCert struct {
	// CAPool holds the CA, for KonnectOptions.ClientCAs.
	CAPool *x509.CertPool
	CAPEM  []byte
	// Certificate is the client's key pair, for tls.Config.Certificates.
	Certificate     tls.Certificate
	CertPEM, KeyPEM []byte
}

// NewKonnectClientCert makes a CA and a client certificate (ECDSA P-256, one year) signed
// by it.
func NewKonnectClientCert() (*KonnectClientCert, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "kongemu Konnect client CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * 365 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + 1),
		Subject:      pkix.Name{CommonName: "konductor"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * 365 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &KonnectClientCert{
		CAPool:      pool,
		CAPEM:       pemEncode("CERTIFICATE", caDER),
		Certificate: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		CertPEM:     pemEncode("CERTIFICATE", der),
		KeyPEM:      pemEncode("PRIVATE KEY", keyDER),
	}, nil
}

// KonnectServer is a Konnect emulator served over mutual TLS on a loopback port.
type KonnectServer struct {
	*Konnect
	// URL is the base URL, e.g. "https://127.0.0.1:34567" (KIC's --konnect-address).
	URL string
	// CertPEM is the server's self-signed certificate, for clients to trust.
	CertPEM []byte

	srv    *http.Server
	tlsCfg *tls.Config
	addr   string

	lmu     sync.Mutex
	ln      net.Listener // nil while down
	conns   map[net.Conn]struct{}
	closed  bool
	serving sync.WaitGroup
}

// Start serves k over mutual TLS on 127.0.0.1 (a free port). Close the server when done.
func (k *Konnect) Start() (*KonnectServer, error) { return k.StartOn("127.0.0.1:0") }

// StartOn serves k over mutual TLS on addr.
func (k *Konnect) StartOn(addr string) (*KonnectServer, error) {
	cert, certPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &KonnectServer{Konnect: k, CertPEM: certPEM, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	s.tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: k.opts.ClientCAs}
	s.srv = &http.Server{Handler: k, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0), // handshakes refused for want of a client certificate
		ConnState: func(c net.Conn, st http.ConnState) {
			s.lmu.Lock()
			defer s.lmu.Unlock()
			switch st {
			case http.StateNew:
				s.conns[c] = struct{}{}
			case http.StateClosed, http.StateHijacked:
				delete(s.conns, c)
			}
		}}
	s.URL = "https://" + s.addr
	s.serve(ln)
	return s, nil
}

// serve serves ln. Caller does not hold lmu.
func (s *KonnectServer) serve(ln net.Listener) {
	tl := tls.NewListener(ln, s.tlsCfg)
	s.lmu.Lock()
	s.ln = tl
	s.lmu.Unlock()
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		_ = s.srv.Serve(tl)
	}()
}

// SetDown stops listening and closes every open connection, so that connections are
// refused (down true), or listens again on the same address (false). It also sets
// Konnect.SetDown, so that a request already read is not answered.
func (s *KonnectServer) SetDown(down bool) error {
	s.Konnect.SetDown(down)
	s.lmu.Lock()
	if s.closed {
		s.lmu.Unlock()
		return errors.New("kongemu: Konnect server closed")
	}
	if down {
		ln := s.ln
		s.ln = nil
		conns := make([]net.Conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.lmu.Unlock()
		if ln != nil {
			_ = ln.Close()
		}
		for _, c := range conns {
			_ = c.Close()
		}
		return nil
	}
	up := s.ln != nil
	s.lmu.Unlock()
	if up {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("kongemu: listening again on %s: %w", s.addr, err)
	}
	s.serve(ln)
	return nil
}

// ControlPlaneURL is the base URL of control plane id, as KIC's Konnect clients make it
// (go-kong's base URL for the core entities).
func (s *KonnectServer) ControlPlaneURL(id string) string { return s.URL + KonnectControlPlanePath(id) }

// Client returns an HTTP client that trusts the server and presents cert (the client
// certificate NewKonnect made when cert is nil; none if it made none).
func (s *KonnectServer) Client(cert *tls.Certificate) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.CertPEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert == nil && s.client != nil {
		cert = &s.client.Certificate
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Close stops the server at once.
func (s *KonnectServer) Close() error {
	s.lmu.Lock()
	s.closed = true
	s.lmu.Unlock()
	err := s.srv.Close()
	s.serving.Wait()
	return err
}

// Shutdown stops the server gracefully.
func (s *KonnectServer) Shutdown(ctx context.Context) error {
	s.lmu.Lock()
	s.closed = true
	s.lmu.Unlock()
	return s.srv.Shutdown(ctx)
}
