package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/kongemu"
)

// Every object that exists when the controller starts is in its first configuration: the
// first POST /config already holds all of them, and it is the only one.
func TestObjectsCreatedBeforeStartAreAllInTheFirstSync(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	const n = 50
	apps(t, ns, n)
	kong := startEmulator(t, kongemu.DBLess)

	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{"--leader-elect=false"}})
	took := r.waitFirstSync(t, time.Minute)
	t.Logf("start to first completed sync: %s", took)

	require.Equal(t, 1, kong.RequestCount(http.MethodPost, "/config"), "one configuration, complete from the start")
	require.Len(t, kong.Entities("routes"), n)
	require.Len(t, kong.Entities("services"), n)
	require.Len(t, kong.Entities("targets"), n)
	require.NotNil(t, kong.Entity("routes", routeName(ns, "app-0000")))
	require.False(t, r.logs.contains("Kong CRDs installed whose objects konductor does not translate yet"),
		"every Kong CRD installed here is translated: no start-up line names one")
	for _, kind := range []string{"KongPlugin,", "KongClusterPlugin", "KongConsumer", "TCPIngress", "KongUpstreamPolicy", "KongVault", "KongCustomEntity", "KongLicense"} {
		require.False(t, r.logs.contains("does not translate yet", kind), "%s is translated", kind)
	}
}

// dblessSynced creates n apps in a namespace of their own and one replica (no leader
// election) syncing them to a DB-less emulator, and waits for its first sync.
func dblessSynced(t *testing.T, n int, args ...string) (string, *kongemu.Server) {
	t.Helper()
	ns := newNamespace(t)
	apps(t, ns, n)
	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL},
		args: append([]string{"--leader-elect=false"}, args...)})
	r.waitFirstSync(t, time.Minute)
	return ns, kong
}

func TestIngressChangeReachesKong(t *testing.T) {
	parallel(t)
	// The resync period is an hour: only the change event can bring a change to Kong.
	ns, kong := dblessSynced(t, 3, "--proxy-sync-seconds", "3600")

	ctx := context.Background()
	var ing netv1.Ingress
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-0001"}, &ing))
	ing.Spec.Rules[0].Host = "renamed.example.com"
	changed := time.Now()
	require.NoError(t, admin.Update(ctx, &ing))

	newRoute := ns + ".app-0001.app-0001.renamed.example.com.80"
	require.Eventually(t, func() bool { return kong.Entity("routes", newRoute) != nil }, 30*time.Second, 5*time.Millisecond)
	t.Logf("change to Kong: %s", time.Since(changed))
	require.Nil(t, kong.Entity("routes", routeName(ns, "app-0001")), "the old route is gone")
	require.Len(t, kong.Entities("routes"), 3)
}

func TestDeletedIngressIsRemovedFromKong(t *testing.T) {
	parallel(t)
	ns, kong := dblessSynced(t, 3, "--proxy-sync-seconds", "3600")
	require.NotNil(t, kong.Entity("routes", routeName(ns, "app-0002")))

	ing := &netv1.Ingress{}
	require.NoError(t, admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "app-0002"}, ing))
	require.NoError(t, admin.Delete(context.Background(), ing))
	require.Eventually(t, func() bool { return kong.Entity("routes", routeName(ns, "app-0002")) == nil }, 30*time.Second, 5*time.Millisecond)
	require.Len(t, kong.Entities("routes"), 2)
	// Kong services exist for the routes that use them (translation-rules.md §3.1): with its only
	// Ingress gone, the Service has no Kong service either.
	require.Len(t, kong.Entities("services"), 2)
}

// The leader writes the published address into the status of the Ingresses it serves.
func TestIngressStatusIsPublished(t *testing.T) {
	parallel(t)
	ns, _ := dblessSynced(t, 2, "--publish-status-address", "192.0.2.10,kong.example.net")
	for _, name := range []string{"app-0000", "app-0001"} {
		require.Eventually(t, func() bool {
			var ing netv1.Ingress
			if admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &ing) != nil {
				return false
			}
			lb := ing.Status.LoadBalancer.Ingress
			return len(lb) == 2 && lb[0].IP == "192.0.2.10" && lb[1].Hostname == "kong.example.net"
		}, 30*time.Second, 10*time.Millisecond, "Ingress %s has no published address", name)
	}
}
