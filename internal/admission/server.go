package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/netutil"
	"golang.org/x/sync/semaphore"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
)

// maxReviewBytes bounds a request body: an AdmissionReview holds the object twice (object
// and oldObject), and etcd's default limit on one object is 1.5 MiB.
const maxReviewBytes = 8 << 20

// Bounds of the webhook server whoever calls it (docs/security.md, item 4): anyone who reaches
// its port can open connections and send bodies, so what they can hold is fixed.
const (
	// BodyBudget is the bytes of request bodies read and decoded at once, all connections
	// together: a body takes its Content-Length (maxReviewBytes when it has none) before it
	// is read, and gives it back when its answer is written. Four reviews of the largest
	// size; the API server's reviews are a few KiB.
	BodyBudget = 4 * maxReviewBytes
	// BodyWait is how long a request waits for its share of BodyBudget before it is answered
	// 503 (the API server then applies the webhook's failure policy).
	BodyWait = 5 * time.Second
	// MaxConnections is the connections the server holds open at once; more wait to be
	// accepted. The API server opens a few per replica.
	MaxConnections = 64
	// ReadTimeout bounds reading a whole request, headers and body (a connection that sends
	// slowly is closed); the API server's own deadline for a webhook call is 10 s by default
	// (timeoutSeconds, at most 30).
	ReadTimeout = 15 * time.Second
	// WriteTimeout bounds a request from the end of its headers to the end of its answer.
	WriteTimeout = 35 * time.Second
	// IdleTimeout closes a kept-alive connection no request came on.
	IdleTimeout = 60 * time.Second
)

// Handler serves AdmissionReviews on every path (KIC's webhook configurations use "/"). Both
// admission.k8s.io/v1 and v1beta1 are answered, each in its own version: the two have the
// same fields, and KIC's Helm chart still asks for v1beta1.
func Handler(v *Validator, log logr.Logger) http.Handler {
	return HandlerWithBudget(v, log, BodyBudget, BodyWait)
}

// HandlerWithBudget is Handler with a body budget in bytes and its wait instead of
// BodyBudget and BodyWait (tests make them small).
func HandlerWithBudget(v *Validator, log logr.Logger, budget int64, bodyWait time.Duration) http.Handler {
	bodies := semaphore.NewWeighted(budget)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
			return
		}
		if r.ContentLength > maxReviewBytes {
			http.Error(w, "the admission review is too large", http.StatusRequestEntityTooLarge)
			return
		}
		share := r.ContentLength
		if share < 0 {
			share = maxReviewBytes // chunked: as much as it may send
		}
		share = max(share, 1)
		wait, cancel := context.WithTimeout(r.Context(), bodyWait)
		err := bodies.Acquire(wait, share)
		cancel()
		if err != nil {
			http.Error(w, "the admission webhook is reading other reviews; try again", http.StatusServiceUnavailable)
			return
		}
		defer bodies.Release(share)
		body, err := io.ReadAll(io.LimitReader(r.Body, share+1))
		if err != nil || int64(len(body)) > share {
			http.Error(w, "cannot read the admission review", http.StatusBadRequest)
			return
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an admission review: %v", err), http.StatusBadRequest)
			return
		}
		req := review.Request
		resp := decide(r.Context(), v, req, log)
		out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
		if out.APIVersion == "" {
			out.APIVersion, out.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(&out); err != nil {
			log.Error(err, "writing the admission response")
		}
	})
}

// decide is Review, logged, with a panic turned into an allowed review: a defect in konductor
// must not block a user's write.
func decide(ctx context.Context, v *Validator, req *admissionv1.AdmissionRequest, log logr.Logger) (resp *admissionv1.AdmissionResponse) {
	start := time.Now()
	object := fmt.Sprintf("%s %s/%s", req.Resource.Resource, req.Namespace, req.Name)
	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("%v", p), "admission review panicked; allowed", "object", object)
			resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true,
				Warnings: []string{"konductor failed while checking this object; it was not checked"}}
		}
	}()
	resp = v.Review(ctx, req)
	if resp.Allowed {
		log.V(1).Info("admission review allowed", "object", object, "operation", req.Operation, "took", time.Since(start).String(), "warnings", len(resp.Warnings))
	} else {
		log.Info("admission review denied", "object", object, "operation", req.Operation, "reason", resp.Result.Message, "took", time.Since(start).String())
	}
	return resp
}

// ServerOptions are the webhook server's address and certificate (--admission-webhook-*).
type ServerOptions struct {
	ListenAddr        string
	CertFile, KeyFile string // watched: a renewed certificate is served without a restart
	Cert, Key         string // inline PEM, instead of the files
	// ReadTimeout and MaxConnections are the package's ReadTimeout and MaxConnections when 0
	// (tests make them small).
	ReadTimeout    time.Duration
	MaxConnections int
	// ClientCAFile, when set, is the CA bundle the API server's client certificate must
	// verify with; a connection without one is refused in the TLS handshake.
	ClientCAFile string
}

// Server is the HTTPS webhook server. Its address is bound and its certificate read when it
// is made, so that a wrong port or certificate stops the controller at start.
type Server struct {
	// HTTP is the runnable to add to the manager: not leader-only, started with the manager's
	// HTTP servers, before the cache has synced (reviews are then allowed with a warning).
	HTTP *ctrlmanager.Server
	// Certificates reloads the certificate files when they change; nil with inline PEM. Run
	// it for the life of the controller.
	Certificates *certwatcher.CertWatcher
}

// NewServer binds opts.ListenAddr and serves h there over TLS.
func NewServer(opts ServerOptions, h http.Handler) (*Server, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	s := &Server{}
	if opts.Cert != "" || opts.Key != "" {
		pair, err := tls.X509KeyPair([]byte(opts.Cert), []byte(opts.Key))
		if err != nil {
			return nil, fmt.Errorf("--admission-webhook-cert/--admission-webhook-key: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	} else {
		w, err := certwatcher.New(opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--admission-webhook-cert-file/--admission-webhook-key-file: %w", err)
		}
		tlsCfg.GetCertificate = w.GetCertificate
		s.Certificates = w
	}
	if opts.ClientCAFile != "" {
		pem, err := os.ReadFile(opts.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--admission-webhook-client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--admission-webhook-client-ca-file: %s holds no PEM certificate", opts.ClientCAFile)
		}
		// The API server authenticates to webhooks with a client certificate when its
		// AdmissionConfiguration's kubeconfig names one (Kubernetes: "Authenticate
		// apiservers"): then no one else can send a review.
		tlsCfg.ClientCAs, tlsCfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	ln, err := net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("--admission-webhook-listen: %w", err)
	}
	readTimeout, conns := opts.ReadTimeout, opts.MaxConnections
	if readTimeout <= 0 {
		readTimeout = ReadTimeout
	}
	if conns <= 0 {
		conns = MaxConnections
	}
	shutdown := 5 * time.Second
	s.HTTP = &ctrlmanager.Server{
		Name: "admission-webhook",
		Server: &http.Server{Handler: h, TLSConfig: tlsCfg, ReadHeaderTimeout: min(10*time.Second, readTimeout),
			ReadTimeout: readTimeout, WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: 64 << 10},
		// The TLS handshake happens on the first read, under ReadTimeout.
		Listener:        tls.NewListener(netutil.LimitListener(ln, conns), tlsCfg),
		ShutdownTimeout: &shutdown,
	}
	return s, nil
}

// Addr is the address the server listens on (with the port chosen when it was ":0").
func (s *Server) Addr() net.Addr { return s.HTTP.Listener.Addr() }
