package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// With KIC's GatewayAlpha gate, a TCPRoute and a UDPRoute on a Gateway's TCP and UDP
// listeners reach Kong as stream routes matching the listeners' ports (destinations), and
// each route's parents entry for our controller is Accepted with its refs resolved.
func TestGatewayAPIL4Routes(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	createAll(t, app(ns, "echo", "echo.example.com")[:2])
	class, gw := ourGateway(ns, controller,
		gatewayv1.Listener{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 9000},
		gatewayv1.Listener{Name: "udp", Protocol: gatewayv1.UDPProtocolType, Port: 9001})
	port := gatewayv1.PortNumber(80)
	backend := []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}
	tcp := &gatewayv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-tcp"}, Spec: gatewayv1.TCPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
		Rules:           []gatewayv1.TCPRouteRule{{BackendRefs: backend}},
	}}
	udp := &gatewayv1.UDPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-udp"}, Spec: gatewayv1.UDPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
		Rules:           []gatewayv1.UDPRouteRule{{BackendRefs: backend}},
	}}
	createAll(t, []client.Object{class, gw, tcp, udp})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
		"--feature-gates=GatewayAlpha=true",
	}})
	r.waitFirstSync(t, time.Minute)

	for _, want := range []struct{ name, protocol, port string }{
		{fmt.Sprintf("tcproute.%s.echo-tcp.0.0", ns), "tcp", "9000"},
		{fmt.Sprintf("udproute.%s.echo-udp.0.0", ns), "udp", "9001"},
	} {
		var loaded string
		require.Eventually(t, func() bool {
			route := loadedEntity(kong.LoadedConfig(), "services", "routes", want.name)
			loaded = fmt.Sprint(route)
			dests, _ := route["destinations"].([]any)
			if route == nil || len(dests) != 1 {
				return false
			}
			d, _ := dests[0].(map[string]any)
			return fmt.Sprint(route["protocols"]) == "["+want.protocol+"]" && fmt.Sprint(d["port"]) == want.port
		}, 30*time.Second, 50*time.Millisecond, "Kong has the stream route %s: %s", want.name, &loaded)
	}

	parentConditions := func(obj client.Object, parents func() []gatewayv1.RouteParentStatus) func() []metav1.Condition {
		return func() []metav1.Condition {
			if admin.Get(ctx, client.ObjectKeyFromObject(obj), obj) != nil {
				return nil
			}
			for _, p := range parents() {
				if string(p.ControllerName) == controller {
					return p.Conditions
				}
			}
			return nil
		}
	}
	tcpParent := parentConditions(tcp, func() []gatewayv1.RouteParentStatus { return tcp.Status.Parents })
	udpParent := parentConditions(udp, func() []gatewayv1.RouteParentStatus { return udp.Status.Parents })
	for _, c := range []struct {
		what string
		get  func() []metav1.Condition
		typ  string
	}{{"TCPRoute", tcpParent, "Accepted"}, {"TCPRoute", tcpParent, "ResolvedRefs"}, {"UDPRoute", udpParent, "Accepted"}, {"UDPRoute", udpParent, "ResolvedRefs"}} {
		var have string
		require.Eventually(t, func() bool {
			cond := meta.FindStatusCondition(c.get(), c.typ)
			if cond == nil {
				return false
			}
			have = string(cond.Status) + "/" + cond.Reason
			return have == "True/"+c.typ
		}, 30*time.Second, 50*time.Millisecond, "%s parent %s: have %s", c.what, c.typ, &have)
	}
}

// ourGateway is a GatewayClass named ns of controller and a Gateway "kong" of it in ns with
// listeners.
func ourGateway(ns, controller string, listeners ...gatewayv1.Listener) (*gatewayv1.GatewayClass, *gatewayv1.Gateway) {
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kong"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(ns), Listeners: listeners}}
	return class, gw
}
