package status

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
)

func proxyService(ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kong", Name: "proxy"}, Spec: corev1.ServiceSpec{Ports: ports}}
}

func servicePort(port int32, target intstr.IntOrString, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Port: port, TargetPort: target, Protocol: proto}
}

// Kong's chart defaults (proxy 80→8000, 443→8443 with ssl; a UDP Service 9999→9999 on a udp
// stream listen), a TLS stream listen behind 9443, a port with no listen behind it (TCP), and a
// named targetPort (matches no listen): each Gateway listener is served or not as in KIC.
func TestListenersFromKongListens(t *testing.T) {
	svcs := []*corev1.Service{
		proxyService(servicePort(80, intstr.FromInt32(8000), corev1.ProtocolTCP), servicePort(443, intstr.FromInt32(8443), corev1.ProtocolTCP),
			servicePort(9443, intstr.FromInt32(9443), corev1.ProtocolTCP), servicePort(7000, intstr.FromInt32(7000), ""),
			servicePort(8080, intstr.FromString("proxy"), corev1.ProtocolTCP)),
		proxyService(servicePort(9999, intstr.FromInt32(9999), corev1.ProtocolUDP)),
	}
	kong := dataplane.KongListens{
		Proxy:  []dataplane.KongListen{{Port: 8000}, {Port: 8443, SSL: true}},
		Stream: []dataplane.KongListen{{Port: 9443, SSL: true}, {Port: 9999, UDP: true}},
	}
	ports := commonPorts(svcs, []dataplane.KongListens{kong})
	require.Equal(t, kongPorts{
		gatewayv1.HTTPProtocolType:  {80: true},
		gatewayv1.HTTPSProtocolType: {443: true},
		gatewayv1.TLSProtocolType:   {9443: true},
		gatewayv1.TCPProtocolType:   {7000: true, 8080: true},
		gatewayv1.UDPProtocolType:   {9999: true},
	}, ports)

	gw := testGateway(
		listener("http", gatewayv1.HTTPProtocolType, 80, ""),
		listener("http-8000", gatewayv1.HTTPProtocolType, 8000, ""), // Kong's port, not the Service's
		listener("https", gatewayv1.HTTPSProtocolType, 443, ""),
		listener("tls-on-443", gatewayv1.TLSProtocolType, 443, "tls.example.com"),
		listener("udp", gatewayv1.UDPProtocolType, 9999, ""),
	)
	got := gatewayStatus(gatewayv1.GatewayStatus{}, attach(gw).Gateways[0], nil, nil, ports, "", true, time.Unix(0, 0))
	want := map[string]string{
		"http": "True/Accepted", "http-8000": "False/PortUnavailable", "https": "True/Accepted",
		"tls-on-443": "False/PortUnavailable", "udp": "True/Accepted",
	}
	for _, ls := range got.Listeners {
		require.Equal(t, want[string(ls.Name)], condition(ls.Conditions, "Accepted"), ls.Name)
		if want[string(ls.Name)] != "True/Accepted" {
			require.Equal(t, "False/Invalid", condition(ls.Conditions, "Programmed"), ls.Name)
		}
	}
	require.Equal(t, "True/ListenersNotValid", condition(got.Conditions, "Accepted"))

	// Without a TLS stream listen no port serves TLS: the protocol is unsupported.
	noTLS := commonPorts(svcs[:1], []dataplane.KongListens{{Proxy: kong.Proxy}})
	reason, msg := noTLS.unavailable(gatewayv1.TLSProtocolType, 9443)
	require.Equal(t, gatewayv1.ListenerReasonUnsupportedProtocol, reason)
	require.Equal(t, "no Kong listen with the requested protocol is configured", msg)

	// Two gateways: a port serves a protocol only when it does on both.
	other := dataplane.KongListens{Proxy: []dataplane.KongListen{{Port: 8000}, {Port: 8443}}} // no ssl
	both := commonPorts(svcs, []dataplane.KongListens{kong, other})
	require.True(t, both[gatewayv1.HTTPProtocolType][80])
	require.False(t, both[gatewayv1.HTTPSProtocolType][443], "one gateway serves plain HTTP there")
	require.Nil(t, commonPorts(svcs, nil), "no gateway said its listens: not checked")
	reason, _ = kongPorts(nil).unavailable(gatewayv1.HTTPProtocolType, 1)
	require.Empty(t, reason)
}

// The konghq.com/publish-service annotation picks among the publish Services; one it was not
// given makes the Gateway not accepted.
func TestPublishServiceAnnotation(t *testing.T) {
	configured := []string{"kong/proxy", "kong/udp"}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	names, err := publishServices(gw, configured)
	require.NoError(t, err)
	require.Equal(t, configured, names, "absent: both")
	gw.Annotations = map[string]string{PublishServiceAnnotation: " kong/udp ,"}
	names, err = publishServices(gw, configured)
	require.NoError(t, err)
	require.Equal(t, []string{"kong/udp"}, names)
	gw.Annotations[PublishServiceAnnotation] = "kong/proxy,other/svc"
	_, err = publishServices(gw, configured)
	require.ErrorContains(t, err, "names other/svc, which is not a publish Service of this controller (kong/proxy, kong/udp)")

	got := gatewayStatus(gatewayv1.GatewayStatus{}, attach(gw).Gateways[0], nil, nil, nil, err.Error(), true, time.Unix(0, 0))
	require.Equal(t, "False/Invalid", condition(got.Conditions, "Accepted"))
}

// countingReader counts the Gets it serves.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A Gateway's addresses are those of the proxies its annotation names (both without it), and
// a pass reads each publish Service once, whatever the number of Gateways and of what each
// needs of it.
func TestGatewayAddressesFollowTheAnnotation(t *testing.T) {
	ctx := context.Background()
	lb := func(name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kong", Name: name},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ip}}}}}
	}
	reader := &countingReader{Reader: fake.NewClientBuilder().WithObjects(lb("proxy", "192.0.2.1"), lb("udp", "198.51.100.8")).Build()}
	opts := IngressOptions{PublishService: "kong/proxy", PublishServiceUDP: "kong/udp"}
	services := serviceReader{reader: reader}
	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{[]string{"kong/proxy", "kong/udp"}, []string{"192.0.2.1", "198.51.100.8"}},
		{[]string{"kong/udp"}, []string{"198.51.100.8"}},
		{[]string{"kong/proxy"}, []string{"192.0.2.1"}},
	} {
		addrs, err := services.addresses(ctx, opts.named(tc.names))
		require.NoError(t, err)
		require.Equal(t, tc.want, addrs, tc.names)
		_, err = services.get(ctx, tc.names)
		require.NoError(t, err)
	}
	require.Equal(t, 2, reader.gets, "each Service read once in a pass")
	require.Equal(t, IngressOptions{PublishServiceUDP: "kong/udp", PublishAddressesUDP: []string{"203.0.113.9"}},
		IngressOptions{PublishService: "kong/proxy", PublishAddresses: []string{"192.0.2.1"}, PublishServiceUDP: "kong/udp",
			PublishAddressesUDP: []string{"203.0.113.9"}}.named([]string{"kong/udp"}), "--publish-status-address-udp goes with its Service")
}

// A publish Service's change of addresses or ports wakes the Gateways' pass (their addresses
// and listeners follow it); another Service, or one that changed in nothing Gateways read,
// does not.
func TestPublishServiceChangesWakeTheGatewayPass(t *testing.T) {
	e := attachmentEvents{publish: map[types.NamespacedName]bool{{Namespace: "kong", Name: "proxy"}: true}}
	svc := proxyService(servicePort(80, intstr.FromInt32(8000), corev1.ProtocolTCP))
	moved := svc.DeepCopy()
	moved.Spec.Ports[0].TargetPort = intstr.FromInt32(8001)
	addressed := svc.DeepCopy()
	addressed.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.9"}}
	labelled := svc.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	other := svc.DeepCopy()
	other.Name = "echo"
	otherMoved := moved.DeepCopy()
	otherMoved.Name = "echo"

	require.True(t, e.Relevant(svc, moved), "a port")
	require.True(t, e.Relevant(svc, addressed), "an address")
	require.True(t, e.Relevant(nil, svc), "created")
	require.True(t, e.Relevant(svc, nil), "deleted")
	require.False(t, e.Relevant(svc, labelled), "nothing a Gateway reads")
	require.False(t, e.Relevant(other, otherMoved), "not a publish Service")
}
