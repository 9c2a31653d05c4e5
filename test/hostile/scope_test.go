package hostile

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// Issue #44 item 10, --consumer-scope=namespace, in requests through the emulator's proxy:
// with KIC's model (the default) another namespace's consumer passes a route's key-auth and
// its acl; scoped, only the route's namespace's consumers do.
func TestConsumerScopeAdmitsOnlyTheRoutesNamespace(t *testing.T) {
	loaded, err := manifest.LoadAll(filepath.Join("scope", "consumers.yaml"))
	require.NoError(t, err)
	st, err := store.NewForObjects(loaded.Objects, store.Options{IngressClass: "kong"})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	for _, tc := range []struct {
		scope       string
		malloryPass bool
	}{{"", true}, {translator.ConsumerScopeNamespace, false}} {
		res := translator.Build(snap, translator.Options{ConsumerScope: tc.scope})
		require.Empty(t, res.Problems)
		body, err := res.State.DeclarativeConfig()
		require.NoError(t, err)
		emu := kongemu.New(kongemu.Options{Mode: kongemu.DBLess})
		rec := httptest.NewRecorder()
		emu.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/config", bytes.NewReader(body)))
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		backend := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
		proxy := emu.Proxy(kongemu.ProxyOptions{Resolve: func(string, int) http.Handler { return backend }})
		status := func(host, key string) int {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Host = host
			if key != "" {
				r.Header.Set("apikey", key)
			}
			w := httptest.NewRecorder()
			proxy.ServeHTTP(w, r)
			return w.Code
		}
		for _, host := range []string{"shop.example.com", "admin.shop.example.com"} {
			require.Equal(t, http.StatusTeapot, status(host, "alice-key-value"), "scope %q: alice on %s", tc.scope, host)
			require.Equal(t, http.StatusUnauthorized, status(host, ""), "scope %q: no key on %s", tc.scope, host)
			if tc.malloryPass {
				require.Equal(t, http.StatusTeapot, status(host, "mallory-key-value"), "KIC's model: mallory of team-b on %s", host)
			} else {
				require.Equal(t, http.StatusForbidden, status(host, "mallory-key-value"), "scoped: mallory of team-b on %s", host)
			}
		}
	}
}
