package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// A GRPCRoute and a Gateway whose HTTPS listener terminates TLS reach Kong and get status:
// the GRPCRoute's Kong route carries its method path, its parents entry is Accepted; the
// listener's certificate Secret does not exist yet, so the listener's ResolvedRefs is False
// (InvalidCertificateRef) and Kong has no certificate; creating the Secret (an object only
// the Gateway refers to) wakes translation: Kong gets the certificate for the listener's
// hostname, and the listener resolves.
func TestGatewayAPIGRPCRouteAndListenerTLS(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	createAll(t, app(ns, "echo", "echo.example.com")[:2])
	host := gatewayv1.Hostname("grpc.example.com")
	class, gw := ourGateway(ns, controller,
		gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
		gatewayv1.Listener{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: &host, TLS: &gatewayv1.ListenerTLSConfig{
			CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "grpc-cert"}}}},
	)
	section := gatewayv1.SectionName("http")
	service := "echo.Echo"
	port := gatewayv1.PortNumber(80)
	grpc := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "grpc"}, Spec: gatewayv1.GRPCRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", SectionName: &section}}},
		Hostnames:       []gatewayv1.Hostname{host},
		Rules: []gatewayv1.GRPCRouteRule{{
			Matches:     []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: &service}}},
			BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}},
		}},
	}}
	createAll(t, []client.Object{class, gw, grpc})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(t, time.Minute)

	routeName := fmt.Sprintf("grpcroute.%s.grpc.0.0", ns)
	var loaded string
	require.Eventually(t, func() bool {
		route := loadedEntity(kong.LoadedConfig(), "services", "routes", routeName)
		loaded = fmt.Sprint(route)
		return route != nil && fmt.Sprint(route["paths"]) == `[~/echo\.Echo/]` && fmt.Sprint(route["protocols"]) == "[grpc grpcs]" &&
			fmt.Sprint(route["hosts"]) == "[grpc.example.com]"
	}, 30*time.Second, 50*time.Millisecond, "Kong has the GRPCRoute's route: %s", &loaded)

	requireCondition := func(what string, get func() []metav1.Condition, typ, want string) {
		t.Helper()
		var have string
		require.Eventually(t, func() bool {
			c := meta.FindStatusCondition(get(), typ)
			if c == nil {
				return false
			}
			have = string(c.Status) + "/" + c.Reason
			return have == want
		}, 30*time.Second, 50*time.Millisecond, "%s %s: want %s, have %s", what, typ, want, &have)
	}
	routeParent := func() []metav1.Condition {
		var gr gatewayv1.GRPCRoute
		if admin.Get(ctx, client.ObjectKeyFromObject(grpc), &gr) != nil {
			return nil
		}
		for _, p := range gr.Status.Parents {
			if string(p.ControllerName) == controller {
				return p.Conditions
			}
		}
		return nil
	}
	listener := func(name string) func() []metav1.Condition {
		return func() []metav1.Condition {
			var g gatewayv1.Gateway
			if admin.Get(ctx, client.ObjectKeyFromObject(gw), &g) != nil {
				return nil
			}
			for _, l := range g.Status.Listeners {
				if string(l.Name) == name {
					return l.Conditions
				}
			}
			return nil
		}
	}
	requireCondition("GRPCRoute parent", routeParent, "Accepted", "True/Accepted")
	requireCondition("GRPCRoute parent", routeParent, "ResolvedRefs", "True/ResolvedRefs")
	requireCondition("listener https", listener("https"), "ResolvedRefs", "False/InvalidCertificateRef")
	require.Empty(t, kong.LoadedConfig()["certificates"], "no certificate while the Secret is missing")

	certPEM, keyPEM := certificatePEM(t, []string{string(host)})
	createAll(t, []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "grpc-cert"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}}})
	require.Eventually(t, func() bool {
		certs, _ := kong.LoadedConfig()["certificates"].([]any)
		if len(certs) != 1 {
			return false
		}
		c, _ := certs[0].(map[string]any)
		snis, _ := c["snis"].([]any)
		return len(snis) == 1 && fmt.Sprint(snis[0].(map[string]any)["name"]) == string(host)
	}, 30*time.Second, 50*time.Millisecond, "the new Secret reaches Kong as the listener's certificate")
	requireCondition("listener https", listener("https"), "ResolvedRefs", "True/ResolvedRefs")
}

// loadedEntity finds, in a loaded declarative configuration, the entity named name among
// the children kind of every parent of kind parents (routes of services), or nil.
func loadedEntity(config map[string]any, parents, kind, name string) map[string]any {
	ps, _ := config[parents].([]any)
	for _, p := range ps {
		pm, _ := p.(map[string]any)
		cs, _ := pm[kind].([]any)
		for _, c := range cs {
			if cm, _ := c.(map[string]any); cm != nil && cm["name"] == name {
				return cm
			}
		}
	}
	return nil
}

// certificatePEM is a certificate for dnsNames and its key, PEM encoded.
func certificatePEM(t *testing.T, dnsNames []string) ([]byte, []byte) {
	t.Helper()
	cert, _ := servingCert(t, dnsNames, nil)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
