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
	for name, kinds := range config.ControllerKinds {
		off := kindsSwitchedOff(&config.Config{DisabledControllers: []string{name}}, logr.Discard())
		require.Len(t, off, len(kinds), name)
		for _, k := range kinds {
			kind, ok := store.KindNamed(k)
			require.True(t, ok, "%s names %s, a kind the store does not know", name, k)
			require.True(t, off.Has(kind))
		}
	}
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
