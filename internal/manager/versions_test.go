package manager

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/konductor/konductor/internal/store"
)

// discoveryServing answers API discovery for the gateway.networking.k8s.io group versions
// of serving (group version → resources); other group versions are NotFound, and fail
// answers 500 for that group version.
func discoveryServing(t *testing.T, serving map[string][]string, fail string) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gv := strings.TrimPrefix(r.URL.Path, "/apis/")
		if gv == fail {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		resources, ok := serving[gv]
		if !ok {
			http.NotFound(w, r)
			return
		}
		list := metav1.APIResourceList{GroupVersion: gv}
		for _, res := range resources {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res, Namespaced: true})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// A kind is read at v1 when the cluster serves it, else at the older version KIC 3.5 reads
// (v1alpha2, v1alpha3), else not at all; a discovery error is an error, never "not served".
func TestServedByDiscoveryPrefersV1ThenOlder(t *testing.T) {
	cfg := discoveryServing(t, map[string][]string{
		"gateway.networking.k8s.io/v1":       {"gateways", "httproutes", "tlsroutes"},
		"gateway.networking.k8s.io/v1alpha2": {"tcproutes", "tlsroutes"},
		"gateway.networking.k8s.io/v1alpha3": {"backendtlspolicies"},
	}, "")
	served, err := servedByDiscovery(cfg)
	require.NoError(t, err)
	for k, want := range map[store.Kind]string{
		store.KindTLSRoute: "v1", store.KindTCPRoute: "v1alpha2", store.KindBackendTLSPolicy: "v1alpha3",
		store.KindUDPRoute: "", store.KindHTTPRoute: "v1", store.KindGRPCRoute: "",
	} {
		got, err := served(k)
		require.NoError(t, err, k.String())
		require.Equal(t, want, got, k.String())
	}

	kinds, versions, err := discoverOptionalKinds(cfg)
	require.NoError(t, err)
	require.True(t, kinds.Has(store.KindTCPRoute) && kinds.Has(store.KindTLSRoute) && kinds.Has(store.KindBackendTLSPolicy))
	require.False(t, kinds.Has(store.KindUDPRoute))
	require.Equal(t, store.Versions{store.KindTCPRoute: "v1alpha2", store.KindBackendTLSPolicy: "v1alpha3"}, versions)
	atOwn, err := installedOptionalKinds(cfg)
	require.NoError(t, err)
	require.False(t, atOwn.Has(store.KindTCPRoute), "konductor diff's set: kinds served at their own version")
	require.True(t, atOwn.Has(store.KindTLSRoute))

	failing := discoveryServing(t, map[string][]string{"gateway.networking.k8s.io/v1alpha2": {"tcproutes"}}, "gateway.networking.k8s.io/v1")
	served, err = servedByDiscovery(failing)
	require.NoError(t, err)
	_, err = served(store.KindTCPRoute)
	require.Error(t, err, "v1 unknown: not read at v1alpha2 on a guess")
	_, _, err = discoverOptionalKinds(failing)
	require.Error(t, err)
}

// mapKinds asks the mapping of each kind at the version it is read at.
func TestMapKindsAtVersionsRead(t *testing.T) {
	m := &recordingMapper{}
	read := store.NewKindSet(store.KindTCPRoute, store.KindHTTPRoute)
	require.NoError(t, mapKinds(m, read, store.Versions{store.KindTCPRoute: "v1alpha2"}))
	require.Equal(t, []schema.GroupVersionKind{crdGVK,
		{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
		{Group: "gateway.networking.k8s.io", Version: "v1alpha2", Kind: "TCPRoute"}}, m.asked)
}
