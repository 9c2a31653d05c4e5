package integration

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manager"
)

// konnectFor starts a Konnect emulator serving the control plane cp and returns it with the
// flags and options that point a replica at it.
func konnectFor(t *testing.T, cp string) (*kongemu.KonnectServer, []string, manager.Options) {
	t.Helper()
	konnect, err := kongemu.NewKonnect(kongemu.KonnectOptions{ControlPlaneIDs: []string{cp}}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = konnect.Close() })
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(konnect.CertPEM))
	cert := konnect.ClientCert()
	return konnect, []string{"--konnect-address", konnect.URL, "--konnect-control-plane-id", cp,
		"--konnect-tls-client-cert", string(cert.CertPEM), "--konnect-tls-client-key", string(cert.KeyPEM)}, manager.Options{KonnectRootCAs: roots}
}

// --konnect-sync-enabled on the real API server, against the Konnect emulator: a change
// reaches the gateway, then the control plane (secrets redacted); the controller and its
// gateway are the control plane's nodes; Konnect down changes nothing for the gateway, and
// once it answers again the control plane catches up.
func TestKonnectSync(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createAll(t, app(ns, "echo", "echo.example.com"))
	kong := startEmulator(t, kongemu.DBLess)
	konnect, flags, opts := konnectFor(t, "cp-"+ns)

	r := startReplica(t, replicaSpec{name: "konnect", namespace: ns, gateways: []string{kong.URL}, opts: opts,
		args: append(flags, "--konnect-sync-enabled", "--konnect-upload-config-period", "10s", "--konnect-refresh-node-period", "30s")})
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
	controllerPing := func() int64 {
		for _, n := range konnect.Nodes("cp-" + ns) {
			if n.Type == kongemu.KonnectNodeIngressController {
				return n.LastPing
			}
		}
		return 0
	}
	firstPing := controllerPing()

	// Konnect down for a minute: every change made meanwhile reaches the gateway as always.
	require.NoError(t, konnect.SetDown(true))
	downAt := time.Now()
	for _, name := range []string{"late", "later"} {
		createAll(t, app(ns, name, name+".example.com"))
		require.Eventually(t, func() bool { return kong.Entity("routes", routeName(ns, name)) != nil }, 10*time.Second, 20*time.Millisecond,
			"Konnect down: the gateway gets the change as always")
		time.Sleep(30*time.Second - time.Since(downAt)%(30*time.Second)) // several upload periods, failing
	}
	require.Nil(t, cp.Entity("routes", routeName(ns, "late")))
	require.True(t, r.logs.contains("Failed to upload configuration to Konnect"), "uploads were tried and failed")
	require.NoError(t, konnect.SetDown(false))
	require.Eventually(t, func() bool { return cp.Entity("routes", routeName(ns, "later")) != nil }, 60*time.Second, 100*time.Millisecond,
		"caught up once Konnect answers")
	require.Eventually(t, func() bool { return controllerPing() > firstPing }, 40*time.Second, 100*time.Millisecond,
		"the nodes are refreshed every --konnect-refresh-node-period")
	require.Len(t, konnect.Nodes("cp-"+ns), 2, "refreshed in place: no node added")
}

// --konnect-licensing-enabled and --konnect-disable-consumers-sync on the real API server: the
// license is fetched from Konnect, stored in its Secret in the controller's namespace and
// given to the Enterprise gateway; the control plane gets the routes but no consumer while the
// gateway has them; the controller's node is named after its Pod. After a restart with Konnect
// unreachable, the stored license still reaches a new gateway.
func TestKonnectLicenseAndConsumers(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cp := "cp-" + ns
	objs := app(ns, "echo", "echo.example.com")
	objs = append(objs,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-key", Labels: map[string]string{"konghq.com/credential": "key-auth"}},
			StringData: map[string]string{"key": "alice-secret"}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice", Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			Username: "alice", Credentials: []string{"alice-key"}})
	createAll(t, objs)
	konnect, flags, opts := konnectFor(t, cp)
	const payload = `{"license":{"payload":{"license_expiration_date":"2099-01-01"}}}`
	konnect.SetLicense(cp, payload)
	enterprise := func() *kongemu.Server {
		srv, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, Edition: kongemu.Enterprise}).Start()
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	licensed := func(kong *kongemu.Server) bool {
		ls := kong.Entities("licenses")
		return len(ls) == 1 && ls[0]["payload"] == payload
	}
	flags = append(flags, "--konnect-sync-enabled", "--konnect-licensing-enabled", "--konnect-disable-consumers-sync",
		"--konnect-upload-config-period", "10s", "--leader-elect=false")
	environ := []string{"POD_NAME=konductor-0", "POD_NAMESPACE=" + ns}

	kong := enterprise()
	r := startReplica(t, replicaSpec{name: "licensed", namespace: ns, gateways: []string{kong.URL}, opts: opts, args: flags, environ: environ})
	r.waitFirstSync(t, time.Minute)
	require.Eventually(t, func() bool { return licensed(kong) }, 30*time.Second, 50*time.Millisecond, "Konnect's license reaches the gateway")
	require.NotNil(t, kong.Entity("consumers", "alice"), "the gateway has the consumer")
	var sec corev1.Secret
	require.Eventually(t, func() bool {
		return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "konnect-license-" + cp}, &sec) == nil && string(sec.Data["payload"]) == payload
	}, 30*time.Second, 50*time.Millisecond, "stored in the controller's namespace")

	cpState := konnect.ControlPlane(cp)
	require.Eventually(t, func() bool { return cpState.Entity("routes", routeName(ns, "echo")) != nil }, 40*time.Second, 100*time.Millisecond)
	require.Empty(t, cpState.Entities("consumers"), "no consumer reaches Konnect")
	require.Empty(t, cpState.Entities("keyauth_credentials"))
	require.Empty(t, cpState.Entities("licenses"), "nor the license")
	var hostnames []string
	for _, n := range konnect.Nodes(cp) {
		if n.Type == kongemu.KonnectNodeIngressController {
			hostnames = append(hostnames, n.Hostname)
		}
	}
	require.Equal(t, []string{ns + "/konductor-0"}, hostnames, "the controller's node is named after its Pod")

	r.stop(t)
	require.NoError(t, konnect.SetDown(true))
	fresh := enterprise()
	r2 := startReplica(t, replicaSpec{name: "restarted", namespace: ns, gateways: []string{fresh.URL}, opts: opts, args: flags, environ: environ})
	r2.waitFirstSync(t, time.Minute)
	require.Eventually(t, func() bool { return licensed(fresh) }, 30*time.Second, 50*time.Millisecond,
		"Konnect unreachable: the stored license reaches a new gateway")
}
