package manager

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/kongemu"
)

func kongURL(t *testing.T, mode kongemu.Mode) string {
	t.Helper()
	srv, err := kongemu.New(kongemu.Options{Mode: mode}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv.URL
}

func parse(t *testing.T, args ...string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(args, func(string) string { return "" })
	require.NoError(t, err)
	return cfg
}

func TestRequireLeaderElectionWithDatabase(t *testing.T) {
	ctx := context.Background()
	dbless, db := kongURL(t, kongemu.DBLess), kongURL(t, kongemu.Postgres)
	// Each gateway's answer to GET /, as the start asks it.
	ask := func(url string) (dataplane.Root, error) {
		c, err := kong.NewClient(kong.String(url), nil)
		require.NoError(t, err)
		return dataplane.ReadRoot(ctx, c)
	}

	err := RequireLeaderElection(parse(t, "--kong-admin-url", dbless+","+db, "--leader-elect=false"), ask, logr.Discard())
	require.ErrorContains(t, err, db)

	require.NoError(t, RequireLeaderElection(parse(t, "--kong-admin-url", dbless, "--leader-elect=false"), ask, logr.Discard()))
	require.NoError(t, RequireLeaderElection(parse(t, "--kong-admin-url", db), ask, logr.Discard()), "with leader election")
	// A gateway that does not answer does not stop the start; its first sync decides.
	require.NoError(t, RequireLeaderElection(parse(t, "--kong-admin-url", "http://127.0.0.1:1", "--leader-elect=false"), ask, logr.Discard()))
}

func TestDBModeFactoryRequiresLeaderElection(t *testing.T) {
	cfg, err := config.Parse([]string{"--leader-elect=false"}, func(string) string { return "" })
	require.NoError(t, err)
	_, err = DBModeFactory(cfg, logr.Discard())("http://kong:8001", nil)
	require.ErrorContains(t, err, "--leader-elect")

	cfg, err = config.Parse(nil, func(string) string { return "" })
	require.NoError(t, err)
	g, err := DBModeFactory(cfg, logr.Discard())("http://kong:8001", nil)
	require.NoError(t, err)
	require.IsType(t, &dbmode.Gateway{}, g)
}
