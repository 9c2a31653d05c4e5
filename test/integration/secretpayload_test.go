package integration

import (
	"context"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/kongemu"
)

// pluginHeader is the header_name of the correlation-id plugin Kong holds, "" without one.
func pluginHeader(kong *kongemu.Server) string {
	for _, p := range kong.Entities("plugins") {
		if p["name"] == "correlation-id" {
			if cfg, ok := p["config"].(map[string]any); ok {
				h, _ := cfg["header_name"].(string)
				return h
			}
		}
	}
	return ""
}

// A Secret nothing referred to when it was cached is kept there without its data; when a
// KongPlugin comes to take its configuration from it, the Secret is read whole from the API
// server, and a later change to it reaches Kong too (issue #13, memory).
func TestSecretReferencedLaterIsReadWhole(t *testing.T) {
	ns, kong := dblessSynced(t, 1, "--proxy-sync-seconds", "3600")
	ctx := context.Background()

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plugin-conf"},
		Data:       map[string][]byte{"config": []byte(`{"header_name":"X-From-Secret"}`)},
	}
	require.NoError(t, admin.Create(ctx, secret))
	// An unrelated change makes a round after the Secret's event: the graph it leaves still
	// refers to no Secret, so the Secret stays cached without its data.
	var ing netv1.Ingress
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-0000"}, &ing))
	ing.Spec.Rules[0].Host = "step1.example.com"
	require.NoError(t, admin.Update(ctx, &ing))
	require.Eventually(t, func() bool {
		return kong.Entity("routes", ns+".app-0000.app-0000.step1.example.com.80") != nil
	}, 30*time.Second, 5*time.Millisecond)

	plugin := &kongv1.KongPlugin{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "corr"},
		PluginName: "correlation-id",
		ConfigFrom: &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: "plugin-conf", Key: "config"}},
	}
	require.NoError(t, admin.Create(ctx, plugin))
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-0000"}, &ing))
	if ing.Annotations == nil {
		ing.Annotations = map[string]string{}
	}
	ing.Annotations["konghq.com/plugins"] = "corr"
	require.NoError(t, admin.Update(ctx, &ing))
	require.Eventually(t, func() bool { return pluginHeader(kong) == "X-From-Secret" }, 30*time.Second, 5*time.Millisecond,
		"the plugin's configuration from the Secret never reached Kong")

	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "plugin-conf"}, secret))
	secret.Data["config"] = []byte(`{"header_name":"X-Changed"}`)
	require.NoError(t, admin.Update(ctx, secret))
	require.Eventually(t, func() bool { return pluginHeader(kong) == "X-Changed" }, 30*time.Second, 5*time.Millisecond,
		"the Secret's change never reached Kong")
}
