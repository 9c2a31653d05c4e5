package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// KIC's flags that limit what is read do so in a running controller, from the cache up:
// --enable-controller-kongconsumer=false (no KongConsumer reaches Kong), --secret-label-selector
// (a TLS Secret without the label is not read, one with it is), --configmap-label-selector at
// KIC's default (a CA ConfigMap needs konghq.com/configmap: "true" besides konghq.com/ca-cert),
// --gateway-to-reconcile (the routes of another Gateway of ours are not served), and
// --emit-kubernetes-events=false.
func TestKICFlagsLimitWhatIsRead(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	createAll(t, app(ns, "echo", "echo.example.com"))
	createAll(t, []client.Object{consumer(ns, "alice")})

	secret := func(name, host string, labels map[string]string) *corev1.Secret {
		cert, _ := servingCert(t, []string{host}, nil)
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), "tls.key": keyPEM(t, cert)}}
	}
	labelled, unlabelled := secret("labelled", "a.example.com", map[string]string{"konghq.com/secret": "true"}), secret("unlabelled", "b.example.com", nil)
	createAll(t, []client.Object{labelled, unlabelled})
	for _, host := range []struct{ name, host, secret string }{{"tls-a", "a.example.com", "labelled"}, {"tls-b", "b.example.com", "unlabelled"}} {
		objs := app(ns, host.name, host.host)
		in := objs[2].(*netv1.Ingress)
		in.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{host.host}, SecretName: host.secret}}
		createAll(t, objs)
	}
	_, caPEM := servingCert(t, []string{"x"}, nil)
	ca := func(name, id string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Data: map[string]string{"id": id, "cert": string(caPEM)}}
	}
	createAll(t, []client.Object{
		ca("both-labels", "8e5b8f52-5a0c-4d36-9f8a-6f1c6a2b7a01", map[string]string{"konghq.com/ca-cert": "true", "konghq.com/configmap": "true"}),
		ca("ca-label-only", "8e5b8f52-5a0c-4d36-9f8a-6f1c6a2b7a02", map[string]string{"konghq.com/ca-cert": "true"}),
	})

	class, gwA := ourGateway(ns, controller, gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80})
	gwB := gwA.DeepCopy()
	gwB.Name = "other"
	port := gatewayv1.PortNumber(80)
	route := func(name, gateway, host string) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gateway)}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}}},
		}}
	}
	createAll(t, []client.Object{class, gwA, gwB, route("to-kong", "kong", "kong.example.com"), route("to-other", "other", "other.example.com")})
	t.Cleanup(func() { _ = admin.Delete(t.Context(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller,
		"--enable-controller-kongconsumer=false", "--secret-label-selector", "konghq.com/secret",
		"--gateway-to-reconcile", ns + "/kong", "--emit-kubernetes-events=false",
	}})
	r.waitFirstSync(t, time.Minute)

	hosts := func() map[string]bool {
		out := map[string]bool{}
		for _, rt := range kong.Entities("routes") {
			for _, h := range asList(rt["hosts"]) {
				out[h] = true
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return hosts()["kong.example.com"] }, 30*time.Second, 20*time.Millisecond, "the reconciled Gateway's route is served")
	have := hosts()
	require.True(t, have["echo.example.com"], "Ingresses are read")
	require.False(t, have["other.example.com"], "--gateway-to-reconcile: another Gateway's route is not served")
	require.Empty(t, kong.Entities("consumers"), "--enable-controller-kongconsumer=false: no KongConsumer is read")
	var snis []string
	for _, s := range kong.Entities("snis") {
		snis = append(snis, s["name"].(string))
	}
	require.Equal(t, []string{"a.example.com"}, snis, "--secret-label-selector: the unlabelled Secret is not read")
	var cas []string
	for _, c := range kong.Entities("ca_certificates") {
		cas = append(cas, c["id"].(string))
	}
	require.Equal(t, []string{"8e5b8f52-5a0c-4d36-9f8a-6f1c6a2b7a01"}, cas, "KIC's --configmap-label-selector default: both labels")
	// The Ingress whose Secret is not read has a problem, reported without an Event.
	// Polled here rather than with require.Never, whose last check may run after the test
	// ended (its context canceled).
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var evs corev1.EventList
		require.NoError(t, admin.List(context.Background(), &evs, client.InNamespace(ns)))
		// The API server's own Events (its ClusterIP repair controller's, on a Service) are
		// not konductor's.
		var ours []corev1.Event
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Ingress" {
				ours = append(ours, e)
			}
		}
		require.Empty(t, ours, "--emit-kubernetes-events=false: no Event")
	}
}

func keyPEM(t *testing.T, cert tls.Certificate) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func asList(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
