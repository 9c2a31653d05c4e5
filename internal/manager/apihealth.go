package manager

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/konductor/konductor/internal/status"
	"github.com/konductor/konductor/internal/store"
)

// apiHealth keeps the informers' reconnection off client-go's backoff after a Kubernetes API
// server outage, and says that the watches are down while it lasts.
//
// A reflector whose list or watch fails sleeps before it tries again, on a backoff that grows
// from 800 ms to 30 s with full jitter (client-go tools/cache/reflector.go,
// defaultBackoffInit/Max/Jitter; neither SharedIndexInformer nor controller-runtime's cache lets
// it be set). After an outage of 30 s each informer was asleep for up to a minute when the
// server came back, so a change made then reached Kong 20-30 s later. apiHealth wraps the
// transport of the cache's informers instead: a GET that gets no answer at all (connection
// refused or reset: the server is gone) does not fail; it waits until the server answers
// /readyz again, which one prober polls every probeInterval while the outage lasts, and is then
// sent again. The reflector never sees the outage as a failure, so it never backs off, and every
// informer lists again within a probe interval of the server's return. A request is held at
// most once: if it fails again after the server answered the probe, the error goes to the
// reflector, whose own backoff then applies.
//
// The cache is untouched meanwhile: informers keep the objects they last read (a list that
// fails or waits never empties them), so syncs go on from the last known state, never from an
// empty or partial one.
type apiHealth struct {
	// probe asks the API server whether it serves (GET /readyz); nil error when it does.
	probe         func(ctx context.Context) error
	probeInterval time.Duration
	log           logr.Logger
	// stop ends a prober still polling (the controller stopping during an outage).
	stop <-chan struct{}
	// resources maps "group/resource" (core group "") to the kind name the store reads.
	resources map[string]string

	mu        sync.Mutex
	down      bool
	downSince time.Time
	back      chan struct{} // closed when the server answers again; nil while up
	// watchUp: per kind, whether its last list or watch request got a 2xx answer.
	watchUp map[string]bool
}

// apiProbeInterval is how often /readyz is polled during an outage: the bound on how long after
// the server's return the informers list again.
const apiProbeInterval = 250 * time.Millisecond

func newAPIHealth(probe func(ctx context.Context) error, log logr.Logger) *apiHealth {
	res := map[string]string{}
	for _, k := range store.AllKinds() {
		res[k.GroupVersionKind().Group+"/"+k.Resource()] = k.String()
	}
	return &apiHealth{probe: probe, probeInterval: apiProbeInterval, log: log, resources: res, watchUp: map[string]bool{}}
}

// probeReadyz is a probe that GETs /readyz through rc (a client of the manager's own
// configuration, not the wrapped one). An answer that the identity may not read /readyz (401,
// 403) counts as an answer: the server is there.
func probeReadyz(rc rest.Interface) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		err := rc.Get().AbsPath("/readyz").Do(ctx).Error()
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return nil
		}
		return err
	}
}

// Reachable reports whether the API server answered the informers' last request (or, during
// an outage, the probe).
func (h *apiHealth) Reachable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
}

// Wrap returns rt with the outage handling above.
func (h *apiHealth) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			return rt.RoundTrip(req)
		}
		kind := h.kindOf(req.URL.Path)
		resp, err := rt.RoundTrip(req)
		if err == nil || req.Context().Err() != nil {
			h.observe(kind, resp)
			return resp, err
		}
		back := h.markDown(kind, err)
		select {
		case <-back:
		case <-req.Context().Done():
			return nil, err
		}
		resp, err = rt.RoundTrip(req)
		h.observe(kind, resp)
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// observe records a kind's list or watch answer (nil: no answer).
func (h *apiHealth) observe(kind string, resp *http.Response) {
	if kind == "" {
		return
	}
	h.mu.Lock()
	h.watchUp[kind] = resp != nil && resp.StatusCode < 300
	h.mu.Unlock()
}

// markDown records that a request got no answer and returns the channel closed when the server
// answers again. The first such request of an outage logs it and starts the prober.
func (h *apiHealth) markDown(kind string, err error) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if kind != "" {
		h.watchUp[kind] = false
	}
	if h.down {
		return h.back
	}
	h.down, h.downSince, h.back = true, time.Now(), make(chan struct{})
	h.log.Error(err, "Kubernetes API server unreachable: watches are down. The cache keeps the objects it last read and syncs go on from them; informers list again as soon as the server answers /readyz")
	go h.waitForServer(h.back)
	return h.back
}

// waitForServer polls the probe until it succeeds, then releases the waiting requests.
func (h *apiHealth) waitForServer(back chan struct{}) {
	t := time.NewTicker(h.probeInterval)
	defer t.Stop()
	for answered := false; !answered; {
		select {
		case <-h.stop:
			return // the held requests end with their own contexts
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		answered = h.probe(ctx) == nil
		cancel()
	}
	h.mu.Lock()
	since := h.downSince
	h.down, h.back = false, nil
	var kinds []string
	for k, up := range h.watchUp {
		if !up {
			kinds = append(kinds, k)
		}
	}
	h.mu.Unlock()
	sort.Strings(kinds)
	h.log.Info("Kubernetes API server answers again; informers list and watch again now",
		"outage", time.Since(since).Round(time.Millisecond).String(), "watchesDown", strings.Join(kinds, ","))
	close(back)
}

// kindOf is the kind name of a list or watch path of a kind the store reads, "" for any other:
// /api/v1/[namespaces/<ns>/]<resource> and /apis/<group>/<version>/[namespaces/<ns>/]<resource>.
func (h *apiHealth) kindOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return ""
	}
	if len(rest) == 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) != 1 {
		return "" // a single object, a subresource or a namespace
	}
	return h.resources[group+"/"+rest[0]]
}

// forget drops a kind from the watch metrics (its CRD was removed).
func (h *apiHealth) forget(kind string) {
	h.mu.Lock()
	delete(h.watchUp, kind)
	h.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (h *apiHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- apiReachableDesc
	ch <- watchUpDesc
}

// Collect implements prometheus.Collector.
func (h *apiHealth) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(apiReachableDesc, prometheus.GaugeValue, boolGauge(!h.down))
	kinds := make([]string, 0, len(h.watchUp))
	for k := range h.watchUp {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(watchUpDesc, prometheus.GaugeValue, boolGauge(h.watchUp[k] && !h.down), k)
	}
}

var (
	apiReachableDesc = prometheus.NewDesc("konductor_kubernetes_api_reachable",
		"1 while the Kubernetes API server answers the informers' requests, 0 during an outage (the cache then keeps the objects it last read).", nil, nil)
	watchUpDesc = prometheus.NewDesc("konductor_kubernetes_watch_up",
		"1 when the last list or watch request of the kind got an answer that is not an error, else 0 (API server unreachable, RBAC forbids the kind, its CRD is gone).", []string{"kind"}, nil)
)

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// newAPIHealthFor is the apiHealth of the controller's API server, probing it with a client
// of restCfg, and registered in controller-runtime's metrics registry (replacing the one of an
// earlier controller of the same process, as tests start several).
func newAPIHealthFor(ctx context.Context, restCfg *rest.Config, log logr.Logger) (*apiHealth, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("API health probe client: %w", err)
	}
	h := newAPIHealth(probeReadyz(dc.RESTClient()), log)
	h.stop = ctx.Done()
	if err := status.ReplaceCollectors(metrics.Registry, h); err != nil {
		return nil, fmt.Errorf("registering the Kubernetes API metrics: %w", err)
	}
	return h, nil
}

// newCache is the manager's cache with every informer request going through Wrap.
func (h *apiHealth) newCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	if opts.HTTPClient == nil {
		c, err := rest.HTTPClientFor(config)
		if err != nil {
			return nil, err
		}
		opts.HTTPClient = c
	}
	wrapped := *opts.HTTPClient
	wrapped.Transport = h.Wrap(opts.HTTPClient.Transport)
	opts.HTTPClient = &wrapped
	return cache.New(config, opts)
}
