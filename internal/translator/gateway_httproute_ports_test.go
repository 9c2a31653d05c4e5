package translator

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/manifest"
)

// Without the Kong ports of its listener ports no route is held to them, and only a
// controller that has a publish Service says so (a translation without one, as KIC's, stays
// quiet); with a port known and another not, the route is not held to the known one alone.
func TestListenerPortsNotKnown(t *testing.T) {
	dir := filepath.Join("testdata", "httproute-listener-ports-expressions")
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		service string
		ports   map[gatewayv1.PortNumber]int
		// warned are the routes reported, with a word of why.
		warned map[string]string
	}{
		{name: "no publish Service", warned: map[string]string{}},
		{name: "publish Service not read", service: "kong/kong-proxy", warned: map[string]string{
			"backend-v1": "not in the cache", "backend-v2": "not in the cache", "backend-v3": "not in the cache", "unknown-port": "not in the cache"}},
		{name: "only port 80 known", service: "kong/kong-proxy", ports: map[gatewayv1.PortNumber]int{80: 8000}, warned: map[string]string{
			"backend-v2": "port(s) 8080 only", "backend-v3": "port(s) 8090 only", "unknown-port": "port(s) 9000 only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := goldenOptions{Translator: Options{ExpressionRoutes: true, PublishService: tc.service, HTTPRouterPorts: tc.ports}}
			r := buildObjects(t, objs, opts)
			warned := map[string]string{}
			for _, p := range r.Problems {
				if p.Field == "spec.parentRefs" && strings.Contains(p.Message, "Kong port behind them is not known") {
					require.True(t, p.Warning)
					warned[p.Object.Name] = p.Message
				}
			}
			require.Len(t, warned, len(tc.warned), "%v", warned)
			for name, why := range tc.warned {
				require.Contains(t, warned[name], why, name)
			}
			expr := map[string]string{}
			for _, s := range r.State.Services {
				for _, rt := range s.Routes {
					expr[*rt.Name] = *rt.Expression
				}
			}
			require.Len(t, expr, 6, "every split")
			for name, e := range expr {
				held := strings.Contains(e, "net.dst.port")
				want := tc.ports != nil && strings.Contains(name, ".backend-v1.")
				require.Equal(t, want, held, "%s: %s", name, e)
			}
		})
	}
}
