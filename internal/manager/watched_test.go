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

// The informer of Secrets is limited by KIC's --secret-label-selector. Every ConfigMap is
// cached (a BackendTLSPolicy's CA ConfigMap carries no label, issue #40): KIC's labels say
// which keep their data (configMapLabels).
func TestCacheSelector(t *testing.T) {
	cfg := &config.Config{ConfigMapLabelSelector: "konghq.com/configmap", SecretLabelSelector: "konghq.com/secret"}
	require.Nil(t, cacheSelector(store.KindConfigMap, cfg))
	require.Equal(t, []string{store.CACertLabel, "konghq.com/configmap"}, configMapLabels(cfg))
	require.Equal(t, "konghq.com/secret=true", cacheSelector(store.KindSecret, cfg).String())
	require.Nil(t, cacheSelector(store.KindService, cfg))
	require.Nil(t, cacheSelector(store.KindConfigMap, &config.Config{}))
	require.Equal(t, []string{store.CACertLabel}, configMapLabels(&config.Config{}))
	require.Nil(t, cacheSelector(store.KindSecret, &config.Config{}))
}
