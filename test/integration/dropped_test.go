package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/kongemu"
)

// A change that does not reach Kong says why (issue #42; docs/troubleshooting.md, "A change
// did not reach Kong", tried here): a Secret nobody refers to changed, an Ingress of another
// class created, a Service updated to the same content. Each event is counted under its
// outcome in konductor_events_total and logged at V(1) with the object and why, and
// /debug/graph says where each object stands: who refers to it, whether its payload is
// cached, the last translation that read it.
func TestADroppedChangeSaysWhy(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	apps(t, ns, 1)
	unused := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unused"}, Data: map[string][]byte{"k": []byte("a")}}
	require.NoError(t, admin.Create(ctx, unused))
	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL},
		args: []string{"--leader-elect=false", "--proxy-sync-seconds", "3600", "--dump-config", "--diagnostic-server-port", "0"}})
	r.waitFirstSync(t, time.Minute)
	var diag net.Addr
	require.Eventually(t, func() bool { diag = r.ctrl.DiagnosticsAddr(); return diag != nil }, 10*time.Second, 10*time.Millisecond)
	events := func(kind, outcome string) float64 {
		return metricValue(t, "konductor_events_total", map[string]string{"kind": kind, "outcome": outcome})
	}
	// Other tests' replicas share the registry: each count is read as a rise, the log line
	// names this test's objects.
	secretsBefore, ingressesBefore, servicesBefore := events("Secret", "not_referred"), events("Ingress", "other_class"), events("Service", "same_content")

	unused.Data["k"] = []byte("b")
	require.NoError(t, admin.Update(ctx, unused))
	other := "other"
	prefix := netv1.PathTypePrefix
	require.NoError(t, admin.Create(ctx, &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere"},
		Spec: netv1.IngressSpec{IngressClassName: &other, Rules: []netv1.IngressRule{{Host: "elsewhere.example.com",
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "app-0000", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}}))
	var svc corev1.Service
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-0000"}, &svc))
	// kubectl apply's copy of what was applied is not content translation reads.
	svc.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Service"}`}
	require.NoError(t, admin.Update(ctx, &svc))

	for _, want := range []struct{ kind, name, why string }{
		{"Secret", "unused", "not_referred"}, {"Ingress", "elsewhere", "other_class"}, {"Service", "app-0000", "same_content"},
	} {
		require.Eventually(t, func() bool {
			return r.logs.contains("event dropped: it cannot change the translation", `"kind"="`+want.kind+`"`, `"namespace"="`+ns+`"`,
				`"name"="`+want.name+`"`, `"why"="`+want.why+`"`)
		}, 10*time.Second, 20*time.Millisecond, "the log line of %s %s", want.kind, want.name)
	}
	require.Greater(t, events("Secret", "not_referred"), secretsBefore)
	require.Greater(t, events("Ingress", "other_class"), ingressesBefore)
	require.Greater(t, events("Service", "same_content"), servicesBefore)

	graph := func(kind, name string) map[string]any {
		q := url.Values{"kind": {kind}, "namespace": {ns}, "name": {name}}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/graph?%s", diag.(*net.TCPAddr).Port, q.Encode()))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	secret := graph("Secret", "unused")
	require.Equal(t, true, secret["cached"])
	require.Empty(t, secret["referredBy"], "nobody refers to it")
	require.Contains(t, secret["payload"], "not cached: nothing referred to it")
	ingress := graph("Ingress", "elsewhere")
	require.Equal(t, true, ingress["cached"])
	require.Empty(t, ingress["refersTo"], "another class's Ingress is not translated")
	service := graph("Service", "app-0000")
	require.Equal(t, []any{"Ingress " + ns + "/app-0000"}, service["referredBy"])
	require.Greater(t, service["lastReadByTranslation"], 0.0, "the first translation read it")
	require.Equal(t, service["translations"], service["lastReadByTranslation"], "no translation since: nothing changed for it")

	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/graph?kind=Nothing&name=x", diag.(*net.TCPAddr).Port))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
