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
	discoveryv1 "k8s.io/api/discovery/v1"
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

// kicInstall is one of Kong's charts installed for a test: its RBAC and Services applied in
// ns, a user authenticated as its controller's ServiceAccount, and its controller container's
// environment with what points outside the test replaced (the webhook's address and
// certificate, the Gateway API controller name that keeps the test's GatewayClass its own;
// namespace/name values moved to ns).
type kicInstall struct {
	ns          string
	objs        []*unstructured.Unstructured
	user        *envtest.AuthenticatedUser
	env         map[string]string
	webhookAddr string
	controller  string
}

func installKICChart(t *testing.T, file, wantSA string) *kicInstall {
	t.Helper()
	ctx := context.Background()
	in := &kicInstall{ns: newNamespace(t)}
	in.objs = kicChart(t, file, in.ns)
	var sa, webhookCert, webhookKey string
	for _, o := range in.objs {
		switch o.GetKind() {
		case "ServiceAccount":
			if !strings.HasSuffix(o.GetName(), "-gateway") {
				sa = o.GetName()
			}
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
	require.Equal(t, wantSA, sa)
	require.NotEmpty(t, webhookCert)
	var err error
	in.user, err = env.AddUser(envtest.User{Name: "system:serviceaccount:" + in.ns + ":" + sa}, adminConfig)
	require.NoError(t, err)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in.webhookAddr = l.Addr().String()
	require.NoError(t, l.Close())
	in.controller = "konductor.test/" + in.ns
	in.env = controllerEnv(t, in.objs)
	require.Equal(t, "0.0.0.0:8080", in.env["CONTROLLER_ADMISSION_WEBHOOK_LISTEN"], "the chart enables the webhook")
	for k, v := range in.env {
		if rest, ok := strings.CutPrefix(v, "kong/"); ok { // namespace/name values, moved with the chart
			in.env[k] = in.ns + "/" + rest
		}
	}
	in.env["CONTROLLER_ADMISSION_WEBHOOK_LISTEN"] = in.webhookAddr
	// The chart mounts this Secret at /admission-webhook, KIC's default files; given inline here.
	in.env["CONTROLLER_ADMISSION_WEBHOOK_CERT"], in.env["CONTROLLER_ADMISSION_WEBHOOK_KEY"] = webhookCert, webhookKey
	in.env["CONTROLLER_GATEWAY_API_CONTROLLER_NAME"] = in.controller
	return in
}

func (in *kicInstall) environ() []string {
	var out []string
	for k, v := range in.env {
		out = append(out, k+"="+v)
	}
	return out
}

// apps creates what the controller must sync: an Ingress (with its Service and endpoints),
// and a Gateway of the test's class with an HTTPRoute to the same Service.
func (in *kicInstall) apps(t *testing.T) (*gatewayv1.Gateway, *gatewayv1.HTTPRoute) {
	t.Helper()
	createAll(t, app(in.ns, "echo", "echo.example.com"))
	class, gw := ourGateway(in.ns, in.controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	port := gatewayv1.PortNumber(80)
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: in.ns, Name: "web"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
		Hostnames:       []gatewayv1.Hostname{"web.example.com"},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}}},
	}}
	createAll(t, []client.Object{class, gw, route})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })
	return gw, route
}

// check is what a complete install shows: both routes in Kong, Gateway API status written
// under KIC's role (update, not patch), Ingress status from the chart's --publish-service, the
// webhook the chart enables answering with the chart's certificate, and nothing forbidden.
func (in *kicInstall) check(t *testing.T, r *replica, kong *kongemu.Emulator, gw *gatewayv1.Gateway, route *gatewayv1.HTTPRoute) {
	t.Helper()
	ctx := context.Background()
	r.waitFirstSync(t, time.Minute)
	require.Eventually(t, func() bool {
		return kong.Entity("routes", routeName(in.ns, "echo")) != nil && len(kong.Entities("routes")) == 2
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
	require.Eventually(t, func() bool {
		var ing unstructured.Unstructured
		ing.SetAPIVersion("networking.k8s.io/v1")
		ing.SetKind("Ingress")
		if admin.Get(ctx, client.ObjectKey{Namespace: in.ns, Name: "echo"}, &ing) != nil {
			return false
		}
		lb, _, _ := unstructured.NestedSlice(ing.Object, "status", "loadBalancer", "ingress")
		return len(lb) == 1
	}, 30*time.Second, 50*time.Millisecond, "Ingress status from the chart's --publish-service")

	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Namespace: in.ns, Name: "echo",
			Kind:     metav1.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
			Resource: metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}}}
	var ing unstructured.Unstructured
	ing.SetAPIVersion("networking.k8s.io/v1")
	ing.SetKind("Ingress")
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: in.ns, Name: "echo"}, &ing))
	raw, err := ing.MarshalJSON()
	require.NoError(t, err)
	review.Request.Object.Raw = raw
	body, err := json.Marshal(review)
	require.NoError(t, err)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the chart's self-signed certificate
	var answer admissionv1.AdmissionReview
	require.Eventually(t, func() bool {
		resp, err := hc.Post("https://"+in.webhookAddr+"/", "application/json", bytes.NewReader(body))
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

// KIC's own chart (kong/kong 3.4.1, the sidecar install) with konductor as its controller:
// the chart's RBAC (ClusterRole, Role, bindings to its ServiceAccount) and its controller
// container's environment, unchanged but for what points outside this test (the Admin API
// URL, the webhook's address, the Gateway API controller name). konductor syncs Ingresses
// and Gateway API routes, writes Ingress and Gateway API status (KIC's role grants update,
// not patch, on the latter), and serves the admission webhook the chart enables with the
// chart's certificate; nothing is forbidden.
func TestKICChartRBACAndEnvironment(t *testing.T) {
	parallel(t)
	in := installKICChart(t, "kong-kong-3.4.1-default.yaml", "kong-kong")
	kong := startEmulator(t, kongemu.DBLess)
	require.Equal(t, "https://localhost:8444", in.env["CONTROLLER_KONG_ADMIN_URL"], "the sidecar's Admin API")
	in.env["CONTROLLER_KONG_ADMIN_URL"] = kong.URL
	gw, route := in.apps(t)
	r := startReplica(t, replicaSpec{name: "kic-chart", namespace: in.ns, gateways: []string{kong.URL},
		restConfig: in.user.Config(), environ: in.environ()})
	in.check(t, r, kong.Emulator, gw, route)
}

// Kong's kong/ingress chart (0.24, the install Kong's documentation leads with: the controller
// and the gateway in two Deployments) with konductor as its controller: the gateway is found
// through the chart's admin Service (gateway discovery, CONTROLLER_KONG_ADMIN_SVC, port name
// kong-admin-tls, TLS without verification as the chart sets), with the chart's RBAC only
// (EndpointSlices cluster-wide, Leases in the release's namespace). The same complete install
// as the sidecar chart.
func TestKICIngressChartDiscovery(t *testing.T) {
	parallel(t)
	in := installKICChart(t, "kong-ingress-0.24.0-default.yaml", "kong-controller")
	require.Equal(t, in.ns+"/kong-gateway-admin", in.env["CONTROLLER_KONG_ADMIN_SVC"], "the chart's gateway discovery")
	require.Empty(t, in.env["CONTROLLER_KONG_ADMIN_URL"])
	require.Equal(t, "true", in.env["CONTROLLER_KONG_ADMIN_TLS_SKIP_VERIFY"])

	// The gateway Deployment's Pod: an Admin API on the admin Service's port, listed in its
	// EndpointSlice as Kubernetes would (a certificate the controller does not verify, as
	// the chart's gateway has a self-signed one).
	addr := hostAddresses(t, 1)[0]
	cert, _ := adminTLS(t, "kong-gateway-admin", in.ns)
	kong := kongemu.New(kongemu.Options{Mode: kongemu.DBLess})
	g := startGateway(t, kong, addr, cert)
	name, port, ready := "kong-admin-tls", int32(adminPort), true
	createAll(t, []client.Object{&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: in.ns, Name: "kong-gateway-admin-1", Labels: map[string]string{discoveryv1.LabelServiceName: "kong-gateway-admin"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{g.addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: in.ns, Name: "kong-gateway-0"}}},
	}})

	gw, route := in.apps(t)
	r := startReplica(t, replicaSpec{name: "kic-ingress-chart", namespace: in.ns,
		restConfig: in.user.Config(), environ: in.environ()})
	in.check(t, r, kong, gw, route)
	require.True(t, r.logs.contains("gateway discovery"), r.logs.String())
}
