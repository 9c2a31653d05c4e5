package translator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// KIC's stream expressions (subtranslator/l4route_atc.go): SNIs that KIC's validSNIs
// takes, ORed, AND the destination ports, ORed; each group parenthesised per member only
// when it has several, the AND parenthesised per group only when both are there. Every
// expression made is one Kong's stream router accepts.
func TestL4ExpressionIsKICs(t *testing.T) {
	for _, c := range []struct {
		snis    []string
		ports   []int
		want    string
		skipped []string
	}{
		{nil, []int{9000}, `net.dst.port == 9000`, nil},
		{nil, []int{9000, 9002}, `(net.dst.port == 9000) || (net.dst.port == 9002)`, nil},
		{[]string{"a.example.com"}, nil, `tls.sni == "a.example.com"`, nil},
		{[]string{"a.example.com", "b.example.com"}, nil, `(tls.sni == "a.example.com") || (tls.sni == "b.example.com")`, nil},
		{[]string{"db.example.com"}, []int{9443}, `(tls.sni == "db.example.com") && (net.dst.port == 9443)`, nil},
		{[]string{"a.example.com", "b.example.com"}, []int{1, 2}, `((tls.sni == "a.example.com") || (tls.sni == "b.example.com")) && ((net.dst.port == 1) || (net.dst.port == 2))`, nil},
		// KIC's validSNIs: no wildcard, no "--" (punycode), no "_", no trailing dot.
		{[]string{"*.example.com"}, []int{9444}, `net.dst.port == 9444`, []string{"*.example.com"}},
		{[]string{"xn--bcher-kva.example", "a_b.example.com", "a.example.com.", "UPPER.example.com"}, []int{1},
			`(tls.sni == "UPPER.example.com") && (net.dst.port == 1)`, []string{"xn--bcher-kva.example", "a_b.example.com", "a.example.com."}},
		{[]string{"*.example.org"}, nil, ``, []string{"*.example.org"}},
	} {
		got, skipped := l4Expression(c.snis, c.ports)
		assert.Equal(t, c.want, got, "%v %v", c.snis, c.ports)
		assert.Equal(t, c.skipped, skipped, "%v", c.snis)
		if got != "" {
			assert.Empty(t, kongrules.Expression(got, true), got)
		}
	}
}

// KIC's getKongServiceNameByBackendRefs: <ns>.<name>[.<port>][.<weight>] of each backend,
// the route's namespace when none is given, sorted and joined by "_"; "_" without
// backends; a name over 511 characters trimmed to the first backend and a SHA-256.
func TestCombinedServiceNameIsKICs(t *testing.T) {
	port := func(p int32) *gatewayv1.PortNumber { v := gatewayv1.PortNumber(p); return &v }
	weight := func(w int32) *int32 { return &w }
	ns := func(n string) *gatewayv1.Namespace { v := gatewayv1.Namespace(n); return &v }
	ref := func(name string, p *gatewayv1.PortNumber, w *int32, n *gatewayv1.Namespace) gatewayv1.HTTPBackendRef {
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{Weight: w,
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: p, Namespace: n}}}
	}
	assert.Equal(t, "httproute.default.svc._", combinedServiceName("default", nil))
	assert.Equal(t, "httproute.default.svc.default.echo", combinedServiceName("default", []gatewayv1.HTTPBackendRef{ref("echo", nil, nil, nil)}))
	ab := combinedServiceName("default", []gatewayv1.HTTPBackendRef{ref("echo-1", port(80), weight(75), nil), ref("echo-2", port(8080), weight(25), ns("other"))})
	assert.Equal(t, "httproute.default.svc.default.echo-1.80.75_other.echo-2.8080.25", ab)
	ba := combinedServiceName("default", []gatewayv1.HTTPBackendRef{ref("echo-2", port(8080), weight(25), ns("other")), ref("echo-1", port(80), weight(75), ns("default"))})
	assert.Equal(t, ab, ba, "the order of backends and a namespace given as the route's do not count")
	assert.NotEqual(t, ab, combinedServiceName("team", []gatewayv1.HTTPBackendRef{ref("echo-1", port(80), weight(75), ns("default")), ref("echo-2", port(8080), weight(25), ns("other"))}),
		"routes of another namespace never share")

	var many []gatewayv1.HTTPBackendRef
	for i := 0; i < 16; i++ {
		many = append(many, ref(strings.Repeat("s", 40)+string(rune('a'+i)), port(80), weight(1), nil))
	}
	long := combinedServiceName("default", many)
	require.Equal(t, "httproute.default.svc.default."+strings.Repeat("s", 40)+"a.80.1_combined.", long[:len(long)-64])
	assert.LessOrEqual(t, len(long), maxCombinedServiceName)
	assert.Empty(t, checkServiceName(long))
}

// With combined services, every HTTPRoute whose rules share a Kong service refers to that
// service's backend Services in the graph, not only the HTTPRoute the backends were resolved
// through (populateGatewayService): fallback, status and event filtering follow the graph.
// (The references come from each HTTPRoute's own backendRefs, read for its status too.)
func TestCombinedServiceRoutesReferToTheirBackends(t *testing.T) {
	dir := filepath.Join("testdata", "httproute-combined-services")
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	opts := readGoldenOptions(t, dir)
	require.True(t, opts.Translator.CombinedServicesFromDifferentHTTPRoutes)
	st, err := store.NewForObjects(objs, store.Options{IngressClass: opts.IngressClass})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	res := Build(snap, opts.Translator)
	echo1 := kongstate.ObjectRef{Kind: "Service", Namespace: "default", Name: "echo-1"}
	var referrers []string
	for _, r := range res.Graph.ReferredBy(echo1) {
		if r.Kind == "HTTPRoute" {
			referrers = append(referrers, r.Name)
		}
	}
	require.Subset(t, referrers, []string{"consolidated-1", "consolidated-2", "consolidated-3"})
}
