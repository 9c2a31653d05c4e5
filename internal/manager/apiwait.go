package manager

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Waiting for the API server at start (KIC #4207, #4618): assembling the controller asks the
// API server which CRDs it serves, so a controller started while the server is away (a
// control plane restarting, a node whose network is not up yet) used to exit at once, and
// Kubernetes restarted it on CrashLoopBackOff's growing delays. It now waits instead: it says
// so in its log at every attempt, konductor_kubernetes_api_reachable reads 0, /healthz answers
// (the process is alive: no restart helps) and /readyz does not (it has configured nothing).
// Nothing is sent to Kong meanwhile: the sync loop does not exist yet, and once it does it
// waits for the cache to sync (the barrier, invariant 2) like any start.
//
// The server can answer /readyz and be gone a moment later. Every later step of the start that
// asks it something before the manager runs (discovery of the optional kinds, the REST mappings
// of the kinds read, the CRDs' list) waits for it the same way (startStep), and a discovery
// that failed is never read as "CRD not installed" (servedResources): that would drop a kind and
// read as no objects.

// apiWaitBackoff is the first and the longest pause between two attempts to reach the API
// server at start: doubling from the first to the longest, so a server that is back is seen
// within apiWaitBackoff.max.
var apiWaitBackoff = struct{ first, max time.Duration }{250 * time.Millisecond, 5 * time.Second}

// startEndpoints are the addresses the manager will serve its probes and metrics on, served
// by waitUntilServing while it waits ("0" or "": not served).
type startEndpoints struct {
	healthProbe, metrics string
}

// waitUntilServing returns once the API server answers the probe, at once when it does at the
// first attempt. Until then it retries as startStep does, whatever the probe's error.
func (h *apiHealth) waitUntilServing(ctx context.Context, ep startEndpoints) error {
	return h.retryAtStart(ctx, ep, "probe /readyz", func() error { return h.probeOnce(ctx) }, func(error) bool { return true })
}

// startStep runs step, one of the start's requests to the API server before the manager runs
// (discovery, the informers' REST mappings, the CRDs' list), again and again while it fails
// because the API server is away (apiServerAway): the server can answer /readyz and be gone
// a moment later. Any other error is returned as it is.
func (h *apiHealth) startStep(ctx context.Context, ep startEndpoints, name string, step func() error) error {
	return h.retryAtStart(ctx, ep, name, step, apiServerAway)
}

// retryAtStart runs step until it succeeds or fails with an error retry does not accept. While
// it is retried it backs off, logs each failed attempt, reads as down in the metrics, and
// serves /healthz (ok), /readyz (not ready) and /metrics on the addresses of ep, which it
// frees before it returns (the manager listens on them next). It returns ctx's error when ctx
// ends first.
func (h *apiHealth) retryAtStart(ctx context.Context, ep startEndpoints, name string, step func() error, retry func(error) bool) error {
	err := step()
	if err == nil || !retry(err) {
		return err
	}
	started := time.Now()
	h.mu.Lock()
	h.down, h.downSince = true, started
	h.mu.Unlock()
	stopServing := serveWhileWaiting(ep, h)
	defer stopServing()

	delay := apiWaitBackoff.first
	for attempt := 1; ; attempt++ {
		h.log.Error(err, "Kubernetes API server unreachable at start: waiting for it (nothing is sent to Kong before the cache has synced); /readyz reports not ready meanwhile",
			"step", name, "attempt", attempt, "nextAttemptIn", delay.String(), "waiting", time.Since(started).Round(time.Millisecond).String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if err = step(); err == nil {
			break
		}
		if !retry(err) {
			h.mu.Lock()
			h.down = false
			h.mu.Unlock()
			return err
		}
		if delay *= 2; delay > apiWaitBackoff.max {
			delay = apiWaitBackoff.max
		}
	}
	h.mu.Lock()
	h.down = false
	h.mu.Unlock()
	h.log.Info("Kubernetes API server answers; starting", "step", name, "waited", time.Since(started).Round(time.Millisecond).String())
	return nil
}

// apiServerAway tells an error of the API server's absence (no answer: connection refused or
// reset, a timeout; or an answer that it cannot serve now: 5xx, 429) from one that trying
// again does not change (a kind not served, RBAC, a bad request).
func apiServerAway(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests ||
			apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

func (h *apiHealth) probeOnce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return h.probe(ctx)
}

// errWaitingForAPIServer is /readyz's answer while the controller waits for the API server.
var errWaitingForAPIServer = errors.New("waiting for the Kubernetes API server to answer: nothing configured yet")

// serveWhileWaiting serves the probes and the metrics on ep's addresses until the returned
// function is called, which closes the listeners. An address it cannot listen on is logged
// and left (the manager then reports it, as it would have).
func serveWhileWaiting(ep startEndpoints, h *apiHealth) (stop func()) {
	var servers []*http.Server
	serve := func(addr string, mux *http.ServeMux) {
		if addr == "" || addr == "0" {
			return
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			h.log.Error(err, "cannot serve probes and metrics while waiting for the Kubernetes API server", "address", addr)
			return
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(l) }()
	}
	probes := http.NewServeMux()
	probes.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	probes.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, errWaitingForAPIServer.Error(), http.StatusServiceUnavailable)
	})
	serve(ep.healthProbe, probes)
	m := http.NewServeMux()
	m.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	serve(ep.metrics, m)
	return func() {
		for _, srv := range servers {
			_ = srv.Close()
		}
	}
}
