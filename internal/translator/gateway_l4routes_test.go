package translator

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// Without KIC's GatewayAlpha gate, TCPRoutes, TLSRoutes and UDPRoutes are not ours (no Kong
// entity, no status) and BackendTLSPolicies do not apply, as in KIC, whose controllers for
// those kinds run only with the gate. With it, they are (the golden cases).
func TestGatewayAlphaGate(t *testing.T) {
	for _, name := range []string{"gateway-l4-routes", "gateway-backendtlspolicy"} {
		res := buildCase(t, name)
		for _, svc := range res.State.Services {
			require.NotEqual(t, "https", *svc.Protocol, "%s: no BackendTLSPolicy applies without the gate", name)
			require.NotRegexp(t, `^(tcp|udp|tls)route\.`, *svc.Name, "%s: no L4 route without the gate", name)
		}
	}
	echo := &gatewayv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"}}
	require.Nil(t, buildCase(t, "gateway-l4-routes").Gateway.Route(gatewayapi.KindTCPRoute, echo), "not attached: no status either")
}
