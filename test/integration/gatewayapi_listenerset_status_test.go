package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// lsStatusSummary is what the test reads of a ListenerSet's status: its conditions, and per
// listener attachedRoutes, as "Type=Status/Reason@gen".
func lsStatusSummary(ls *gatewayv1.ListenerSet) string {
	var b strings.Builder
	for _, c := range ls.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s/%s@%d", c.Type, c.Status, c.Reason, c.ObservedGeneration)
	}
	for _, l := range ls.Status.Listeners {
		fmt.Fprintf(&b, " | %s attached=%d", l.Name, l.AttachedRoutes)
	}
	return b.String()
}

// A ListenerSet konductor served keeps no status of konductor's once its Gateway is no
// longer ours: on the real API server, a set whose Gateway moves to another controller's
// class goes back to Accepted and Programmed Unknown Pending without listener statuses (the
// route's entry for it goes); one whose Gateway is deleted is Accepted and Programmed False
// ParentNotAccepted.
func TestGatewayAPIListenerSetStatusReleased(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	createAll(t, app(ns, "echo", "echo.example.com")[:2])
	all := gatewayv1.NamespacesFromAll
	class, moved := ourGateway(ns, controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	moved.Name = "moved"
	moved.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &all}}
	deleted := moved.DeepCopy()
	deleted.Name = "deleted"
	theirs := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-theirs"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/other"}}
	set := func(name, parent string) *gatewayv1.ListenerSet {
		h := gatewayv1.Hostname(name + ".example.com")
		return &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(parent)},
				Listeners: []gatewayv1.ListenerEntry{{Name: "web", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: &h}}}}
	}
	onMoved, onDeleted := set("on-moved", "moved"), set("on-deleted", "deleted")
	route := httpRoute(ns, "web", "web", "echo")
	kind := gatewayv1.Kind("ListenerSet")
	route.Spec.ParentRefs[0].Name, route.Spec.ParentRefs[0].Kind = "on-moved", &kind
	route.Spec.Hostnames = nil
	createAll(t, []client.Object{class, theirs, moved, deleted, onMoved, onDeleted, route})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class); _ = admin.Delete(context.Background(), theirs) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(t, time.Minute)

	var last string
	requireSet := func(ls *gatewayv1.ListenerSet, want, msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			var got gatewayv1.ListenerSet
			if admin.Get(ctx, client.ObjectKeyFromObject(ls), &got) != nil {
				return false
			}
			last = lsStatusSummary(&got)
			return last == want
		}, 30*time.Second, 50*time.Millisecond, "%s: want\n%s\nhave\n%s", msg, want, &last)
	}
	requireSet(onMoved, " Accepted=True/Accepted@1 Programmed=True/Programmed@1 | web attached=1", "the set of our Gateway, with the route")
	requireSet(onDeleted, " Accepted=True/Accepted@1 Programmed=True/Programmed@1 | web attached=0", "the set of our other Gateway")
	requireParents := func(want []string, msg string) {
		t.Helper()
		var have []string
		require.Eventually(t, func() bool {
			var hr gatewayv1.HTTPRoute
			if admin.Get(ctx, client.ObjectKeyFromObject(route), &hr) != nil {
				return false
			}
			have = parentSummary(&hr)
			return fmt.Sprint(have) == fmt.Sprint(want)
		}, 30*time.Second, 50*time.Millisecond, "%s: want %q, have %q", msg, want, &have)
	}
	requireParents([]string{controller + " on-moved/web Accepted=True/Accepted@1 ResolvedRefs=True/ResolvedRefs@1"}, "the route is on the set")

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var g gatewayv1.Gateway
		if err := admin.Get(ctx, client.ObjectKeyFromObject(moved), &g); err != nil {
			return err
		}
		g.Spec.GatewayClassName = gatewayv1.ObjectName(theirs.Name)
		return admin.Update(ctx, &g)
	}))
	require.NoError(t, admin.Delete(ctx, deleted))
	requireSet(onMoved, " Accepted=Unknown/Pending@1 Programmed=Unknown/Pending@1", "another controller's Gateway: back to what no controller wrote")
	requireSet(onDeleted, " Accepted=False/ParentNotAccepted@1 Programmed=False/ParentNotAccepted@1", "its Gateway is gone")
	requireParents(nil, "the route's entry for the set goes")
}

// opaqueCertSecret is an Opaque Secret (not kubernetes.io/tls, no Kong label: the cache keeps
// it without its data until translation refers to it) with a valid tls.crt/tls.key pair.
func opaqueCertSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	cert, _ := servingCert(t, []string{name + ".example.com"}, nil)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}}
}

// A listener's certificate in an Opaque Secret, which the cache keeps without its data until
// translation refers to it, is judged by the copy the sync loop loaded: ResolvedRefs True on
// a Gateway's listener, a ListenerSet's, and a ListenerSet's listener a conflict leaves out
// (its Secret is in the graph as a Gateway listener's is), instead of InvalidCertificateRef
// "not a valid TLS key pair" for the cache's empty copy.
func TestGatewayAPIListenerCertificateInOpaqueSecret(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	all := gatewayv1.NamespacesFromAll
	https := func(name, host, secret string) gatewayv1.Listener {
		h := gatewayv1.Hostname(host)
		return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: &h,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret)}}}}
	}
	class, gw := ourGateway(ns, controller, https("https", "gw.example.com", "gw-cert"))
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &all}}
	ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ls"},
		Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: "kong"}, Listeners: []gatewayv1.ListenerEntry{
			gatewayv1.ListenerEntry(https("set", "set.example.com", "set-cert")),
			gatewayv1.ListenerEntry(https("dup", "gw.example.com", "dup-cert")),
		}}}
	createAll(t, []client.Object{opaqueCertSecret(t, ns, "gw-cert"), opaqueCertSecret(t, ns, "set-cert"), opaqueCertSecret(t, ns, "dup-cert"), class, gw, ls})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(t, time.Minute)

	resolved := func(conds []metav1.Condition) string {
		c := meta.FindStatusCondition(conds, "ResolvedRefs")
		if c == nil {
			return ""
		}
		return fmt.Sprintf("%s/%s %s", c.Status, c.Reason, c.Message)
	}
	var have []string
	require.Eventually(t, func() bool {
		var g gatewayv1.Gateway
		var s gatewayv1.ListenerSet
		if admin.Get(ctx, client.ObjectKeyFromObject(gw), &g) != nil || admin.Get(ctx, client.ObjectKeyFromObject(ls), &s) != nil {
			return false
		}
		have = nil
		for _, l := range g.Status.Listeners {
			have = append(have, fmt.Sprintf("gateway %s: %s", l.Name, resolved(l.Conditions)))
		}
		for _, l := range s.Status.Listeners {
			have = append(have, fmt.Sprintf("set %s: %s", l.Name, resolved(l.Conditions)))
		}
		return fmt.Sprint(have) == fmt.Sprint([]string{
			"gateway https: True/ResolvedRefs all references resolved",
			"set set: True/ResolvedRefs all references resolved",
			"set dup: True/ResolvedRefs all references resolved",
		})
	}, 30*time.Second, 100*time.Millisecond, "have %q", &have)
}
