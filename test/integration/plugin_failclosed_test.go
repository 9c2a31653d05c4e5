package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// Issue #26 item 0: a route is never served without a plugin it asks for. KIC's own fallback
// case (fallback-config-kong-plugin: one KongPlugin named by a Service, an Ingress, an
// HTTPRoute, a KongConsumer, a TCPIngress and a UDPIngress) run end to end, with the plugin
// refused by konductor's own check (a configuration Kong's schema refuses) or by the gateway
// (a plugin Kong does not have), in both modes; plus an Ingress naming a plugin that does not
// exist and one naming a plugin of another namespace without a ReferenceGrant. None of those
// objects' routes is ever in what the gateway holds (every configuration a DB-less gateway
// loaded, every route a database-backed one was asked to create), the objects carry the
// reason, an Ingress beside them is served, and fixing the plugin brings them back with it.
func TestRouteNeverServedWithoutItsPlugin(t *testing.T) {
	parallel(t)
	for _, mode := range []kongemu.Mode{kongemu.DBLess, kongemu.Postgres} {
		for _, refusedBy := range []string{"konductor", "gateway"} {
			t.Run(string(mode)+"/refused by "+refusedBy, func(t *testing.T) {
				testRouteNeverServedWithoutItsPlugin(t, mode, refusedBy)
			})
		}
	}
}

func testRouteNeverServedWithoutItsPlugin(t *testing.T, mode kongemu.Mode, refusedBy string) {
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	controller := "konghq.com/it-" + ns
	class, gw := ourGateway(ns, controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	plugin := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plugin"}, PluginName: "correlation-id",
		Config: apiextensionsv1.JSON{Raw: []byte(`{"header_name": 5}`)}} // Kong's schema: a string
	if refusedBy == "gateway" {
		// A plugin konductor has no schema for goes to Kong, which refuses it.
		plugin = &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plugin"}, PluginName: "no-such-plugin"}
	}
	uses := map[string]string{"konghq.com/plugins": "plugin"}
	withClass := func(m map[string]string) map[string]string {
		out := map[string]string{"kubernetes.io/ingress.class": "kong"}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	service := app(ns, "service", "example.com") // the Service, its EndpointSlice, an Ingress
	l4 := app(ns, "l4", "l4.example.com")[:2]    // the L4 ingresses' (a Kong service of their own)
	service[0].SetAnnotations(uses)
	ingress := service[2].(*netv1.Ingress)
	ingress.Name = "ingress"
	ingress.Annotations = uses
	ingress.Spec.Rules[0].HTTP.Paths[0].Path = "/ingress-service"
	port := gatewayv1.PortNumber(80)
	objs := append(append(service, l4...),
		class, gw, plugin,
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "httproute", Annotations: uses},
			Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
				Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{Name: "service", Port: &port}}}}}}}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "consumer", Annotations: withClass(uses)}, Username: "consumer"},
		&kongv1beta1.TCPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tcpingress", Annotations: withClass(uses)},
			Spec: kongv1beta1.TCPIngressSpec{Rules: []kongv1beta1.IngressRule{{Port: 9999, Backend: kongv1beta1.IngressBackend{ServiceName: "l4", ServicePort: 80}}}}},
		&kongv1beta1.UDPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "udpingress", Annotations: withClass(uses)},
			Spec: kongv1beta1.UDPIngressSpec{Rules: []kongv1beta1.UDPIngressRule{{Port: 9999, Backend: kongv1beta1.IngressBackend{ServiceName: "l4", ServicePort: 80}}}}},
		// A plugin of another namespace, which no ReferenceGrant opens to this one.
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "auth"}, PluginName: "key-auth"},
	)
	dangling := app(ns, "dangling", "dangling.example.com")
	dangling[2].SetAnnotations(map[string]string{"konghq.com/plugins": "no-such-kongplugin"})
	remote := app(ns, "remote", "remote.example.com")
	remote[2].SetAnnotations(map[string]string{"konghq.com/plugins": other + ":auth"})
	control := app(ns, "control", "control.example.com")
	objs = append(append(append(objs, dangling...), remote...), control...)
	createAll(t, objs)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	srv, err := kongemu.New(kongemu.Options{Mode: mode, AuditConfigRoutes: true}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	args := []string{"--leader-elect=false", "--gateway-api-controller-name", controller, "--watch-namespace", ns + "," + other}
	if mode == kongemu.Postgres {
		args = append(handoverArgs(ns), "--gateway-api-controller-name", controller, "--watch-namespace", ns+","+other)
	}
	startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{srv.URL}, args: args})

	require.Eventually(t, func() bool { return srv.Entity("routes", routeName(ns, "control")) != nil }, time.Minute, 50*time.Millisecond,
		"the Ingress that names no plugin is served")
	leftOut := []string{"Ingress/ingress", "Ingress/dangling", "Ingress/remote", "HTTPRoute/httproute", "TCPIngress/tcpingress",
		"UDPIngress/udpingress", "Service/service", "KongConsumer/consumer"}
	requireNeverServed := func() {
		t.Helper()
		for _, o := range servedObjects(srv.Emulator, ns) {
			require.NotContains(t, leftOut, o, "a route of %s reached the gateway", o)
		}
		require.Nil(t, srv.Entity("consumers", "consumer"), "the consumer that names the plugin")
	}
	// Each left-out object says why (a Warning Event, KongConfigurationTranslationFailed).
	reason := func(kind, name, says string) bool { return hasEvent(t, ns, kind, name, says) }
	if refusedBy == "konductor" {
		require.Eventually(t, func() bool {
			return reason("Ingress", "ingress", `KongPlugin "plugin" is refused`) && reason("Service", "service", `KongPlugin "plugin" is refused`) &&
				reason("KongPlugin", "plugin", "failed schema validation")
		}, 30*time.Second, 100*time.Millisecond, "the objects and the plugin say why")
	} else {
		require.Eventually(t, func() bool {
			return reason("Ingress", "ingress", "plugin 'no-such-plugin' not enabled") && reason("KongPlugin", "plugin", "plugin 'no-such-plugin' not enabled")
		}, 30*time.Second, 100*time.Millisecond, "the plugin and its Ingress carry Kong's message: %v", eventsIn(t, ns))
	}
	require.Eventually(t, func() bool {
		return reason("Ingress", "dangling", `"no-such-kongplugin" does not exist`) && reason("Ingress", "remote", "no ReferenceGrant in namespace "+other)
	}, 30*time.Second, 100*time.Millisecond, "the Ingresses naming a missing or a foreign plugin say why")
	// A change elsewhere still reaches the gateway, and changes nothing for them.
	createAll(t, app(ns, "later", "later.example.com"))
	require.Eventually(t, func() bool { return srv.Entity("routes", routeName(ns, "later")) != nil }, 30*time.Second, 20*time.Millisecond)
	requireNeverServed()

	// Fixed (a KongPlugin's plugin name is immutable: the fix is a new KongPlugin), the plugin
	// brings its objects back, with it.
	require.NoError(t, admin.Delete(ctx, plugin))
	require.Eventually(t, func() bool {
		return admin.Create(ctx, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plugin"}, PluginName: "correlation-id"}) == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		rt := srv.Entity("routes", fmt.Sprintf("%s.ingress.service.example.com.80", ns))
		if rt == nil {
			return false
		}
		for _, p := range srv.Entities("plugins") {
			if r, ok := p["route"].(map[string]any); ok && r["id"] == rt["id"] && p["name"] == "correlation-id" {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the Ingress is served again, with its plugin")
	// The others stay out: their plugins still cannot be applied.
	for _, o := range servedObjects(srv.Emulator, ns) {
		require.NotContains(t, []string{"Ingress/dangling", "Ingress/remote"}, o)
	}
}

// servedObjects are the objects of namespace ns ("Kind/name") whose routes any configuration
// the gateway held had: every configuration a DB-less gateway loaded (AuditConfigRoutes),
// every route a database-backed one created or replaced, and the routes it holds now.
func servedObjects(e *kongemu.Emulator, ns string) []string {
	var out []string
	add := func(tags []string) {
		var kind, name, namespace string
		for _, t := range tags {
			switch k, v, _ := strings.Cut(t, ":"); k {
			case "k8s-kind":
				kind = v
			case "k8s-name":
				name = v
			case "k8s-namespace":
				namespace = v
			}
		}
		if o := kind + "/" + name; namespace == ns && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	for _, a := range e.Audit() {
		for _, tags := range a.RouteTags {
			add(tags)
		}
		if a.Entity == "routes" && a.Method != "DELETE" {
			add(a.Tags)
		}
	}
	for _, rt := range e.Entities("routes") {
		var tags []string
		for _, t := range rt["tags"].([]any) {
			tags = append(tags, fmt.Sprint(t))
		}
		add(tags)
	}
	return out
}

func eventsIn(t *testing.T, ns string) []string {
	var evs corev1.EventList
	require.NoError(t, admin.List(context.Background(), &evs, client.InNamespace(ns)))
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
	}
	return out
}

// hasEvent reports whether an Event of namespace ns is about the object (kind, name) and says
// text.
func hasEvent(t *testing.T, ns, kind, name, text string) bool {
	var evs corev1.EventList
	require.NoError(t, admin.List(context.Background(), &evs, client.InNamespace(ns)))
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
