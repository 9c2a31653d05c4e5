package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	netv1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongrules"
)

// Issue #45: a DB-less Kong whose Admin API takes at most 1 MB (nginx_admin_client_max_body_size
// = 1m, read from its GET /). A round whose body is larger is refused before it is sent: the
// controller's Pod gets an Event naming the size, the limit and the setting to raise, the
// metric says the same, and the gateway keeps the configuration it held. Once the body fits
// again, it is sent.
func TestBodyOverTheGatewaysLimitIsNotSent(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createAll(t, app(ns, "small", "small.example.com"))

	kong, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, AdminMaxBodySize: "1m"}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { kong.Close() })
	startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{"--leader-elect=false"},
		environ: []string{"POD_NAME=konductor-0", "POD_NAMESPACE=" + ns}})
	has := func(name string) bool { return kong.Entity("routes", routeName(ns, name)) != nil }
	require.Eventually(t, func() bool { return has("small") }, time.Minute, 20*time.Millisecond)

	// Twenty-three Ingresses, each with a plugin of 50 KiB (request-termination's body is free
	// text): 1.15 MB together, no object of them large enough to be left out for the body's
	// size alone (an object past 64 KiB and 1% of the body would be, so that the others still
	// reach Kong: TestOversizedObjectsAreLeftOutSoTheOthersReachKong).
	const bigs = 23
	body := strings.Repeat("x", 50<<10)
	for i := range bigs {
		name := fmt.Sprintf("big-%d", i)
		createAll(t, []client.Object{&kongv1.KongPlugin{ObjectMeta: netv1.ObjectMeta{Namespace: ns, Name: name}, PluginName: "request-termination",
			Config: apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"status_code":200,"content_type":"text/plain","body":%q}`, body))}}})
		big := app(ns, name, name+".example.com")
		big[2].SetAnnotations(map[string]string{"konghq.com/plugins": name})
		createAll(t, big)
	}

	podEvent := func() string {
		var evs corev1.EventList
		require.NoError(t, admin.List(ctx, &evs, client.InNamespace(ns)))
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == "konductor-0" && e.Reason == "KongConfigurationApplyFailed" {
				return e.Message
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return podEvent() != "" }, 30*time.Second, 50*time.Millisecond, "an Event on the controller's Pod")
	msg := podEvent()
	for _, want := range []string{kong.URL, "over its limit of 1048576 bytes", kongrules.AdminMaxBodySizeKey, kongrules.AdminMaxBodySizeEnv} {
		require.Contains(t, msg, want)
	}
	gw := map[string]string{"dataplane": kong.URL}
	require.Equal(t, float64(1<<20), metricValue(t, "konductor_configuration_body_limit_bytes", gw))
	require.Greater(t, metricValue(t, "konductor_configuration_body_too_large_bytes", gw), float64(1<<20))

	// Not sent, and the gateway keeps what it held, round after round (--proxy-sync-seconds 1).
	// (The rounds while the Ingresses were being created fit until one did not.)
	held := kong.ConfigHash()
	posts := kong.RequestCount(http.MethodPost, "/config")
	time.Sleep(1500 * time.Millisecond)
	require.Equal(t, posts, kong.RequestCount(http.MethodPost, "/config"), "nothing sent")
	require.Equal(t, held, kong.ConfigHash())
	require.True(t, has("small"))
	require.False(t, has(fmt.Sprintf("big-%d", bigs-1)), "the round with every plugin was not sent")

	// The plugins made small: the body fits and is sent.
	for i := range bigs {
		var p kongv1.KongPlugin
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("big-%d", i)}, &p))
		p.Config = apiextensionsv1.JSON{Raw: []byte(`{"status_code":200,"body":"small"}`)}
		require.NoError(t, admin.Update(ctx, &p))
	}
	require.Eventually(t, func() bool { return has("big-0") && has(fmt.Sprintf("big-%d", bigs-1)) }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		return metricValue(t, "konductor_configuration_body_too_large_bytes", gw) == 0
	}, 10*time.Second, 20*time.Millisecond)
}
