package gatewayapi

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Reattach attaches again the changed routes of any kinds, shares the others, and gives up
// (ok false) when a changed route moves to other listeners (or comes or goes) or when the
// input holds a route the changed keys do not name; the result is Attach of the new input.
func TestReattachRoutesOfSeveralKinds(t *testing.T) {
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: DefaultControllerName}}
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "kong"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong",
		Listeners: []gatewayv1.Listener{
			{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, AllowedRoutes: all},
			{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 9000, AllowedRoutes: all},
			{Name: "tcp2", Protocol: gatewayv1.TCPProtocolType, Port: 9001, AllowedRoutes: all},
		}}}
	parent := func(section string) []gatewayv1.ParentReference {
		return []gatewayv1.ParentReference{{Name: "kong", Namespace: ptr(gatewayv1.Namespace("gw")), SectionName: ptr(gatewayv1.SectionName(section))}}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "default", Name: name} }
	grpc := Route{Kind: KindGRPCRoute, Object: &gatewayv1.GRPCRoute{ObjectMeta: meta("g")}, ParentRefs: parent("http"), Hostnames: []gatewayv1.Hostname{"a.example.com"}}
	tcp := Route{Kind: KindTCPRoute, Object: &gatewayv1.TCPRoute{ObjectMeta: meta("t")}, ParentRefs: parent("tcp")}
	http := Route{Kind: KindHTTPRoute, Object: &gatewayv1.HTTPRoute{ObjectMeta: meta("h")}, ParentRefs: parent("http")}
	input := func(routes ...Route) Input {
		return Input{GatewayClasses: []*gatewayv1.GatewayClass{class}, Gateways: []*gatewayv1.Gateway{gw}, Routes: routes}
	}
	before := Attach(input(grpc, tcp, http))
	require.Equal(t, []string{"http attached 2", "tcp attached 1", "tcp2 attached 0",
		"GRPCRoute g: http a.example.com", "HTTPRoute h: http", "TCPRoute t: tcp"}, describeAttachment(before))
	keyOf := func(r Route) RouteKey { return RouteKey{r.Kind, r.Object.GetNamespace(), r.Object.GetName()} }

	// The GRPCRoute's hostnames and the TCPRoute changed, on the same listeners.
	grpc2 := grpc
	grpc2.Hostnames = []gatewayv1.Hostname{"b.example.com"}
	tcp2 := Route{Kind: KindTCPRoute, Object: &gatewayv1.TCPRoute{ObjectMeta: meta("t")}, ParentRefs: parent("tcp")}
	got, ok := before.Reattach(Input{Routes: []Route{grpc2, tcp2}}, []RouteKey{keyOf(grpc), keyOf(tcp)})
	require.True(t, ok)
	want := Attach(input(grpc2, tcp2, http))
	require.Equal(t, describeAttachment(want), describeAttachment(got))
	require.Same(t, before.Route(KindHTTPRoute, http.Object), got.Route(KindHTTPRoute, http.Object), "an unchanged route's attachment is shared")
	require.Equal(t, grpc2.Hostnames, got.Route(KindGRPCRoute, grpc.Object).Route.Hostnames)

	// A route deleted (its key, no route in the input): its listener counts one less.
	_, ok = before.Reattach(Input{}, []RouteKey{keyOf(tcp)})
	require.False(t, ok)

	// The TCPRoute moved to the other TCP listener: the listeners' counts change.
	moved := Route{Kind: KindTCPRoute, Object: tcp.Object, ParentRefs: parent("tcp2")}
	_, ok = before.Reattach(Input{Routes: []Route{moved}}, []RouteKey{keyOf(tcp)})
	require.False(t, ok)

	// The input holds a route of another kind than the key names.
	_, ok = before.Reattach(Input{Routes: []Route{tcp}}, []RouteKey{{KindUDPRoute, "default", "t"}})
	require.False(t, ok)
}

// describeAttachment is each listener's count and each route's listeners and hostnames.
func describeAttachment(a *Attachment) []string {
	var out []string
	for _, g := range a.Gateways {
		for _, l := range g.Listeners {
			out = append(out, string(l.Listener.Name)+" attached "+strconv.Itoa(int(l.AttachedRoutes)))
		}
	}
	for _, ra := range a.RouteAttachments() {
		line := ra.Route.Kind + " " + ra.Route.Object.GetName() + ":"
		for _, l := range listenersOf(ra) {
			line += " " + string(l.Listener.Name)
		}
		for _, h := range ra.Hostnames {
			line += " " + h
		}
		out = append(out, line)
	}
	return out
}
