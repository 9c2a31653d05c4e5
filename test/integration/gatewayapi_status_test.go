package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// gwStatusSummary is what the test reads of a Gateway's status: its conditions, addresses,
// and per listener attachedRoutes, supportedKinds and conditions, as "Type=Status/Reason@gen".
func gwStatusSummary(g *gatewayv1.Gateway) string {
	var b strings.Builder
	conds := func(cs []metav1.Condition) {
		for _, c := range cs {
			fmt.Fprintf(&b, " %s=%s/%s@%d", c.Type, c.Status, c.Reason, c.ObservedGeneration)
		}
	}
	conds(g.Status.Conditions)
	for _, a := range g.Status.Addresses {
		fmt.Fprintf(&b, " addr=%s:%s", *a.Type, a.Value)
	}
	for _, l := range g.Status.Listeners {
		fmt.Fprintf(&b, " | %s attached=%d kinds=", l.Name, l.AttachedRoutes)
		for _, k := range l.SupportedKinds {
			fmt.Fprintf(&b, "%s,", k.Kind)
		}
		conds(l.Conditions)
	}
	return b.String()
}

// parentSummary is a route's status.parents, one "controller section Accepted ResolvedRefs@gen"
// a line.
func parentSummary(hr *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, p := range hr.Status.Parents {
		section := ""
		if p.ParentRef.SectionName != nil {
			section = string(*p.ParentRef.SectionName)
		}
		s := fmt.Sprintf("%s %s/%s", p.ControllerName, p.ParentRef.Name, section)
		for _, typ := range []string{"Accepted", "ResolvedRefs"} {
			if c := meta.FindStatusCondition(p.Conditions, typ); c != nil {
				s += fmt.Sprintf(" %s=%s/%s@%d", typ, c.Status, c.Reason, c.ObservedGeneration)
			}
		}
		out = append(out, s)
	}
	return out
}

// gatewayOf is a GatewayClass of controller named ns (classes are cluster-wide: one class
// and one controller per test) and its Gateway "kong" in ns with listeners http (80) and
// alt (8080).
func gatewayOf(ns, controller string) (*gatewayv1.GatewayClass, *gatewayv1.Gateway) {
	return ourGateway(ns, controller,
		gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
		gatewayv1.Listener{Name: "alt", Protocol: gatewayv1.HTTPProtocolType, Port: 8080},
	)
}

// httpRoute is an HTTPRoute on listener section of Gateway "kong", host <name>.example.com,
// to port 80 of Service backend.
func httpRoute(ns, name, section, backend string) *gatewayv1.HTTPRoute {
	s := gatewayv1.SectionName(section)
	port := gatewayv1.PortNumber(80)
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", SectionName: &s}}},
		Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(backend), Port: &port}}}}}},
	}}
}

// gatewayAPIStatusWritten reports whether class, Gateway "kong" in ns and route hold the
// status of our controller: the class and Gateway Accepted, the route's entry Accepted.
func gatewayAPIStatusWritten(ctx context.Context, ns, controller, route string) bool {
	var c gatewayv1.GatewayClass
	var g gatewayv1.Gateway
	var hr gatewayv1.HTTPRoute
	if admin.Get(ctx, client.ObjectKey{Name: ns}, &c) != nil || admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kong"}, &g) != nil ||
		admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: route}, &hr) != nil {
		return false
	}
	routeAccepted := false
	for _, p := range hr.Status.Parents {
		routeAccepted = routeAccepted || string(p.ControllerName) == controller && meta.IsStatusConditionTrue(p.Conditions, "Accepted")
	}
	return meta.IsStatusConditionTrue(c.Status.Conditions, "Accepted") && meta.IsStatusConditionTrue(g.Status.Conditions, "Accepted") &&
		len(g.Status.Listeners) == 2 && routeAccepted
}

// The leader writes Gateway API status: the class Accepted; the Gateway Accepted and
// Programmed with the published address; each listener's conditions, supportedKinds and
// attachedRoutes; each route's parents entry of our controller. Another controller's entry
// on a route is left as it is, and a route moved from one listener to the other moves in
// both listeners' counts.
func TestGatewayAPIStatus(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns // classes are cluster-wide: one controller per test
	createAll(t, app(ns, "echo", "echo.example.com")[:2])
	class, gw := gatewayOf(ns, controller)
	route := func(name, section, backend string) *gatewayv1.HTTPRoute { return httpRoute(ns, name, section, backend) }
	createAll(t, []client.Object{class, gw, route("web", "http", "echo"), route("broken", "http", "missing")})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(t, time.Minute)

	require.Eventually(t, func() bool {
		var c gatewayv1.GatewayClass
		if admin.Get(ctx, client.ObjectKeyFromObject(class), &c) != nil {
			return false
		}
		a := meta.FindStatusCondition(c.Status.Conditions, "Accepted")
		return a != nil && a.Status == metav1.ConditionTrue && a.Reason == "Accepted" && a.ObservedGeneration == c.Generation
	}, 30*time.Second, 50*time.Millisecond, "the GatewayClass is Accepted")

	gwKey, webKey, brokenKey := client.ObjectKeyFromObject(gw), client.ObjectKey{Namespace: ns, Name: "web"}, client.ObjectKey{Namespace: ns, Name: "broken"}
	listenerConds := func(gen int64) string {
		return fmt.Sprintf("Accepted=True/Accepted@%d ResolvedRefs=True/ResolvedRefs@%d Conflicted=False/NoConflicts@%d Programmed=True/Programmed@%d", gen, gen, gen, gen)
	}
	wantGateway := func(http, alt int) string {
		return fmt.Sprintf(" Accepted=True/Accepted@1 Programmed=True/Programmed@1 addr=IPAddress:192.0.2.10"+
			" | http attached=%d kinds=HTTPRoute,GRPCRoute, %s | alt attached=%d kinds=HTTPRoute,GRPCRoute, %s", http, listenerConds(1), alt, listenerConds(1))
	}
	var last string
	requireGateway := func(want string, msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			var g gatewayv1.Gateway
			if admin.Get(ctx, gwKey, &g) != nil {
				return false
			}
			last = gwStatusSummary(&g)
			return last == want
		}, 30*time.Second, 50*time.Millisecond, "%s: want\n%s\nhave\n%s", msg, want, &last)
	}
	requireParents := func(key client.ObjectKey, want []string, msg string) *gatewayv1.HTTPRoute {
		t.Helper()
		var hr gatewayv1.HTTPRoute
		var have []string
		require.Eventually(t, func() bool {
			if admin.Get(ctx, key, &hr) != nil {
				return false
			}
			have = parentSummary(&hr)
			return fmt.Sprint(have) == fmt.Sprint(want)
		}, 30*time.Second, 50*time.Millisecond, "%s: want %q, have %q", msg, want, &have)
		return &hr
	}

	requireGateway(wantGateway(2, 0), "both routes attach to listener http")
	requireParents(webKey, []string{controller + " kong/http Accepted=True/Accepted@1 ResolvedRefs=True/ResolvedRefs@1"}, "web is accepted")
	requireParents(brokenKey, []string{controller + " kong/http Accepted=True/Accepted@1 ResolvedRefs=False/BackendNotFound@1"},
		"broken is accepted but its backend is missing")

	// Another controller writes its own entry on web.
	other := gatewayv1.RouteParentStatus{
		ParentRef:      gatewayv1.ParentReference{Name: "their-gateway"},
		ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "theirs",
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}},
	}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var hr gatewayv1.HTTPRoute
		if err := admin.Get(ctx, webKey, &hr); err != nil {
			return err
		}
		hr.Status.Parents = append(hr.Status.Parents, other)
		return admin.Status().Update(ctx, &hr)
	}))
	otherLine := "example.com/other their-gateway/ Accepted=True/Accepted@1"

	// web moves from listener http to listener alt.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var hr gatewayv1.HTTPRoute
		if err := admin.Get(ctx, webKey, &hr); err != nil {
			return err
		}
		alt := gatewayv1.SectionName("alt")
		hr.Spec.ParentRefs[0].SectionName = &alt
		return admin.Update(ctx, &hr)
	}))
	requireGateway(wantGateway(1, 1), "web counts on alt, no longer on http")
	hr := requireParents(webKey, []string{otherLine, controller + " kong/alt Accepted=True/Accepted@2 ResolvedRefs=True/ResolvedRefs@2"},
		"our entry follows the route to alt; the other controller's stays where it was")
	require.Equal(t, "theirs", hr.Status.Parents[0].Conditions[0].Message, "the other controller's entry is unchanged")
	require.True(t, other.Conditions[0].LastTransitionTime.Equal(&hr.Status.Parents[0].Conditions[0].LastTransitionTime))

	// web leaves our Gateway: our entry goes, theirs stays, the counts follow.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var hr gatewayv1.HTTPRoute
		if err := admin.Get(ctx, webKey, &hr); err != nil {
			return err
		}
		hr.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "their-gateway"}}
		return admin.Update(ctx, &hr)
	}))
	requireGateway(wantGateway(1, 0), "web counts nowhere")
	requireParents(webKey, []string{otherLine}, "only the other controller's entry is left")
}

// Listener status from Kong's real listens (KIC's determineListenersFromDataPlane): the
// publish Services' ports, matched by targetPort with the proxy and stream listens Kong
// reports in GET /, decide which listeners Kong serves. The proxy Service maps 80 to Kong's
// 8000 (HTTP) and the UDP Service 9999 to a udp stream listen: listener http/80 and udp/9999
// are accepted, alt/8080 is PortUnavailable (HTTP is served, not there), tcp/9000
// UnsupportedProtocol (no port serves TCP). The Gateway's konghq.com/publish-service naming
// the proxy Service alone takes the UDP port and the UDP proxy's address away; naming another
// Service makes the Gateway not accepted.
func TestGatewayListenersFromKongListens(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	createAll(t, []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kong-proxy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "proxy", Port: 80, TargetPort: intstr.FromInt32(8000), Protocol: tcp},
			{Name: "proxy-tls", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: tcp}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kong-udp"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "udp", Port: 9999, TargetPort: intstr.FromInt32(9999), Protocol: udp}}}},
	})
	class, gw := ourGateway(ns, controller,
		gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
		gatewayv1.Listener{Name: "alt", Protocol: gatewayv1.HTTPProtocolType, Port: 8080},
		gatewayv1.Listener{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 9000},
		gatewayv1.Listener{Name: "udp", Protocol: gatewayv1.UDPProtocolType, Port: 9999},
	)
	createAll(t, []client.Object{class, gw})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, StreamListen: []string{"0.0.0.0:9999 udp reuseport"}}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = kong.Close() })
	r := startReplica(t, replicaSpec{name: "listens", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller,
		"--publish-service", ns + "/kong-proxy", "--publish-service-udp", ns + "/kong-udp",
	}})
	r.waitFirstSync(t, time.Minute)

	var last string
	requireAccepted := func(want string, msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			var g gatewayv1.Gateway
			if admin.Get(ctx, client.ObjectKeyFromObject(gw), &g) != nil {
				return false
			}
			var b strings.Builder
			if c := meta.FindStatusCondition(g.Status.Conditions, "Accepted"); c != nil {
				fmt.Fprintf(&b, "gateway=%s/%s", c.Status, c.Reason)
			}
			for _, l := range g.Status.Listeners {
				if c := meta.FindStatusCondition(l.Conditions, "Accepted"); c != nil {
					fmt.Fprintf(&b, " %s=%s/%s", l.Name, c.Status, c.Reason)
				}
			}
			last = b.String()
			return last == want
		}, 30*time.Second, 50*time.Millisecond, "%s: want\n%s\nhave\n%s", msg, want, &last)
	}
	requireAccepted("gateway=True/ListenersNotValid http=True/Accepted alt=False/PortUnavailable tcp=False/UnsupportedProtocol udp=True/Accepted",
		"listeners judged by Kong's listens")

	annotate := func(v string) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var g gatewayv1.Gateway
			if err := admin.Get(ctx, client.ObjectKeyFromObject(gw), &g); err != nil {
				return err
			}
			g.Annotations = map[string]string{"konghq.com/publish-service": v}
			return admin.Update(ctx, &g)
		}))
	}
	addresses := func() []string {
		var g gatewayv1.Gateway
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(gw), &g))
		var out []string
		for _, a := range g.Status.Addresses {
			out = append(out, a.Value)
		}
		return out
	}
	clusterIP := func(name string) string {
		var svc corev1.Service
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc))
		return svc.Spec.ClusterIP
	}
	require.ElementsMatch(t, []string{clusterIP("kong-proxy"), clusterIP("kong-udp")}, addresses(), "both proxies' addresses")
	annotate(ns + "/kong-proxy")
	requireAccepted("gateway=True/ListenersNotValid http=True/Accepted alt=False/PortUnavailable tcp=False/UnsupportedProtocol udp=False/UnsupportedProtocol",
		"the annotation names the proxy Service alone")
	require.Equal(t, []string{clusterIP("kong-proxy")}, addresses(), "the addresses of the proxy the annotation names")
	annotate("elsewhere/kong-proxy")
	requireAccepted("gateway=False/Invalid http=True/Accepted alt=True/Accepted tcp=True/Accepted udp=True/Accepted",
		"a Service this controller was not given: the Gateway is not accepted")
}
