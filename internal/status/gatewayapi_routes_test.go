package status

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// GRPCRoutes and L4 routes get their parents entries like HTTPRoutes: Accepted where a
// listener of their kind admits them (a TCPRoute on an HTTP-only section is
// NotAllowedByListeners), and ResolvedRefs from their backendRefs; another controller's
// entry stays.
func TestGatewayAPIUpdaterOtherRouteKinds(t *testing.T) {
	ctx := context.Background()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""), listener("tcp", gatewayv1.TCPProtocolType, 9000, ""),
		listener("udp", gatewayv1.UDPProtocolType, 9001, ""))
	theirs := gatewayv1.RouteParentStatus{ParentRef: parentRef("their-gateway", ""), ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.NewTime(t0)}}}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 2}
	}
	grpc := &gatewayv1.GRPCRoute{ObjectMeta: meta("grpc")}
	grpc.Spec.ParentRefs = []gatewayv1.ParentReference{parentRef("kong", "http")}
	grpc.Status.Parents = []gatewayv1.RouteParentStatus{theirs}
	tcp := &gatewayv1.TCPRoute{ObjectMeta: meta("tcp")}
	tcp.Spec.ParentRefs = []gatewayv1.ParentReference{parentRef("kong", "tcp")}
	tcpOnHTTP := &gatewayv1.TCPRoute{ObjectMeta: meta("tcp-on-http")}
	tcpOnHTTP.Spec.ParentRefs = []gatewayv1.ParentReference{parentRef("kong", "http")}
	udp := &gatewayv1.UDPRoute{ObjectMeta: meta("udp")}
	udp.Spec.ParentRefs = []gatewayv1.ParentReference{parentRef("kong", "udp")}

	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, gw, grpc, tcp, tcpOnHTTP, udp).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.GRPCRoute{}, &gatewayv1.TCPRoute{}, &gatewayv1.UDPRoute{}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.now = func() time.Time { return t0 }
	u.GatewayAlpha = true // L4 routes attach only with it, as in translation

	in := gatewayapi.Input{GatewayClasses: []*gatewayv1.GatewayClass{class}, Gateways: []*gatewayv1.Gateway{gw}}
	in.Routes = append(in.Routes,
		gatewayapi.Route{Kind: gatewayapi.KindGRPCRoute, Object: grpc, ParentRefs: grpc.Spec.ParentRefs},
		gatewayapi.Route{Kind: gatewayapi.KindTCPRoute, Object: tcp, ParentRefs: tcp.Spec.ParentRefs},
		gatewayapi.Route{Kind: gatewayapi.KindTCPRoute, Object: tcpOnHTTP, ParentRefs: tcpOnHTTP.Spec.ParentRefs},
		gatewayapi.Route{Kind: gatewayapi.KindUDPRoute, Object: udp, ParentRefs: udp.Spec.ParentRefs})
	a := gatewayapi.Attach(in)
	a.Route(gatewayapi.KindUDPRoute, udp).AddRefProblem(gatewayv1.RouteReasonBackendNotFound, "Service default/nope not found")
	u.Report(ctx, dataplane.Round{GatewayAPI: a})
	require.NoError(t, u.Update(ctx))

	var gotGRPC gatewayv1.GRPCRoute
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(grpc), &gotGRPC))
	require.Len(t, gotGRPC.Status.Parents, 2)
	require.Equal(t, theirs.ControllerName, gotGRPC.Status.Parents[0].ControllerName, "another controller's entry stays first")
	require.Equal(t, "True/Accepted", condition(gotGRPC.Status.Parents[1].Conditions, "Accepted"))
	require.Equal(t, "True/ResolvedRefs", condition(gotGRPC.Status.Parents[1].Conditions, "ResolvedRefs"))
	require.EqualValues(t, 2, gotGRPC.Status.Parents[1].Conditions[0].ObservedGeneration)

	var gotTCP, gotTCPOnHTTP gatewayv1.TCPRoute
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(tcp), &gotTCP))
	require.Equal(t, "True/Accepted", condition(gotTCP.Status.Parents[0].Conditions, "Accepted"))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(tcpOnHTTP), &gotTCPOnHTTP))
	require.Equal(t, "False/NotAllowedByListeners", condition(gotTCPOnHTTP.Status.Parents[0].Conditions, "Accepted"))

	var gotUDP gatewayv1.UDPRoute
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(udp), &gotUDP))
	require.Equal(t, "True/Accepted", condition(gotUDP.Status.Parents[0].Conditions, "Accepted"))
	require.Equal(t, "False/BackendNotFound", condition(gotUDP.Status.Parents[0].Conditions, "ResolvedRefs"))

	var gotGW gatewayv1.Gateway
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &gotGW))
	require.EqualValues(t, 1, gotGW.Status.Listeners[0].AttachedRoutes, "the GRPCRoute")
	require.EqualValues(t, 1, gotGW.Status.Listeners[1].AttachedRoutes, "the TCPRoute")
	require.EqualValues(t, 1, gotGW.Status.Listeners[2].AttachedRoutes, "the UDPRoute")
}

// Every route kind of Gateway API has its row in routeStatusTable, status's one list of route
// kinds (issue #42): without it a new kind's routes would be translated but their
// status.parents never written, which no other test notices.
func TestEveryGatewayAPIRouteKindHasARow(t *testing.T) {
	var rows []string
	for _, k := range routeStatusTable {
		rows = append(rows, k.kind)
		require.Equal(t, k.kind, k.storeKind.String())
	}
	require.ElementsMatch(t, store.GatewayAPIRouteKinds(), rows)
}
