package dbmode

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
)

// Issue #44 item 9: a sync that adds a route guarded by key-auth never serves it without the
// plugin, not even between the syncer's writes. After every write the Admin API answers, a
// request without a key is sent through the emulator's proxy to the new route's host: none
// may reach a backend. Without parking (parking.go) the route is written before its plugin
// and the request after that write reaches it.
func TestNewGuardedRouteIsNeverServedWithoutItsPlugin(t *testing.T) {
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres})
	var reached, probes atomic.Int64
	backend := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached.Add(1) })
	proxy := e.Proxy(kongemu.ProxyOptions{Resolve: func(string, int) http.Handler { return backend }})
	var probing atomic.Bool
	var mu sync.Mutex // the admin API's writes, one probe after each
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		e.ServeHTTP(w, r)
		if r.Method != http.MethodGet && probing.Load() {
			probes.Add(1)
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = "guarded.example.com"
			proxy.ServeHTTP(httptest.NewRecorder(), req)
		}
	}))
	t.Cleanup(admin.Close)
	g, err := New(admin.URL, &http.Client{}, Options{})
	require.NoError(t, err)

	open := objects(app{name: "open"})
	_, err = g.Apply(ctx, translate(t, open))
	require.NoError(t, err)

	guarded := objects(app{name: "guarded"})
	guarded[0].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"})
	auth := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "default", UID: "uid-auth"},
		PluginName: "key-auth", Config: apiextensionsv1.JSON{Raw: []byte(`{}`)}}
	probing.Store(true)
	res, err := g.Apply(ctx, translate(t, append(append(append([]client.Object{}, open...), guarded...), auth)))
	require.NoError(t, err)
	probing.Store(false)
	require.Positive(t, probes.Load())
	require.Zero(t, reached.Load(), "the new route was served without key-auth between two writes")
	require.Zero(t, res.Deletes, "changes: %+v", res.Changes)
	for _, c := range res.Changes {
		require.NotEqual(t, parkingServiceName, c.Name, "the parking service is not a change of the result")
	}

	// Once synced the route is served, with its plugin, on its own service.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "guarded.example.com"
	proxy.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Nil(t, e.Entity("services", parkingServiceName), "the parking service is deleted")
	route := e.Entity("routes", "default.guarded.guarded.guarded.example.com.80")
	require.NotNil(t, route)
	require.Equal(t, e.Entity("services", "default.guarded.80")["id"], route["service"].(map[string]any)["id"])

	// The next sync finds nothing to do.
	res, err = g.Apply(ctx, translate(t, append(append(append([]client.Object{}, open...), guarded...), auth)))
	require.NoError(t, err)
	require.Zero(t, res.Creates+res.Updates+res.Deletes, "changes: %+v", res.Changes)
}
