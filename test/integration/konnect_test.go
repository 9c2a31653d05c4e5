package integration

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manager"
)

// --konnect-sync-enabled on the real API server, against the Konnect emulator: a change
// reaches the gateway, then the control plane (secrets redacted); the controller and its
// gateway are the control plane's nodes; Konnect down changes nothing for the gateway, and
// once it answers again the control plane catches up.
func TestKonnectSync(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createAll(t, app(ns, "echo", "echo.example.com"))
	kong := startEmulator(t, kongemu.DBLess)
	konnect, err := kongemu.NewKonnect(kongemu.KonnectOptions{ControlPlaneIDs: []string{"cp-" + ns}}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = konnect.Close() })
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(konnect.CertPEM))
	cert := konnect.ClientCert()

	r := startReplica(t, replicaSpec{name: "konnect", namespace: ns, gateways: []string{kong.URL},
		opts: manager.Options{KonnectRootCAs: roots},
		args: []string{"--konnect-sync-enabled", "--konnect-address", konnect.URL, "--konnect-control-plane-id", "cp-" + ns,
			"--konnect-tls-client-cert", string(cert.CertPEM), "--konnect-tls-client-key", string(cert.KeyPEM),
			"--konnect-upload-config-period", "10s"}})
	r.waitFirstSync(t, time.Minute)
	cp := konnect.ControlPlane("cp-" + ns)
	require.Eventually(t, func() bool { return cp.Entity("routes", routeName(ns, "echo")) != nil }, 40*time.Second, 100*time.Millisecond,
		"the configuration the gateway took reaches Konnect")
	require.Eventually(t, func() bool {
		types := map[string]int{}
		for _, n := range konnect.Nodes("cp-" + ns) {
			types[n.Type]++
		}
		return types[kongemu.KonnectNodeIngressController] == 1 && types[kongemu.KonnectNodeKongProxy] == 1
	}, 30*time.Second, 100*time.Millisecond, "the controller and its gateway are nodes")

	require.NoError(t, konnect.SetDown(true))
	createAll(t, app(ns, "late", "late.example.com"))
	require.Eventually(t, func() bool { return kong.Entity("routes", routeName(ns, "late")) != nil }, 10*time.Second, 20*time.Millisecond,
		"Konnect down: the gateway gets the change as always")
	require.Nil(t, cp.Entity("routes", routeName(ns, "late")))
	time.Sleep(12 * time.Second) // an upload period passes with Konnect down
	require.NoError(t, konnect.SetDown(false))
	require.Eventually(t, func() bool { return cp.Entity("routes", routeName(ns, "late")) != nil }, 60*time.Second, 100*time.Millisecond,
		"caught up once Konnect answers")
}
