package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/testcert"
)

// A BackendTLSPolicy on a Service an HTTPRoute of our Gateway uses gets an ancestors entry
// for that Gateway: Accepted False (NoValidCACertificate) while its CA ConfigMap is missing,
// Accepted True once it exists (unlabelled, holding a certificate); another controller's
// ancestors entry stays as it was.
func TestGatewayAPIBackendTLSPolicyStatus(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	createAll(t, app(ns, "echo", "echo.example.com")[:2])
	class, gw := ourGateway(ns, controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	port := gatewayv1.PortNumber(80)
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong"}}},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}}},
	}}
	policy := &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: gatewayv1.BackendTLSPolicySpec{
		TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: "echo"}}},
		Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "echo.internal",
			CACertificateRefs: []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: "echo-ca"}}},
	}}
	createAll(t, []client.Object{class, gw, route, policy})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })
	theirs := gatewayv1.PolicyAncestorStatus{AncestorRef: gatewayv1.ParentReference{Name: "elsewhere"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "theirs", LastTransitionTime: metav1.Now()}}}
	policy.Status.Ancestors = []gatewayv1.PolicyAncestorStatus{theirs}
	require.NoError(t, admin.Status().Update(ctx, policy))

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
		"--feature-gates=GatewayAlpha=true",
	}})
	r.waitFirstSync(t, time.Minute)

	requireAncestor := func(want string) {
		t.Helper()
		var have string
		require.Eventually(t, func() bool {
			var p gatewayv1.BackendTLSPolicy
			if admin.Get(ctx, client.ObjectKeyFromObject(policy), &p) != nil {
				return false
			}
			have = ""
			var ours *gatewayv1.PolicyAncestorStatus
			for i, a := range p.Status.Ancestors {
				if string(a.ControllerName) == controller {
					ours = &p.Status.Ancestors[i]
				}
			}
			if len(p.Status.Ancestors) != 2 || ours == nil {
				return false
			}
			if p.Status.Ancestors[0].ControllerName != theirs.ControllerName || p.Status.Ancestors[0].Conditions[0].Message != "theirs" {
				have = "the other controller's entry changed"
				return false
			}
			c := meta.FindStatusCondition(ours.Conditions, "Accepted")
			if c == nil || string(ours.AncestorRef.Name) != "kong" || string(*ours.AncestorRef.Namespace) != ns || string(*ours.AncestorRef.Kind) != "Gateway" {
				return false
			}
			have = string(c.Status) + "/" + c.Reason
			return have == want && c.ObservedGeneration == p.Generation
		}, 30*time.Second, 50*time.Millisecond, "the policy's ancestor entry: want %s, have %s", want, &have)
	}
	requireAncestor("False/NoValidCACertificate")

	// Unlabelled, as the Gateway API spec writes it (issue #40): every ConfigMap is cached
	// without its data until a policy names it, then loaded; only a certificate resolves.
	cert, _ := testcert.SelfSigned(t, "echo-ca")
	createAll(t, []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-ca"},
		Data: map[string]string{"ca.crt": string(cert)}}})
	requireAncestor("True/Accepted")

	// A ConfigMap nothing names is cached without its data; once the policy names it, it is
	// loaded from the API server (store.SecretPayloads.Complete) and resolves (requireAncestor
	// waits for the policy's new generation).
	createAll(t, []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-ca"},
		Data: map[string]string{"ca.crt": string(cert)}}})
	require.Eventually(t, func() bool {
		var p gatewayv1.BackendTLSPolicy
		if admin.Get(ctx, client.ObjectKeyFromObject(policy), &p) != nil {
			return false
		}
		p.Spec.Validation.CACertificateRefs = []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: "late-ca"}}
		return admin.Update(ctx, &p) == nil
	}, 10*time.Second, 50*time.Millisecond)
	requireAncestor("True/Accepted")
	// Translation read its data: Kong has its certificate, under the id konductor gives a
	// ConfigMap without data.id.
	lateID := kongstate.CACertificateID("", ns, "late-ca")
	require.Eventually(t, func() bool {
		for _, c := range kong.Entities("ca_certificates") {
			if c["id"] == lateID {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the ca_certificate of late-ca")
}
