package integration

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manager"
)

// With --leader-elect=false and a database-backed gateway the controller stops with the
// refusal (RequireLeaderElection, asked while the cache syncs) and writes nothing to Kong.
func TestDatabaseGatewayWithoutLeaderElectionStops(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	apps(t, ns, 3)
	kong := startEmulator(t, kongemu.Postgres)
	cfg, err := config.Parse([]string{"--kong-admin-url", kong.URL, "--watch-namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--leader-elect=false"},
		func(string) string { return "" })
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := manager.New(ctx, cfg, manager.Options{Logger: logr.Discard(), RestConfig: adminConfig})
	require.NoError(t, err)
	err = c.Start(ctx)
	require.ErrorContains(t, err, "leader election is required with a database")
	require.NoError(t, ctx.Err(), "stopped by the refusal, not by the timeout")
	require.Empty(t, kong.Audit(), "nothing written")
}
