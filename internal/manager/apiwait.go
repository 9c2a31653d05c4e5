package manager

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
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
// first attempt. Until then it retries with backoff, logs each failed attempt, reads as down
// in the metrics, and serves /healthz (ok), /readyz (not ready) and /metrics on the addresses
// of ep, which it frees before it returns (the manager listens on them next). It returns
// ctx's error when ctx ends first.
func (h *apiHealth) waitUntilServing(ctx context.Context, ep startEndpoints) error {
	err := h.probeOnce(ctx)
	if err == nil {
		return nil
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
			"attempt", attempt, "nextAttemptIn", delay.String(), "waiting", time.Since(started).Round(time.Millisecond).String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if err = h.probeOnce(ctx); err == nil {
			break
		}
		if delay *= 2; delay > apiWaitBackoff.max {
			delay = apiWaitBackoff.max
		}
	}
	h.mu.Lock()
	h.down = false
	h.mu.Unlock()
	h.log.Info("Kubernetes API server answers; starting", "waited", time.Since(started).Round(time.Millisecond).String())
	return nil
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
