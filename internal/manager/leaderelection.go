package manager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
)

// LeaderElection is whether replicas campaign for the lease, and why.
type LeaderElection struct {
	Enabled bool
	Reason  string
	// GatewaysProbed: every gateway answered GET / and none has a database, so Start need
	// not ask again (RequireLeaderElection).
	GatewaysProbed bool
	// Roots is each gateway's answer to GET / when deciding asked it (by --kong-admin-url),
	// handed to the gateways so that none is asked again at start.
	Roots map[string]dataplane.Root
}

// DecideLeaderElection decides as KIC does (its leaderElectionEnabled): an explicit choice
// wins (--leader-elect, or KIC's --force-leader-election); otherwise leader election is on when
// a gateway has a database (replicas share it, one must write) and off when every gateway is
// DB-less: that is the sidecar topology, where each replica configures the Kong in its own Pod,
// and a lease would leave every Kong but the leader's empty.
//
// With gateway discovery (--kong-admin-svc) it is on, whatever the database, as in KIC.
//
// Deciding needs each gateway's database mode, so it asks every --kong-admin-url GET /, up to
// --kong-admin-init-retries times --kong-admin-init-retry-delay apart (KIC waits the same way).
func DecideLeaderElection(ctx context.Context, cfg *config.Config, log logr.Logger) (LeaderElection, error) {
	if !cfg.LeaderElectAuto {
		return LeaderElection{Enabled: cfg.LeaderElect, Reason: "set by --leader-elect or --force-leader-election"}, nil
	}
	if cfg.Discovery() {
		// KIC: "DB-less mode detected with service detection, enabling leader election", and
		// on with a database anyway. Every replica discovers the same gateways; one configures
		// them. Nothing to ask at start: the gateways are found after the cache synced.
		return LeaderElection{Enabled: true,
			Reason: "gateway discovery (--kong-admin-svc): every replica finds the same gateways, one of them configures them"}, nil
	}
	httpClient, err := AdminHTTPClient(cfg)
	if err != nil {
		return LeaderElection{}, err
	}
	var withDB, without []string
	roots := map[string]dataplane.Root{}
	for _, u := range cfg.KongAdminURLs {
		c, err := kong.NewClient(kong.String(u), httpClient)
		if err != nil {
			return LeaderElection{}, fmt.Errorf("--kong-admin-url %q: %w", u, err)
		}
		root, err := probeRoot(ctx, c, cfg.KongAdminInitRetries, cfg.KongAdminInitRetryDelay, func(attempt int, err error) {
			log.Info("gateway not answering yet; its database mode decides leader election", "gateway", u, "attempt", attempt, "error", err.Error())
		})
		if err != nil {
			return LeaderElection{}, fmt.Errorf("deciding leader election: gateway %s: %w (retries: --kong-admin-init-retries, --kong-admin-init-retry-delay; or decide with --leader-elect)", u, err)
		}
		roots[u] = root
		if root.Database {
			withDB = append(withDB, u)
		} else {
			without = append(without, u)
		}
	}
	switch {
	case len(withDB) > 0 && len(without) > 0:
		return LeaderElection{}, fmt.Errorf("gateways disagree on the database: %s have one, %s are DB-less; every --kong-admin-url must be the same kind of Kong",
			strings.Join(withDB, ", "), strings.Join(without, ", "))
	case len(withDB) > 0:
		return LeaderElection{Enabled: true, Roots: roots, Reason: "database mode detected: replicas share the database, one of them writes"}, nil
	default:
		return LeaderElection{Enabled: false, GatewaysProbed: true, Roots: roots,
			Reason: "DB-less mode detected: each replica configures its own gateways (set --leader-elect=true to have one replica write to all)"}, nil
	}
}

// probeRoot asks GET / until the gateway answers, at most 1+retries times.
func probeRoot(ctx context.Context, c *kong.Client, retries int, delay time.Duration, onRetry func(int, error)) (dataplane.Root, error) {
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
		root, err := dataplane.ReadRoot(cctx, c)
		cancel()
		if err == nil || attempt >= retries {
			return root, err
		}
		onRetry(attempt+1, err)
		select {
		case <-ctx.Done():
			return dataplane.Root{}, ctx.Err()
		case <-time.After(delay):
		}
	}
}
