package manager

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/konnect"
)

// Gateway nodes are named as KIC names them: a discovered gateway after its Pod, one given by
// URL after its Admin API's host and port.
func TestGatewayNodesAreNamedAsKIC(t *testing.T) {
	nodes := []dataplane.GatewayNode{
		{URL: "https://10.0.0.7:8444", NodeID: "n1", Version: "3.9.1"},
		{URL: "http://kong-admin.kong:8001", NodeID: "n2", Version: "3.9.1"},
	}
	pods := map[string]types.NamespacedName{"https://10.0.0.7:8444": {Namespace: "kong", Name: "kong-gateway-7d9f"}}
	podOf := func(url string) (types.NamespacedName, bool) { p, ok := pods[url]; return p, ok }

	require.Equal(t, []konnect.GatewayNode{
		{ID: "n1", Hostname: "kong/kong-gateway-7d9f", Version: "3.9.1"},
		{ID: "n2", Hostname: "gateway_kong-admin.kong:8001", Version: "3.9.1"},
	}, gatewayNodes(nodes, podOf))
	require.Equal(t, "gateway_10.0.0.7:8444", gatewayNodes(nodes, nil)[0].Hostname, "without discovery: the URL's host")
}
