package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/konductor/konductor/internal/kongemu"
)

// flakyAPIServer is a proxy in front of the shared API server that, once /readyz has answered,
// answers the first request to every other path 503 Service Unavailable: the API server going
// away between the start's wait for it and each of the steps that talk to it next (API
// discovery, the informers' REST mappings, the CustomResourceDefinitions' list). Every later
// request to that path, and /readyz always, reaches the server. (A dropped connection would
// not do: client-go's REST client sends a GET whose connection ended early again by itself.)
type flakyAPIServer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	ready   bool            // /readyz has answered once
	dropped map[string]bool // "<method> <path>" dropped once
}

func startFlakyAPIServer(t *testing.T) *flakyAPIServer {
	t.Helper()
	target, err := url.Parse(adminConfig.Host)
	require.NoError(t, err)
	transport, err := rest.TransportFor(adminConfig)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	f := &flakyAPIServer{dropped: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.drop(r) {
			http.Error(w, "the API server is away", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flakyAPIServer) drop(r *http.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/readyz" {
		f.ready = true
		return false
	}
	key := r.Method + " " + r.URL.Path
	if !f.ready || f.dropped[key] {
		return false
	}
	f.dropped[key] = true
	return true
}

func (f *flakyAPIServer) droppedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.dropped)
}

// The API server answering /readyz and then going away before the start's next requests (issue
// #11, Kubernetes faults): every step of the start that talks to it before the manager runs
// waits for it and tries again, instead of the controller exiting; the configuration then
// reaches Kong whole.
func TestAPIServerAwayDuringStartSteps(t *testing.T) {
	ns := newNamespace(t)
	for _, name := range []string{"app-a", "app-b"} {
		for _, obj := range app(ns, name, name+".example.com") {
			require.NoError(t, admin.Create(context.Background(), obj))
		}
	}
	flaky := startFlakyAPIServer(t)
	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r", namespace: ns, gateways: []string{kong.URL},
		args: []string{"--leader-elect=false"}, restConfig: &rest.Config{Host: flaky.srv.URL}})
	require.Positive(t, flaky.droppedCount(), "the proxy dropped requests of the start")
	for _, step := range []string{"API discovery of the optional kinds", "RBAC of the kinds KIC does not read", "REST mappings of the kinds read", "listing the CustomResourceDefinitions"} {
		require.True(t, r.logs.contains("Kubernetes API server unreachable at start: waiting for it", step), "the log says the start waits at step %q", step)
	}
	r.waitFirstSync(t, time.Minute)
	require.Eventually(t, func() bool { return kong.Emulator.Counts()["routes"] == 2 }, time.Minute, 20*time.Millisecond,
		"the configuration reaches Kong")
}
