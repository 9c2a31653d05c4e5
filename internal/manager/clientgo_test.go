package manager

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"

	"github.com/konductor/konductor/internal/config"
)

func TestDisableWatchListClient(t *testing.T) {
	t.Setenv(watchListEnv, "")
	disableWatchListClient()
	require.False(t, clientgofeatures.FeatureGates().Enabled(clientgofeatures.WatchListClient),
		"informers list at once instead of waiting for the initial-events bookmark")
}

// The clients made from the controller's configuration ask the API server for gzip only with
// --apiserver-compression (Go's transport adds Accept-Encoding: gzip unless told not to). Over
// TLS, as every API server is served: without TLS client-go uses http.DefaultTransport and
// ignores rest.Config.DisableCompression.
func TestAPIServerCompressionIsAskedOnlyWhenSet(t *testing.T) {
	var mu sync.Mutex
	var acceptEncoding []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		acceptEncoding = append(acceptEncoding, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
	}))
	t.Cleanup(srv.Close)
	ask := func(args ...string) string {
		cfg, err := config.Parse(append([]string{"--kong-admin-url", "http://kong:8001"}, args...), func(string) string { return "" })
		require.NoError(t, err)
		restCfg := apiServerConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, cfg)
		require.Equal(t, cfg.APIServerQPS, restCfg.QPS)
		require.Equal(t, cfg.APIServerBurst, restCfg.Burst)
		c, err := rest.HTTPClientFor(restCfg)
		require.NoError(t, err)
		resp, err := c.Get(srv.URL + "/api")
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		mu.Lock()
		defer mu.Unlock()
		return acceptEncoding[len(acceptEncoding)-1]
	}
	require.Empty(t, ask(), "no gzip by default")
	require.Empty(t, ask("--apiserver-compression=false"))
	require.Equal(t, "gzip", ask("--apiserver-compression"))
}

// KIC's --apiserver-host replaces the API server's URL of the kubeconfig, credentials kept.
func TestAPIServerHostOverridesTheKubeconfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://from-kubeconfig:6443"}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	t.Setenv("KUBECONFIG", "")
	cfg, err := restConfig(kubeconfig, "")
	require.NoError(t, err)
	require.Equal(t, "https://from-kubeconfig:6443", cfg.Host)
	cfg, err = restConfig(kubeconfig, "https://elsewhere:6443")
	require.NoError(t, err)
	require.Equal(t, "https://elsewhere:6443", cfg.Host)
	require.Equal(t, "t0ken", cfg.BearerToken)
}

// A kubeconfig's other context, as kubectl's --context picks it; an unknown one is an error.
func TestRestConfigInContext(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: a, cluster: {server: "https://a:6443"}}, {name: b, cluster: {server: "https://b:6443"}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: ctx-a, context: {cluster: a, user: u}}, {name: ctx-b, context: {cluster: b, user: u}}]
current-context: ctx-a
`), 0o600))
	t.Setenv("KUBECONFIG", "")
	cfg, err := RestConfigInContext(kubeconfig, "", "")
	require.NoError(t, err)
	require.Equal(t, "https://a:6443", cfg.Host)
	cfg, err = RestConfigInContext(kubeconfig, "", "ctx-b")
	require.NoError(t, err)
	require.Equal(t, "https://b:6443", cfg.Host)
	_, err = RestConfigInContext(kubeconfig, "", "nope")
	require.ErrorContains(t, err, "nope")
}
