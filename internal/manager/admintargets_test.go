package manager

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
)

// gatewayList is a discovered set that holds gateways.
type gatewayList []dataplane.Gateway

func (l gatewayList) Run(context.Context, func())   {}
func (l gatewayList) Gateways() []dataplane.Gateway { return l }

// The Admin APIs konductor talks to are never a target (issue #44, item 4): translation is
// told the --kong-admin-svc Services, the --kong-admin-url hosts and, with discovery, the
// discovered gateways' addresses, sorted, once each.
func TestTranslationKnowsTheAdminAPIs(t *testing.T) {
	cfg, err := config.Parse([]string{"--kong-admin-svc", "kong/kong-admin", "--externalname-services", "same-namespace"}, func(string) string { return "" })
	require.NoError(t, err)
	discovered := gatewayList{
		&preparingGateway{url: "https://10.0.0.7:8444"},
		&preparingGateway{url: "https://10.0.0.5:8444"},
		&preparingGateway{url: "https://[fd00::5]:8444"},
		&preparingGateway{url: "https://10.0.0.5:8445"},
	}
	opts := TranslationOptions(context.Background(), cfg, Gateways{Discovered: discovered}, nil, time.Time{})
	require.Equal(t, []types.NamespacedName{{Namespace: "kong", Name: "kong-admin"}}, opts.AdminServices)
	require.Equal(t, "same-namespace", opts.ExternalNameServices)
	require.Subset(t, opts.AdminHosts, []string{"10.0.0.5", "10.0.0.7", "fd00::5"})
	require.IsNonDecreasing(t, opts.AdminHosts)
	counts := map[string]int{}
	for _, h := range opts.AdminHosts {
		counts[h]++
		require.Equal(t, 1, counts[h], h)
	}

	cfg, err = config.Parse([]string{"--kong-admin-url", "https://admin.kong.svc:8444,https://10.1.2.3:8444"}, func(string) string { return "" })
	require.NoError(t, err)
	opts = TranslationOptions(context.Background(), cfg, Gateways{}, nil, time.Time{})
	require.Equal(t, []string{"10.1.2.3", "admin.kong.svc"}, opts.AdminHosts)
	require.Equal(t, "allow", opts.ExternalNameServices, "KIC's by default")
}
