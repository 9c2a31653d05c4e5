package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
)

// A DB-less controller restarts while one object is refused: the new controller learns what
// the gateway holds (GET /status, GET /config), sends the refused configuration once (a
// refusal cannot be known across a restart: nothing is persisted), and the fallback, which
// the gateway already holds, not at all: the gateway never reloads, never holds less, and the
// refused configuration is not sent again.
func TestDBLessRestartSendsNothingTheGatewayHolds(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	const n, broken = 20, "app-0005"
	for i := range n {
		name := fmt.Sprintf("app-%04d", i)
		objs := app(ns, name, name+".example.com")
		if name == broken {
			objs[2].SetAnnotations(map[string]string{"konghq.com/plugins": "custom"})
		}
		createAll(t, objs)
	}
	createAll(t, []client.Object{&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom"}, PluginName: "no-such-plugin"}})
	kong := startEmulator(t, kongemu.DBLess)
	args := []string{"--leader-elect=false"}

	first := startReplica(t, replicaSpec{name: "first", namespace: ns, gateways: []string{kong.URL}, args: args})
	first.waitFirstSync(t, time.Minute)
	require.Eventually(t, func() bool { return routesOf(kong.Emulator) == n-1 }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(2 * time.Second) // a few resyncs: nothing more is sent
	first.stop(t)

	mark := kong.AuditMark()
	posts := kong.RequestCount(http.MethodPost, "/config")
	second := startReplica(t, replicaSpec{name: "second", namespace: ns, gateways: []string{kong.URL}, args: args})
	second.waitFirstSync(t, time.Minute)
	time.Sleep(3 * time.Second) // three resync periods
	require.Empty(t, kong.AuditSince(mark), "the gateway loaded a configuration it already held")
	require.Equal(t, 1, kong.RequestCount(http.MethodPost, "/config")-posts,
		"the refused configuration once, the fallback not at all")
	require.Equal(t, 1, kong.RequestCount(http.MethodGet, "/config"), "what the gateway holds is read once")
	require.Equal(t, n-1, routesOf(kong.Emulator))
	require.True(t, second.logs.contains("fallback configuration tried"))
}
