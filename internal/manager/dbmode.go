package manager

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/store"
)

// startCheckTimeout bounds the GET / of each gateway at start.
const startCheckTimeout = 10 * time.Second

// RequireLeaderElection refuses to run without leader election when a gateway has a
// database: two replicas would then both diff and write the same entities, each deleting what
// the other just created. root is each --kong-admin-url gateway's answer to GET / (asked once
// at start, Controller.askGateways). A gateway that did not answer is logged and let
// through; the database-mode gateway refuses to sync without leader election too, when it
// first reaches that Kong.
func RequireLeaderElection(cfg *config.Config, root func(url string) (dataplane.Root, error), log logr.Logger) error {
	if cfg.LeaderElect || cfg.Discovery() {
		return nil // discovered gateways: DBModeFactory refuses a database without leader election
	}
	for _, u := range cfg.KongAdminURLs {
		r, err := root(u)
		if err != nil {
			log.Error(err, "cannot tell whether the gateway has a database; its first sync will", "gateway", u)
			continue
		}
		if r.Database {
			return fmt.Errorf("gateway %s is database-backed: leader election is required with a database, remove --leader-elect=false (CONTROLLER_LEADER_ELECT=false)", u)
		}
	}
	return nil
}

// InstalledOptionalKinds discovers which optional (CRD-backed) kinds the cluster serves, as
// the controller does at start; `konductor diff` reads a cluster with the same set.
func InstalledOptionalKinds(cfg *rest.Config) (store.KindSet, error) {
	return installedOptionalKinds(cfg)
}

// RestConfig is the Kubernetes client configuration of --kubeconfig (empty: in-cluster or
// $KUBECONFIG) and --apiserver-host, as the controller loads it.
func RestConfig(kubeconfig, apiserverHost string) (*rest.Config, error) {
	return restConfig(kubeconfig, apiserverHost)
}

// DBModeFullSyncEvery: in database mode an unchanged configuration is not re-diffed on every
// resync; every 20th one is (a minute at the default --proxy-sync-seconds), against what Kong
// confirmed to the last sync; entities changed in Kong by hand are found by the background
// listing of --kong-admin-dump-interval and repaired by the next sync (dbmode/refresh.go). Any change in the cluster's translation syncs
// at once.
const DBModeFullSyncEvery = 20

// DBModeFactory syncs database-backed gateways by diff (internal/dataplane/dbmode), with the
// filter tag, concurrency and Admin API client of cfg. Without leader election it refuses:
// the controller already refuses to start then (RequireLeaderElection), and this covers a
// gateway that could not be asked at start.
func DBModeFactory(cfg *config.Config, log logr.Logger) dataplane.DBModeFactory {
	return func(url string, httpClient *http.Client) (dataplane.Gateway, error) {
		if !cfg.LeaderElect {
			return nil, fmt.Errorf("gateway %s is database-backed: leader election is required with a database, remove --leader-elect=false", url)
		}
		// dbmode builds its own client over these HTTP settings, to add its schema cache.
		if httpClient == nil {
			var err error
			if httpClient, err = AdminHTTPClient(cfg); err != nil {
				return nil, err
			}
		}
		return dbmode.New(url, httpClient, dbmode.Options{
			FilterTags: cfg.KongAdminFilterTags, Concurrency: cfg.KongAdminConcurrency, Logger: log.WithName("dbmode"),
			SkipCACertificates: cfg.SkipCACertificates,
			FullSyncEvery:      DBModeFullSyncEvery,
			DumpInterval:       cfg.KongAdminDumpInterval,
			Workspace:          cfg.KongWorkspace,
		})
	}
}
