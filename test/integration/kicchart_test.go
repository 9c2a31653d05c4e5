package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// kicChart is one of Kong's charts as rendered for KIC (testdata/kic-charts), moved to
// namespace ns: every object of namespace kong is put in ns, cluster-scoped RBAC gets ns in
// its name, and bindings follow.
func kicChart(t *testing.T, file, ns string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kic-charts", file))
	require.NoError(t, err)
	objs := decodeManifests(t, string(b))
	for _, o := range objs {
		if o.GetNamespace() == "kong" {
			o.SetNamespace(ns)
		}
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding":
			o.SetName(o.GetName() + "-" + ns)
		}
		if ref, ok, _ := unstructured.NestedMap(o.Object, "roleRef"); ok && ref["kind"] == "ClusterRole" {
			require.NoError(t, unstructured.SetNestedField(o.Object, fmt.Sprint(ref["name"])+"-"+ns, "roleRef", "name"))
		}
		if subjects, ok, _ := unstructured.NestedSlice(o.Object, "subjects"); ok {
			for _, s := range subjects {
				s.(map[string]any)["namespace"] = ns
			}
			require.NoError(t, unstructured.SetNestedSlice(o.Object, subjects, "subjects"))
		}
	}
	return objs
}

// controllerEnv is the environment the chart gives its controller container (values only;
// the downward API's are set by the test).
func controllerEnv(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			if c["name"] != "ingress-controller" {
				continue
			}
			env := map[string]string{}
			for _, e := range c["env"].([]any) {
				e := e.(map[string]any)
				if v, ok := e["value"].(string); ok {
					env[e["name"].(string)] = v
				}
			}
			return env
		}
	}
	t.Fatal("no ingress-controller container")
	return nil
}

// KIC's own chart (kong/kong 3.4.1, the sidecar install) with konductor as its controller:
// the chart's RBAC (ClusterRole, Role, bindings to its ServiceAccount) and its controller
// container's environment, unchanged but for what points outside this test (the Admin API
// URL, the webhook's address, the Gateway API controller name that keeps this test's
// GatewayClass its own). konductor syncs Ingresses and Gateway API routes, writes Ingress and
// Gateway API status (KIC's role grants update, not patch, on the latter), and serves the
// admission webhook the chart enables with the chart's certificate; nothing is forbidden.
func TestKICChartRBACAndEnvironment(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	objs := kicChart(t, "kong-kong-3.4.1-default.yaml", ns)
	var sa, webhookCert, webhookKey string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
			fallthrough
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service":
			o := o.DeepCopy()
			require.NoError(t, admin.Create(ctx, o), "creating %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
			if o.GetNamespace() == "" {
				t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
			}
		case "Secret":
			if strings.HasSuffix(o.GetName(), "-validation-webhook-keypair") {
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				crt, err := base64.StdEncoding.DecodeString(data["tls.crt"])
				require.NoError(t, err)
				key, err := base64.StdEncoding.DecodeString(data["tls.key"])
				require.NoError(t, err)
				webhookCert, webhookKey = string(crt), string(key)
			}
		}
	}
	require.Equal(t, "kong-kong", sa)
	require.NotEmpty(t, webhookCert)
	user, err := env.AddUser(envtest.User{Name: "system:serviceaccount:" + ns + ":" + sa}, adminConfig)
	require.NoError(t, err)

	kong := startEmulator(t, kongemu.DBLess)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	webhookAddr := l.Addr().String()
	require.NoError(t, l.Close())
	controller := "konductor.test/" + ns
	chartEnv := controllerEnv(t, objs)
	require.Equal(t, "https://localhost:8444", chartEnv["CONTROLLER_KONG_ADMIN_URL"], "the sidecar's Admin API")
	require.Equal(t, "0.0.0.0:8080", chartEnv["CONTROLLER_ADMISSION_WEBHOOK_LISTEN"], "the chart enables the webhook")
	for k, v := range chartEnv {
		if rest, ok := strings.CutPrefix(v, "kong/"); ok { // namespace/name values, moved with the chart
			chartEnv[k] = ns + "/" + rest
		}
	}
	chartEnv["CONTROLLER_KONG_ADMIN_URL"] = kong.URL
	chartEnv["CONTROLLER_ADMISSION_WEBHOOK_LISTEN"] = webhookAddr
	// The chart mounts this Secret at /admission-webhook, KIC's default files; given inline here.
	chartEnv["CONTROLLER_ADMISSION_WEBHOOK_CERT"], chartEnv["CONTROLLER_ADMISSION_WEBHOOK_KEY"] = webhookCert, webhookKey
	chartEnv["CONTROLLER_GATEWAY_API_CONTROLLER_NAME"] = controller
	var environ []string
	for k, v := range chartEnv {
		environ = append(environ, k+"="+v)
	}

	createAll(t, app(ns, "echo", "echo.example.com"))
	class, gw := ourGateway(ns, controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	port := gatewayv1.PortNumber(80)
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
		Hostnames:       []gatewayv1.Hostname{"web.example.com"},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}}},
	}}
	createAll(t, []client.Object{class, gw, route})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	r := startReplica(t, replicaSpec{name: "kic-chart", namespace: ns, gateways: []string{kong.URL},
		restConfig: user.Config(), environ: environ})
	r.waitFirstSync(t, time.Minute)
	require.Eventually(t, func() bool {
		return kong.Entity("routes", routeName(ns, "echo")) != nil && len(kong.Entities("routes")) == 2
	}, 30*time.Second, 20*time.Millisecond, "the Ingress's and the HTTPRoute's routes")

	require.Eventually(t, func() bool {
		var g gatewayv1.Gateway
		var hr gatewayv1.HTTPRoute
		if admin.Get(ctx, client.ObjectKeyFromObject(gw), &g) != nil || admin.Get(ctx, client.ObjectKeyFromObject(route), &hr) != nil {
			return false
		}
		c := meta.FindStatusCondition(g.Status.Conditions, "Programmed")
		return c != nil && c.Status == metav1.ConditionTrue && len(hr.Status.Parents) == 1
	}, 30*time.Second, 50*time.Millisecond, "Gateway API status written under KIC's role (update, not patch)")
	var proxy corev1.Service
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kong-kong-proxy"}, &proxy))
	require.Eventually(t, func() bool {
		var ing unstructured.Unstructured
		ing.SetAPIVersion("networking.k8s.io/v1")
		ing.SetKind("Ingress")
		if admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &ing) != nil {
			return false
		}
		lb, _, _ := unstructured.NestedSlice(ing.Object, "status", "loadBalancer", "ingress")
		return len(lb) == 1
	}, 30*time.Second, 50*time.Millisecond, "Ingress status from the chart's --publish-service")

	// The webhook the chart enables answers with the chart's certificate.
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Namespace: ns, Name: "echo",
			Kind:     metav1.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
			Resource: metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}}}
	var ing unstructured.Unstructured
	ing.SetAPIVersion("networking.k8s.io/v1")
	ing.SetKind("Ingress")
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &ing))
	raw, err := ing.MarshalJSON()
	require.NoError(t, err)
	review.Request.Object.Raw = raw
	body, err := json.Marshal(review)
	require.NoError(t, err)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the chart's self-signed certificate
	var answer admissionv1.AdmissionReview
	require.Eventually(t, func() bool {
		resp, err := hc.Post("https://"+webhookAddr+"/", "application/json", bytes.NewReader(body))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&answer) == nil && answer.Response != nil
	}, 30*time.Second, 100*time.Millisecond, "the webhook answers")
	require.True(t, answer.Response.Allowed, "%+v", answer.Response.Result)

	for _, word := range []string{"forbid", "Forbidden"} {
		require.False(t, r.logs.contains(word), "no permission was missing:\n%s", r.logs)
	}
}
