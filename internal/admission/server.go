package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
)

// maxReviewBytes bounds a request body: an AdmissionReview holds the object twice (object
// and oldObject), and etcd's default limit on one object is 1.5 MiB.
const maxReviewBytes = 8 << 20

// Handler serves AdmissionReviews on every path (KIC's webhook configurations use "/"). Both
// admission.k8s.io/v1 and v1beta1 are answered, each in its own version: the two have the
// same fields, and KIC's Helm chart still asks for v1beta1.
func Handler(v *Validator, log logr.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
		if err != nil || len(body) > maxReviewBytes {
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
	ln, err := net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("--admission-webhook-listen: %w", err)
	}
	shutdown := 5 * time.Second
	s.HTTP = &ctrlmanager.Server{
		Name:            "admission-webhook",
		Server:          &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg},
		Listener:        tls.NewListener(ln, tlsCfg),
		ShutdownTimeout: &shutdown,
	}
	return s, nil
}

// Addr is the address the server listens on (with the port chosen when it was ":0").
func (s *Server) Addr() net.Addr { return s.HTTP.Listener.Addr() }
