package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// The statuses KIC writes beside the Ingresses': a TCPIngress and a UDPIngress of our class
// get the published address in status.loadBalancer (one of another class does not); a
// KongUpstreamPolicy gets an ancestors entry for the Service an Ingress uses it through
// (Accepted, Programmed, observedGeneration), and Accepted False Conflicted for a Service an
// HTTPRoute rule of our Gateway shares with a Service without the policy; our own status writes
// do not make the controller write again.
func TestStreamIngressAndUpstreamPolicyStatus(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	web := app(ns, "web", "web.example.com")
	web[0].SetAnnotations(map[string]string{kongv1beta1.KongUpstreamPolicyAnnotationKey: "lc"})
	createAll(t, web)
	createAll(t, app(ns, "plain", "plain.example.com")[:2])
	createAll(t, app(ns, "dns", "dns.example.com")[:2])
	policy := &kongv1beta1.KongUpstreamPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lc"},
		Spec: kongv1beta1.KongUpstreamPolicySpec{Algorithm: ptr.To("least-connections")}}
	classed := func(class string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: "db-" + class, Annotations: map[string]string{"kubernetes.io/ingress.class": class}}
	}
	tcp := &kongv1beta1.TCPIngress{ObjectMeta: classed("kong"), Spec: kongv1beta1.TCPIngressSpec{Rules: []kongv1beta1.IngressRule{
		{Port: 5432, Backend: kongv1beta1.IngressBackend{ServiceName: "plain", ServicePort: 80}}}}}
	tcpOther := &kongv1beta1.TCPIngress{ObjectMeta: classed("other"), Spec: tcp.Spec}
	udp := &kongv1beta1.UDPIngress{ObjectMeta: classed("kong"), Spec: kongv1beta1.UDPIngressSpec{Rules: []kongv1beta1.UDPIngressRule{
		{Port: 53, Backend: kongv1beta1.IngressBackend{ServiceName: "dns", ServicePort: 80}}}}}
	createAll(t, []client.Object{policy, tcp, tcpOther, udp})

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(t, time.Minute)

	addressOf := func(obj client.Object) string {
		if admin.Get(ctx, client.ObjectKeyFromObject(obj), obj) != nil {
			return ""
		}
		var lbs []corev1.LoadBalancerIngress
		switch o := obj.(type) {
		case *kongv1beta1.TCPIngress:
			lbs = o.Status.LoadBalancer.Ingress
		case *kongv1beta1.UDPIngress:
			lbs = o.Status.LoadBalancer.Ingress
		}
		switch len(lbs) {
		case 0:
			return ""
		case 1:
			return lbs[0].IP
		}
		return fmt.Sprint(lbs)
	}
	require.Eventually(t, func() bool { return addressOf(tcp) == "192.0.2.10" }, 30*time.Second, 50*time.Millisecond, "TCPIngress status")
	require.Eventually(t, func() bool { return addressOf(udp) == "192.0.2.10" }, 30*time.Second, 50*time.Millisecond, "UDPIngress status")

	// ancestors is our entries of the policy: "Service/name Accepted-status/reason Programmed-status/reason".
	ancestors := func() ([]string, *kongv1beta1.KongUpstreamPolicy) {
		var p kongv1beta1.KongUpstreamPolicy
		if admin.Get(ctx, client.ObjectKeyFromObject(policy), &p) != nil {
			return nil, nil
		}
		var out []string
		for _, a := range p.Status.Ancestors {
			if string(a.ControllerName) != controller {
				continue
			}
			entry := fmt.Sprintf("%s/%s/%s", *a.AncestorRef.Group, *a.AncestorRef.Kind, a.AncestorRef.Name)
			for _, typ := range []string{"Accepted", "Programmed"} {
				c := meta.FindStatusCondition(a.Conditions, typ)
				if c == nil || c.ObservedGeneration != p.Generation {
					entry += " " + typ + "?"
					continue
				}
				entry += fmt.Sprintf(" %s/%s", c.Status, c.Reason)
			}
			out = append(out, entry)
		}
		return out, &p
	}
	requireAncestors := func(want ...string) *kongv1beta1.KongUpstreamPolicy {
		t.Helper()
		var have []string
		var p *kongv1beta1.KongUpstreamPolicy
		require.Eventually(t, func() bool {
			have, p = ancestors()
			return fmt.Sprint(have) == fmt.Sprint(want)
		}, 30*time.Second, 50*time.Millisecond, "the policy's ancestors: want %v, have %v", want, &have)
		return p
	}
	settled := requireAncestors("core/Service/web True/Accepted True/Programmed")

	// Our status writes woke no round that wrote again: a change that makes a round (a new
	// Ingress, whose status appears) leaves the policy as it was.
	later := app(ns, "later", "later.example.com")
	createAll(t, later)
	require.Eventually(t, func() bool {
		var ing netv1.Ingress
		return admin.Get(ctx, client.ObjectKeyFromObject(later[2]), &ing) == nil &&
			len(ing.Status.LoadBalancer.Ingress) == 1 && ing.Status.LoadBalancer.Ingress[0].IP == "192.0.2.10"
	}, 30*time.Second, 50*time.Millisecond, "the later Ingress's status")
	_, now := ancestors()
	require.Equal(t, settled.ResourceVersion, now.ResourceVersion, "the policy's status was written again with nothing changed")

	// An HTTPRoute of our Gateway sends one rule to web (with the policy) and plain (without).
	class, gw := ourGateway(ns, controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	port := gatewayv1.PortNumber(80)
	backend := func(name string) gatewayv1.HTTPBackendRef {
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}
	}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mixed"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
		Rules:           []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{backend("web"), backend("plain")}}},
	}}
	createAll(t, []client.Object{class, gw, route})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })
	requireAncestors("core/Service/web False/Conflicted False/Pending")

	// The rule no longer mixes them: accepted again.
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(route), route))
	route.Spec.Rules[0].BackendRefs = route.Spec.Rules[0].BackendRefs[:1]
	require.NoError(t, admin.Update(ctx, route))
	requireAncestors("core/Service/web True/Accepted True/Programmed")

	require.Empty(t, addressOf(tcpOther), "a TCPIngress of another class is not ours to write")
}
