package konnect

import (
	"context"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
)

var ctx = context.Background()

// konnectFor starts a Konnect emulator and returns the Options that reach its control plane.
func konnectFor(t *testing.T) (*kongemu.KonnectServer, Options) {
	t.Helper()
	srv, err := kongemu.NewKonnect(kongemu.KonnectOptions{ControlPlaneIDs: []string{"cp1"}}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(srv.CertPEM))
	return srv, Options{Address: srv.URL, ControlPlaneID: "cp1", Certificate: srv.ClientCert().Certificate, RootCAs: roots,
		UserAgent: "konductor/test", Timeout: 5 * time.Second}
}

// state is a configuration with a service and its route, a consumer with a key-auth
// credential and a consumer-scoped plugin.
func testState() *kongstate.State {
	svc := &file.FService{Service: kong.Service{ID: kong.String("0b4c1a6e-0000-4000-8000-000000000001"), Name: kong.String("default.echo.80"),
		Host: kong.String("echo.default.80.svc"), Port: kong.Int(80), Protocol: kong.String("http")}}
	svc.Routes = []*file.FRoute{{Route: kong.Route{ID: kong.String("0b4c1a6e-0000-4000-8000-000000000002"), Name: kong.String("default.echo.echo.80"),
		Paths: []*string{kong.String("/")}}}}
	cons := &file.FConsumer{Consumer: kong.Consumer{ID: kong.String("0b4c1a6e-0000-4000-8000-000000000003"), Username: kong.String("alice")},
		KeyAuths: []*kong.KeyAuth{{ID: kong.String("0b4c1a6e-0000-4000-8000-000000000004"), Key: kong.String("alice-secret-key")}}}
	plugin := &file.FPlugin{Plugin: kong.Plugin{ID: kong.String("0b4c1a6e-0000-4000-8000-000000000005"), Name: kong.String("rate-limiting"),
		Consumer: &kong.Consumer{ID: cons.ID}, Config: kong.Configuration{"minute": 5}}}
	return &kongstate.State{Services: []*file.FService{svc}, Consumers: []*file.FConsumer{cons}, Plugins: []*file.FPlugin{plugin}}
}

func took(s *kongstate.State) dataplane.Round {
	return dataplane.Round{State: s, Translated: true, Gateways: []dataplane.GatewayResult{{URL: "http://kong:8001"}}, Held: s}
}

type pushes struct{ n, failed int }

func (p *pushes) KonnectPush(_ string, err error, _ time.Duration) {
	p.n++
	if err != nil {
		p.failed++
	}
}

// What the gateways took reaches the control plane, secrets redacted; the same configuration
// is not uploaded again; a round a gateway refused is not uploaded; Konnect down fails the
// upload (counted, backed off) and the latest configuration is uploaded once it answers.
func TestConfigSync(t *testing.T) {
	srv, opts := konnectFor(t)
	rec := &pushes{}
	s, err := NewConfigSync(opts, SyncOptions{Period: time.Hour, Concurrency: 2, Recorder: rec, Log: logr.Discard()})
	require.NoError(t, err)
	cp := srv.ControlPlane("cp1")

	require.NoError(t, s.Upload(ctx), "nothing taken yet: nothing to do")
	require.Zero(t, rec.n)
	first := testState()
	s.Report(ctx, took(first))
	require.NoError(t, s.Upload(ctx))
	require.NotNil(t, cp.Entity("services", "default.echo.80"))
	require.NotNil(t, cp.Entity("routes", "default.echo.echo.80"))
	keys := cp.Entities("keyauth_credentials")
	require.Len(t, keys, 1)
	require.Equal(t, "REDACTED-0b4c1a6e-0000-4000-8000-000000000004", keys[0]["key"], "no secret reaches Konnect")
	require.Len(t, cp.Entities("plugins"), 1)
	require.Equal(t, 1, rec.n)

	mark := cp.AuditMark()
	require.NoError(t, s.Upload(ctx))
	require.Empty(t, cp.AuditSince(mark), "the same configuration again: nothing sent")
	require.Equal(t, 1, rec.n)

	refused := testState()
	refused.Services[0].Port = kong.Int(8080)
	r := took(refused)
	r.Gateways[0].Err = &dataplane.RejectedError{Gateway: "http://kong:8001", Message: "refused"}
	r.Held = first // the gateway keeps what it held
	s.Report(ctx, r)
	require.NoError(t, s.Upload(ctx))
	require.EqualValues(t, 80, cp.Entity("services", "default.echo.80")["port"], "what a gateway refused is not uploaded")

	changed := testState()
	changed.Services[0].Port = kong.Int(8081)
	s.Report(ctx, took(changed))
	require.NoError(t, srv.SetDown(true))
	require.Error(t, s.Upload(ctx))
	require.True(t, s.Failed())
	require.Equal(t, 1, rec.failed)
	require.ErrorIs(t, s.Upload(ctx), errBackoff, "backing off")
	require.NoError(t, srv.SetDown(false))
	s.mu.Lock()
	s.notUntil = time.Time{} // the backoff passed
	s.mu.Unlock()
	require.NoError(t, s.Upload(ctx))
	require.False(t, s.Failed())
	require.EqualValues(t, 8081, cp.Entity("services", "default.echo.80")["port"], "caught up")
}

// --konnect-disable-consumers-sync: no consumer, credential or consumer-scoped plugin.
func TestConfigSyncWithoutConsumers(t *testing.T) {
	srv, opts := konnectFor(t)
	s, err := NewConfigSync(opts, SyncOptions{Period: time.Hour, NoConsumers: true, Log: logr.Discard()})
	require.NoError(t, err)
	s.Report(ctx, took(testState()))
	require.NoError(t, s.Upload(ctx))
	cp := srv.ControlPlane("cp1")
	require.NotNil(t, cp.Entity("services", "default.echo.80"))
	require.Empty(t, cp.Entities("consumers"))
	require.Empty(t, cp.Entities("plugins"))
}

// The controller is one node (another controller's node removed), each gateway one (a gone
// gateway's removed); the status follows the rounds and the uploads.
func TestNodeAgent(t *testing.T) {
	srv, opts := konnectFor(t)
	gateways := []GatewayNode{{ID: "11111111-0000-4000-8000-000000000001", Hostname: "gateway_10.0.0.1:8444", Version: "3.10.0"},
		{ID: "11111111-0000-4000-8000-000000000002", Hostname: "gateway_10.0.0.2:8444", Version: "3.10.0"}}
	failed := false
	a := NewNodeAgent(opts, NodeOptions{Hostname: "kong/konductor-0", ID: "22222222-0000-4000-8000-000000000001", Version: "konductor/test",
		Gateways: func() []GatewayNode { return gateways }, KonnectFailed: func() bool { return failed }, Log: logr.Discard()})
	api := newAPIClient(opts)
	require.NoError(t, api.do(ctx, http.MethodPost, nodesPath, Node{Hostname: "kong/kic-0", Type: NodeTypeController, LastPing: 1}, nil))

	require.NoError(t, a.Update(ctx))
	summary := func() []string {
		var out []string
		for _, n := range srv.Nodes("cp1") {
			out = append(out, n.Type+" "+n.Hostname+" "+n.Status)
		}
		return out
	}
	require.ElementsMatch(t, []string{"ingress-controller kong/konductor-0 " + StatusOperational,
		"kong-proxy gateway_10.0.0.1:8444 ", "kong-proxy gateway_10.0.0.2:8444 "}, summary())
	for _, n := range srv.Nodes("cp1") {
		if n.Hostname == "gateway_10.0.0.1:8444" {
			require.Equal(t, gateways[0].ID, n.ID, "a gateway node is Kong's node_id")
		}
	}

	gateways = gateways[:1]
	a.Report(ctx, dataplane.Round{Translated: true, Gateways: []dataplane.GatewayResult{{URL: "x", Err: &dataplane.RejectedError{}}}})
	failed = true
	require.NoError(t, a.Update(ctx))
	require.ElementsMatch(t, []string{"ingress-controller kong/konductor-0 " + StatusInoperable + statusKonnectOutOfSync,
		"kong-proxy gateway_10.0.0.1:8444 "}, summary())
	require.Len(t, srv.Nodes("cp1"), 2, "updated in place, not made again")
}

// The license is polled (none: 404), taken and stored in its Secret; a restart while
// Konnect is unreachable takes it from the Secret; Kong gets it as its licenses entity.
func TestLicenseAgent(t *testing.T) {
	srv, opts := konnectFor(t)
	c := fake.NewClientBuilder().Build()
	store := NewSecretStore(c, c, "kong", "cp1")
	changes := 0
	a := NewLicenseAgent(opts, LicenseOptions{Store: store, Changed: func() { changes++ }, Log: logr.Discard()})
	require.NoError(t, a.Poll(ctx))
	require.Nil(t, a.License(), "the control plane has none")

	srv.SetLicense("cp1", `{"license":{"payload":{"license_expiration_date":"2099-01-01"}}}`)
	require.NoError(t, a.Poll(ctx))
	l := a.License()
	require.NotNil(t, l)
	require.Contains(t, *l.Payload, "2099-01-01")
	require.Equal(t, 1, changes)
	var sec corev1.Secret
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "kong", Name: "konnect-license-cp1"}, &sec))
	require.Equal(t, *l.Payload, string(sec.Data["payload"]))
	require.Equal(t, "kong-ingress-controller", sec.Labels["konghq.com/managed-by"])

	require.NoError(t, srv.SetDown(true))
	restarted := NewLicenseAgent(opts, LicenseOptions{Store: store, Log: logr.Discard()})
	require.NoError(t, restarted.Poll(ctx))
	require.Equal(t, *l.ID, *restarted.License().ID, "the stored license, Konnect unreachable")
	require.NoError(t, a.Poll(ctx))
	require.NotNil(t, a.License(), "an error never takes the license away")
}
