package manager

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
)

// Leader election as KIC decides it: off for DB-less gateways (the sidecar topology, every
// replica configures its own Kong), on with a database, the user's choice when given.
func TestDecideLeaderElection(t *testing.T) {
	ctx := context.Background()
	dbless, db := kongURL(t, kongemu.DBLess), kongURL(t, kongemu.Postgres)

	for _, tc := range []struct {
		name    string
		args    []string
		enabled bool
		probed  bool
		err     string
	}{
		{name: "DB-less sidecar", args: []string{"--kong-admin-url", dbless}, enabled: false, probed: true},
		{name: "database", args: []string{"--kong-admin-url", db}, enabled: true},
		{name: "explicit on, DB-less", args: []string{"--kong-admin-url", dbless, "--leader-elect"}, enabled: true},
		{name: "KIC's force flag", args: []string{"--kong-admin-url", dbless, "--force-leader-election=enabled"}, enabled: true},
		{name: "explicit off, unreachable gateway", args: []string{"--kong-admin-url", "http://127.0.0.1:1", "--leader-elect=false"}, enabled: false},
		{name: "gateway discovery, nothing to ask", args: []string{"--kong-admin-svc", "kong/admin", "--kong-admin-init-retries=0"}, enabled: true},
		{name: "gateway discovery, explicit off", args: []string{"--kong-admin-svc", "kong/admin", "--leader-elect=false"}, enabled: false},
		{name: "mixed", args: []string{"--kong-admin-url", dbless + "," + db}, err: "gateways disagree on the database"},
		{name: "unreachable", args: []string{"--kong-admin-url", "http://127.0.0.1:1", "--kong-admin-init-retries=1", "--kong-admin-init-retry-delay=1ms"},
			err: "deciding leader election: gateway http://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DecideLeaderElection(ctx, parse(t, tc.args...), logr.Discard())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.enabled, d.Enabled, d.Reason)
			require.Equal(t, tc.probed, d.GatewaysProbed)
			require.NotEmpty(t, d.Reason)
		})
	}
}

// A gateway that is not up yet (Kong starting beside the controller) is waited for, as KIC
// waits with --kong-admin-init-retries.
func TestDecideLeaderElectionWaitsForTheGateway(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	emu := kongemu.New(kongemu.Options{Mode: kongemu.DBLess})
	go func() {
		time.Sleep(300 * time.Millisecond) // the gateway comes up after the controller asked
		srv := &http.Server{Addr: addr, Handler: emu, ReadHeaderTimeout: time.Second}
		t.Cleanup(func() { _ = srv.Close() })
		_ = srv.ListenAndServe()
	}()
	d, err := DecideLeaderElection(context.Background(),
		parse(t, "--kong-admin-url", "http://"+addr, "--kong-admin-init-retry-delay=50ms"), logr.Discard())
	require.NoError(t, err)
	require.False(t, d.Enabled)
}
