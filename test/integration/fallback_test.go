package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
)

// The case (a) and (b): 100 Ingresses, one of them with a KongPlugin Kong refuses.
// With konductor's defaults (fallback configuration on) the 99 others and later changes
// reach Kong, the plugin and its Ingress get Events with Kong's message, and fixing the
// plugin brings the Ingress back; in database mode the same objects are left out.
//
// The plugin is one Kong does not have: a configuration Kong's schema refuses for a plugin
// konductor knows is caught in translation and never sent (the translator checks plugin
// configurations against kongrules), so what reaches Kong and is refused there is a plugin
// that only the gateway can judge.
func TestFallbackIsolatesARefusedPluginDBLess(t *testing.T) {
	parallel(t)
	testFallbackIsolatesARefusedPlugin(t, kongemu.DBLess, []string{"--leader-elect=false"})
}

func TestFallbackIsolatesARefusedPluginDatabase(t *testing.T) {
	parallel(t)
	testFallbackIsolatesARefusedPlugin(t, kongemu.Postgres, nil)
}

func testFallbackIsolatesARefusedPlugin(t *testing.T, mode kongemu.Mode, args []string) {
	ctx := context.Background()
	ns := newNamespace(t)
	const n, broken = 100, "app-0042"
	for i := range n {
		name := fmt.Sprintf("app-%04d", i)
		objs := app(ns, name, name+".example.com")
		if name == broken {
			objs[2].SetAnnotations(map[string]string{"konghq.com/plugins": "custom"})
		}
		createAll(t, objs)
	}
	createAll(t, []client.Object{&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom"}, PluginName: "no-such-plugin"}})

	kong := startEmulator(t, mode)
	if mode == kongemu.Postgres {
		args = handoverArgs(ns)
	}
	// Ingress status: the addresses go to the Ingresses Kong holds, not to the refused one.
	args = append(args, "--publish-status-address", "192.0.2.10")
	startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: args})
	has := func(name string) bool { return kong.Entity("routes", routeName(ns, name)) != nil }
	// Both modes leave the broken Ingress out: DB-less, the fallback configuration has no
	// trace of it; database mode has Kong validate the plugin before it writes anything, so
	// the Ingress's route is never created without its plugin.
	require.Eventually(t, func() bool { return routesOf(kong.Emulator) == n-1 }, time.Minute, 50*time.Millisecond,
		"the 99 other Ingresses reach Kong")
	require.False(t, has(broken))
	require.Empty(t, kong.Entities("plugins"))

	// Events with Kong's message, on the plugin and on the Ingress that uses it.
	// DB-less: POST /config's flattened error; database: POST /schemas/plugins/validate.
	kongMessage := "plugin 'no-such-plugin' not enabled"
	eventsOn := func(kind, name string) []string {
		var evs corev1.EventList
		require.NoError(t, admin.List(ctx, &evs, client.InNamespace(ns)))
		var out []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
				out = append(out, e.Reason+" "+e.Message)
			}
		}
		return out
	}
	withMessage := func(kind, name string) bool {
		for _, e := range eventsOn(kind, name) {
			if strings.HasPrefix(e, "KongConfigurationApplyFailed ") && strings.Contains(e, kongMessage) {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool { return withMessage("KongPlugin", "custom") && withMessage("Ingress", broken) },
		30*time.Second, 100*time.Millisecond, "events naming Kong's message")

	addressed := func(name string) bool {
		var ing netv1.Ingress
		require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ing))
		return len(ing.Status.LoadBalancer.Ingress) == 1 && ing.Status.LoadBalancer.Ingress[0].IP == "192.0.2.10"
	}
	require.Eventually(t, func() bool { return addressed("app-0000") && addressed("app-0099") }, 30*time.Second, 50*time.Millisecond,
		"the Ingresses in the configuration Kong took get the address")

	// A later change reaches Kong while the plugin stays broken.
	createAll(t, app(ns, "app-new", "app-new.example.com"))
	require.Eventually(t, func() bool { return has("app-new") }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return addressed("app-new") }, 30*time.Second, 20*time.Millisecond, "a new Ingress too")
	require.False(t, addressed(broken), "the Ingress Kong does not route gets no address")
	if mode == kongemu.DBLess {
		// KIC's metrics, as its dashboard reads them: the refused push, the fallback taken,
		// the refused object; and the change delivered through the fallback.
		gw := map[string]string{"dataplane": kong.URL}
		with := func(kv ...string) map[string]string {
			out := map[string]string{"dataplane": kong.URL}
			for i := 0; i < len(kv); i += 2 {
				out[kv[i]] = kv[i+1]
			}
			return out
		}
		require.Eventually(t, func() bool {
			return metricValue(t, "konductor_event_to_push_duration_milliseconds", gw) >= 1
		}, 10*time.Second, 20*time.Millisecond)
		require.GreaterOrEqual(t, metricValue(t, "ingress_controller_configuration_push_count",
			with("success", "false", "failure_reason", "other", "protocol", "db-less")), 1.0)
		require.GreaterOrEqual(t, metricValue(t, "ingress_controller_fallback_configuration_push_count",
			with("success", "true", "protocol", "db-less")), 1.0)
		require.Equal(t, 1.0, metricValue(t, "ingress_controller_configuration_push_broken_resource_count", gw))
		require.Positive(t, metricValue(t, "ingress_controller_fallback_configuration_push_last", gw))
		require.Positive(t, metricValue(t, "konductor_configuration_size_bytes", gw))
		// konductor_cache_synced is not read here: the process's registry holds the gauge
		// of the controller assembled last, another parallel test's whose cache may still
		// be syncing (TestControllerStateGauges, internal/status, checks the gauge).
	}

	// Fixing the plugin brings its Ingress back (a KongPlugin's plugin name is immutable:
	// the fix is a new KongPlugin of the same name).
	require.NoError(t, admin.Delete(ctx, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom"}}))
	require.Eventually(t, func() bool {
		return admin.Create(ctx, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom"}, PluginName: "correlation-id"}) == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return has(broken) && len(kong.Entities("plugins")) == 1 }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return addressed(broken) }, 30*time.Second, 20*time.Millisecond, "fixed, it gets the address")
	require.Equal(t, n+1, routesOf(kong.Emulator))
}
