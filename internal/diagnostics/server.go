package diagnostics

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/redact"
)

// Options configures a Server.
type Options struct {
	// Port is the port it listens on, on every address (KIC's ":<port>"); 0 picks a free one.
	Port int
	// DumpConfig serves /debug/config/* (--dump-config); DumpSensitiveConfig shows secrets
	// in them unmasked (--dump-sensitive-config).
	DumpConfig          bool
	DumpSensitiveConfig bool
	// Profiling are the /debug/pprof/ handlers by path (--profiling); nil serves none.
	Profiling map[string]http.Handler
	// Graph answers /debug/graph?kind=&namespace=&name=: where one object stands (who refers
	// to it, whether its payload is loaded, the last translation that read it); nil serves
	// no /debug/graph. An error is the query's (an unknown kind).
	Graph  func(r *http.Request, kind, namespace, name string) (any, error)
	Logger logr.Logger
}

// Server is the diagnostics server: a manager Runnable that runs on every replica.
type Server struct {
	opts     Options
	recorder *Recorder // nil without DumpConfig
	handler  http.Handler

	mu   sync.Mutex
	addr net.Addr
}

// readHeaderTimeout is KIC's: a client that never finishes its headers is dropped.
const readHeaderTimeout = 10 * time.Second

// New returns the diagnostics server of opts.
func New(opts Options) *Server {
	s := &Server{opts: opts}
	mux := http.NewServeMux()
	if opts.DumpConfig {
		s.recorder = &Recorder{}
		mux.HandleFunc("/debug/config/successful", s.serveSucceeded)
		mux.HandleFunc("/debug/config/failed", s.serveFailed)
		mux.HandleFunc("/debug/config/fallback", s.serveFallback)
		mux.HandleFunc("/debug/config/raw-error", s.serveRawError)
		mux.HandleFunc("/debug/config/diff-report", s.serveDiffReport)
	}
	for path, h := range opts.Profiling {
		mux.Handle(path, h)
	}
	if opts.Graph != nil {
		mux.HandleFunc("/debug/graph", s.serveGraph)
	}
	s.handler = mux
	return s
}

// Diagnostics is what the sync loop tells (dataplane.Options.Diagnostics): nil without
// DumpConfig, so that the loop keeps nothing.
func (s *Server) Diagnostics() dataplane.Diagnostics {
	if s.recorder == nil {
		return nil
	}
	return s.recorder
}

// Handler serves the server's endpoints.
func (s *Server) Handler() http.Handler { return s.handler }

// NeedLeaderElection is false: a standby serves its profile, and 204 for the dumps.
func (s *Server) NeedLeaderElection() bool { return false }

// Addr is the address the server listens on once Start listened; nil before.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start serves until ctx ends. A server that cannot listen or stops serving is logged and
// the controller goes on, as KIC's does: a debugging aid taken away (its port in use) is no
// reason to stop syncing Kong.
func (s *Server) Start(ctx context.Context) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", fmt.Sprintf(":%d", s.opts.Port))
	if err != nil {
		s.opts.Logger.Error(err, "diagnostics server not started")
		return nil
	}
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: readHeaderTimeout}
	s.opts.Logger.Info("diagnostics server listening", "address", ln.Addr().String(),
		"dumpConfig", s.opts.DumpConfig, "dumpSensitiveConfig", s.opts.DumpSensitiveConfig, "profiling", s.opts.Profiling != nil)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		s.opts.Logger.Error(err, "diagnostics server stopped")
		return nil
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
}

func (s *Server) serveSucceeded(w http.ResponseWriter, _ *http.Request) {
	s.serveDump(w, s.recorder.read().succeeded)
}

func (s *Server) serveFailed(w http.ResponseWriter, _ *http.Request) {
	s.serveDump(w, s.recorder.read().failed)
}

// serveDump writes KIC's {"hash": ..., "config": ...} of t, 204 when there is none. The
// hash is the SHA-256 of the configuration as sent (secrets included, so that a dump names
// the configuration whether or not it shows them), hex.
func (s *Server) serveDump(w http.ResponseWriter, t *dataplane.Target) {
	if t == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	config, err := t.SentConfig()
	if err != nil {
		http.Error(w, "rendering the configuration: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(config)
	if !s.opts.DumpSensitiveConfig {
		config = t.Redactor().JSON(config)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"hash":%q,"config":`, hex.EncodeToString(sum[:]))
	_, _ = w.Write(config)
	_, _ = w.Write([]byte("}\n"))
}

// serveRawError writes the body of the last refusal as Kong sent it (text/plain), secrets
// masked with those of the refused configuration: Kong's flattened errors quote the
// entities they are about, credentials and keys included.
func (s *Server) serveRawError(w http.ResponseWriter, _ *http.Request) {
	rec := s.recorder.read()
	if len(rec.rawError) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	raw := rec.rawError
	if !s.opts.DumpSensitiveConfig {
		var r *redact.Redactor
		if rec.failed != nil {
			r = rec.failed.Redactor()
		}
		raw = r.JSON(raw)
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(raw)
}

// fallbackResponse is KIC's FallbackResponse.
type fallbackResponse struct {
	Status            string           `json:"status"`
	BrokenObjects     []fallbackObject `json:"brokenObjects,omitempty"`
	ExcludedObjects   []fallbackObject `json:"excludedObjects,omitempty"`
	BackfilledObjects []fallbackObject `json:"backfilledObjects,omitempty"`
}

// fallbackObject is KIC's FallbackAffectedObjectMeta, without its causingObjects: the
// loop does not say which broken object took which dependent out.
type fallbackObject struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Version   string `json:"version,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	ID        string `json:"id"`
}

func fallbackObjects(refs []kongstate.ObjectRef) []fallbackObject {
	out := make([]fallbackObject, 0, len(refs))
	for _, r := range refs {
		out = append(out, fallbackObject{Group: r.Group, Kind: r.Kind, Version: r.Version, Namespace: r.Namespace, Name: r.Name, ID: r.UID})
	}
	return out
}

func (s *Server) serveFallback(w http.ResponseWriter, _ *http.Request) {
	resp := fallbackResponse{Status: "not-triggered"}
	if fb := s.recorder.read().fallback; fb != nil {
		resp = fallbackResponse{Status: "triggered", BrokenObjects: fallbackObjects(fb.Broken),
			ExcludedObjects: fallbackObjects(fb.Excluded), BackfilledObjects: fallbackObjects(fb.Backfilled)}
	}
	writeJSON(w, http.StatusOK, resp)
}

// diffResponse is KIC's DiffResponse, as far as it is filled here.
type diffResponse struct {
	Message string `json:"message,omitempty"`
	Hash    string `json:"hash"`
	// Timestamp, Diffs and Available are KIC's fields of a diff; none is recorded.
	Timestamp string            `json:"timestamp"`
	Diffs     []json.RawMessage `json:"diffs"`
	Available []json.RawMessage `json:"available"`
}

// serveDiffReport answers as KIC does before it has a diff: without DumpSensitiveConfig,
// KIC's message (diffs show secrets; KIC writes it with status 200: its 404 comes after the
// body); with it, "no diffs available". konductor's database mode does not record the diffs
// of its syncs for this endpoint.
func (s *Server) serveDiffReport(w http.ResponseWriter, _ *http.Request) {
	msg := "no diffs available"
	if !s.opts.DumpSensitiveConfig {
		msg = "diffs include sensitive data: set CONTROLLER_DUMP_SENSITIVE_CONFIG=true in environment to enable"
	}
	writeJSON(w, http.StatusOK, diffResponse{Message: msg})
}

// serveGraph is /debug/graph?kind=Secret&namespace=default&name=x (docs/troubleshooting.md,
// "A change did not reach Kong").
func (s *Server) serveGraph(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, ns, name := q.Get("kind"), q.Get("namespace"), q.Get("name")
	if kind == "" || name == "" {
		http.Error(w, "/debug/graph needs kind and name (and namespace for a namespaced kind): /debug/graph?kind=Secret&namespace=default&name=x", http.StatusBadRequest)
		return
	}
	answer, err := s.opts.Graph(r, kind, ns, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
