package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
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
	parallel(t)
	ctx := context.Background()
	pluginConf := func(ns string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plugin-conf"},
			Data:       map[string][]byte{"config": []byte(`{"header_name":"X-From-Secret"}`)},
		}
	}
	t.Run("created while the controller runs", func(t *testing.T) {
		ns, kong := dblessSynced(t, 1, "--proxy-sync-seconds", "3600")
		require.NoError(t, admin.Create(ctx, pluginConf(ns)))
		referSecretLater(t, ns, kong)
	})
	// The informer's first list is read in pages whose Secrets lose their data page by page
	// (store.PagedList); such a Secret is read whole too once referenced.
	t.Run("listed when the controller starts", func(t *testing.T) {
		ns := newNamespace(t)
		apps(t, ns, 1)
		require.NoError(t, admin.Create(ctx, pluginConf(ns)))
		kong := startEmulator(t, kongemu.DBLess)
		r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL},
			args: []string{"--leader-elect=false", "--proxy-sync-seconds", "3600"}})
		r.waitFirstSync(t, time.Minute)
		referSecretLater(t, ns, kong)
	})
}

// referSecretLater makes a KongPlugin take its configuration from the Secret plugin-conf of
// ns, which nothing referred to so far, and checks that it reaches Kong, then a change of it.
func referSecretLater(t *testing.T, ns string, kong *kongemu.Server) {
	ctx := context.Background()
	secret := &corev1.Secret{}
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

// countingLister records the lists a ListerWatcher answers: the items and continue token of
// each page.
type countingLister struct {
	toolscache.ListerWatcher
	pages []*corev1.SecretList
}

func (c *countingLister) List(opts metav1.ListOptions) (runtime.Object, error) {
	out, err := c.ListerWatcher.List(opts)
	if list, ok := out.(*corev1.SecretList); ok {
		c.pages = append(c.pages, list.DeepCopy())
	}
	return out, err
}

// The API server answers the Secrets informer's list in pages (store.PagedList asks for the
// most recent state, which it pages), and every Secret of a page is transformed before the
// next page is asked for.
func TestSecretsAreListedInPages(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const n, pageSize = 120, 50
	for i := range n {
		require.NoError(t, admin.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s%03d", i)},
			Data:       map[string][]byte{"payload": []byte("unrelated")},
		}))
	}
	cs, err := kubernetes.NewForConfig(adminConfig)
	require.NoError(t, err)
	server := &countingLister{ListerWatcher: toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", ns, fields.Everything())}
	var transformed []int // Secrets transformed when each page arrived
	payloads := store.NewSecretPayloads(nil)
	transform := func(in any) (any, error) {
		for len(transformed) < len(server.pages) {
			transformed = append(transformed, 0)
		}
		transformed[len(server.pages)-1]++
		return payloads.Transform(in)
	}

	// What an informer asks first: any resourceVersion ("0", the watch cache's).
	got, err := store.PagedList(server, pageSize, transform).List(metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	require.NoError(t, err)
	require.Len(t, server.pages, 3, "120 Secrets in pages of 50")
	require.Len(t, server.pages[0].Items, pageSize)
	require.NotEmpty(t, server.pages[0].Continue)
	require.Equal(t, []int{50, 50, 20}, transformed, "each page transformed before the next was read")
	list := got.(*corev1.SecretList)
	require.Len(t, list.Items, n)
	require.NotEmpty(t, list.ResourceVersion)
	for _, s := range list.Items {
		require.Nil(t, s.Data, s.Name)
		require.True(t, store.PayloadNotCached(&s), s.Name)
	}

	// Why PagedList asks for the most recent state: for resourceVersion "0" this API server
	// answers from its watch cache, which (as of Kubernetes 1.37) ignores the limit.
	var any0 corev1.SecretList
	require.NoError(t, cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("secrets").
		VersionedParams(&metav1.ListOptions{ResourceVersion: "0", Limit: pageSize}, metav1.ParameterCodec).Do(ctx).Into(&any0))
	t.Logf("resourceVersion 0, limit %d: %d Secrets, continue %q", pageSize, len(any0.Items), any0.Continue)
}
