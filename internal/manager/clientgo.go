package manager

import (
	"os"

	clientgofeatures "k8s.io/client-go/features"
)

// watchListEnv is client-go's own switch for its WatchListClient feature.
const watchListEnv = "KUBE_FEATURE_" + string(clientgofeatures.WatchListClient)

// disableWatchListClient turns client-go's WatchListClient off unless the environment sets it.
// With it on (client-go's default since 1.35) an informer's first list is a watch that waits
// for the API server's "initial events end" bookmark, and for custom resources that bookmark
// comes about a second later: the cache, and so the first sync, waited for it
// (docs/performance.md, "Start"). A plain list is what the barrier needs: every object, at once.
func disableWatchListClient() {
	if os.Getenv(watchListEnv) != "" {
		return // the operator decided
	}
	if g, ok := clientgofeatures.FeatureGates().(interface {
		Set(clientgofeatures.Feature, bool) error
	}); ok {
		_ = g.Set(clientgofeatures.WatchListClient, false)
	}
}
