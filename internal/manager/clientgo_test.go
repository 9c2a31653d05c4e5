package manager

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientgofeatures "k8s.io/client-go/features"
)

func TestDisableWatchListClient(t *testing.T) {
	t.Setenv(watchListEnv, "")
	disableWatchListClient()
	require.False(t, clientgofeatures.FeatureGates().Enabled(clientgofeatures.WatchListClient),
		"informers list at once instead of waiting for the initial-events bookmark")
}
