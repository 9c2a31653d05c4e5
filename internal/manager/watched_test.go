package manager

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/store"
)

// Every --enable-controller-* switch names kinds the store reads, and switching it off takes
// exactly those out.
func TestKindsSwitchedOff(t *testing.T) {
	gates, err := config.ParseFeatureGates("GatewayAlpha=true,KongServiceFacade=true")
	require.NoError(t, err)
	for name, kinds := range config.ControllerKinds {
		off := kindsSwitchedOff(&config.Config{DisabledControllers: []string{name}, FeatureGates: gates}, logr.Discard())
		require.Len(t, off, len(kinds), name)
		for _, k := range kinds {
			kind, ok := store.KindNamed(k)
			require.True(t, ok, "%s names %s, a kind the store does not know", name, k)
			require.True(t, off.Has(kind))
		}
	}
}

// Kinds KIC watches only with a gate are not watched without it (KIC's ClusterRole may not
// grant them: its chart has no kongservicefacades rule).
func TestGatedKindsAreOffWithoutTheirGate(t *testing.T) {
	defaults, err := config.ParseFeatureGates("")
	require.NoError(t, err)
	off := kindsSwitchedOff(&config.Config{FeatureGates: defaults}, logr.Discard())
	require.Equal(t, store.NewKindSet(store.KindKongServiceFacade, store.KindTCPRoute, store.KindTLSRoute, store.KindUDPRoute, store.KindBackendTLSPolicy), off,
		"KongCustomEntity's gate is on by default")
}

// The informers of Secrets and ConfigMaps are limited by KIC's label selectors, ConfigMaps by
// the CA certificate label too.
func TestCacheSelector(t *testing.T) {
	cfg := &config.Config{ConfigMapLabelSelector: "konghq.com/configmap", SecretLabelSelector: "konghq.com/secret"}
	require.Equal(t, "konghq.com/ca-cert=true,konghq.com/configmap=true", cacheSelector(store.KindConfigMap, cfg).String())
	require.Equal(t, "konghq.com/secret=true", cacheSelector(store.KindSecret, cfg).String())
	require.Nil(t, cacheSelector(store.KindService, cfg))
	require.Equal(t, "konghq.com/ca-cert=true", cacheSelector(store.KindConfigMap, &config.Config{}).String())
	require.Nil(t, cacheSelector(store.KindSecret, &config.Config{}))
}
