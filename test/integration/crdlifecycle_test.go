package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// consumerCRD is the KongConsumer CRD, installed and removed while the controller runs;
// tcpRouteCRD a Gateway API CRD installed while it runs.
var (
	consumerCRD = filepath.Join(repoRoot(), "config", "crd", "configuration.konghq.com_kongconsumers.yaml")
	tcpRouteCRD = filepath.Join(repoRoot(), "config", "crd", "gateway.networking.k8s.io_tcproutes.yaml")
)

// crdsExcept lists config/crd's CRD files but the ones named.
func crdsExcept(t *testing.T, except ...string) []string {
	t.Helper()
	dir := filepath.Join(repoRoot(), "config", "crd")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" && !slices.Contains(except, p) {
			out = append(out, p)
		}
	}
	return out
}

// A CRD installed after start is read without a restart: the KongConsumer CRD (and a Gateway
// API one, TCPRoute) installed while the controller runs, a KongConsumer made then reaches Kong. The CRD removed: once discovery
// confirms, the kind is dropped and the consumer leaves Kong; no push in between left out
// anything else (the routes of the Ingresses, push by push). Installed again, read again.
func TestCRDInstalledAndRemovedWhileRunning(t *testing.T) {
	o := startOwnEnv(t, crdsExcept(t, consumerCRD, tcpRouteCRD)...)
	ns := "crds"
	o.createNamespace(t, ns)
	o.createAll(t, app(ns, "web", "web.example.com"))
	o.createAll(t, app(ns, "api", "api.example.com"))
	kong := startPushRecorder(t)
	// TCPRoutes are read with the GatewayAlpha gate only, as in KIC.
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.srv.URL},
		args: []string{"--leader-elect=false", "--feature-gates=GatewayAlpha=true"}, restConfig: o.config})
	require.Eventually(t, func() bool { return routesOf(kong.kong) == 2 }, time.Minute, 20*time.Millisecond)
	require.True(t, r.logs.contains("CRD not installed; kind skipped", "KongConsumer"))

	_, err := envtest.InstallCRDs(o.config, envtest.CRDInstallOptions{Paths: []string{consumerCRD, tcpRouteCRD}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return r.logs.contains("CRD installed; kind now read", "KongConsumer") && r.logs.contains("CRD installed; kind now read", "TCPRoute")
	}, time.Minute, 20*time.Millisecond, "the controller starts reading KongConsumers and TCPRoutes")
	o.createAll(t, []client.Object{consumer(ns, "alice")})
	require.Eventually(t, func() bool { return kong.kong.Entity("consumers", "alice") != nil }, time.Minute, 20*time.Millisecond,
		"a consumer of a CRD installed after start reaches Kong without a restart")

	require.NoError(t, envtest.UninstallCRDs(o.config, envtest.CRDInstallOptions{Paths: []string{consumerCRD}}))
	require.Eventually(t, func() bool {
		return kong.kong.Entity("consumers", "alice") == nil &&
			r.logs.contains("CRD removed (API discovery confirms); kind dropped", "KongConsumer")
	}, time.Minute, 20*time.Millisecond, "the removed CRD's objects leave Kong")
	require.Equal(t, 2, routesOf(kong.kong))
	for i, n := range kong.history("routes") {
		require.Equal(t, 2, n, "push %d: routes %v", i, kong.history("routes"))
	}

	_, err = envtest.InstallCRDs(o.config, envtest.CRDInstallOptions{Paths: []string{consumerCRD}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		// The CRD is served again a moment after it is established; create when it takes.
		return o.client.Create(context.Background(), consumer(ns, "bob")) == nil
	}, time.Minute, 100*time.Millisecond)
	require.Eventually(t, func() bool { return kong.kong.Entity("consumers", "bob") != nil }, time.Minute, 20*time.Millisecond,
		"a CRD installed again is read again")
	require.False(t, r.logs.contains("not syncing: the cache could not be read"), "no round failed on a kind that came or went")
	select {
	case err := <-r.done:
		t.Fatalf("the controller stopped: %v", err)
	default:
	}
}

func consumer(ns, name string) *kongv1.KongConsumer {
	return &kongv1.KongConsumer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
		Username:   name,
	}
}
