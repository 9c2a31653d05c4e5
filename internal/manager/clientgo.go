package manager

import (
	"os"

	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"

	"github.com/konductor/konductor/internal/config"
)

// watchListEnv is client-go's own switch for its WatchListClient feature.
const watchListEnv = "KUBE_FEATURE_" + string(clientgofeatures.WatchListClient)

// disableWatchListClient turns client-go's WatchListClient off unless the environment sets it.
// With it on (client-go's default since 1.35) an informer's first list is a watch that waits
// for the API server's "initial events end" bookmark, and for custom resources that bookmark
// comes about a second later: the cache, and so the first sync, waited for it
// (docs/performance/journal.md, "Start"). A plain list is what the barrier needs: every object, at once.
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

// apiServerConfig is a copy of restCfg with the controller's settings for the Kubernetes
// API: its rate limit, and gzip asked for only with --apiserver-compression. client-go asks
// for gzip by default, and the API server then compresses every answer over 128 KB: at start
// that is each informer's first list (about 10 MB at 3,000 Ingresses), gzipped on the API
// server's CPU and gunzipped on the controller's, on the path to the first push; in a cluster
// the network carries those bytes faster (docs/performance/journal.md, "Start: the lists
// uncompressed").
func apiServerConfig(restCfg *rest.Config, cfg *config.Config) *rest.Config {
	out := rest.CopyConfig(restCfg)
	out.QPS, out.Burst = cfg.APIServerQPS, cfg.APIServerBurst
	out.DisableCompression = !cfg.APIServerCompression
	return out
}
