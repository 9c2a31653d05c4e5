package gatewayapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func proxyService(ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{Spec: corev1.ServiceSpec{Ports: ports}}
}

func servicePort(port int32, target intstr.IntOrString, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Port: port, TargetPort: target, Protocol: proto}
}

// A Gateway port's requests reach Kong's router on the proxy listen its targetPort names,
// through port_maps; a named targetPort, a port behind no proxy listen, and a port the Kongs
// disagree on have no router port.
func TestHTTPRouterPorts(t *testing.T) {
	svc := proxyService(
		servicePort(80, intstr.FromInt32(8000), corev1.ProtocolTCP),
		servicePort(443, intstr.FromInt32(8443), corev1.ProtocolTCP),
		servicePort(8080, intstr.FromInt32(8001), corev1.ProtocolTCP),
		servicePort(9000, intstr.FromString("proxy-extra"), corev1.ProtocolTCP),
		servicePort(9300, intstr.FromInt32(9300), corev1.ProtocolTCP), // a stream listen
		servicePort(5300, intstr.FromInt32(5300), corev1.ProtocolUDP),
	)
	one := KongListens{
		Proxy:  []KongListen{{Port: 8000}, {Port: 8443, SSL: true}, {Port: 8001}},
		Stream: []KongListen{{Port: 9300}, {Port: 5300, UDP: true}},
	}
	require.Equal(t, []PublishedPort{
		{Port: 80, Protocol: gatewayv1.HTTPProtocolType, RouterPort: 8000},
		{Port: 443, Protocol: gatewayv1.HTTPSProtocolType, RouterPort: 8443},
		{Port: 8080, Protocol: gatewayv1.HTTPProtocolType, RouterPort: 8001},
		{Port: 9000, Protocol: gatewayv1.TCPProtocolType},
		{Port: 9300, Protocol: gatewayv1.TCPProtocolType, RouterPort: 9300},
		{Port: 5300, Protocol: gatewayv1.UDPProtocolType, RouterPort: 5300},
	}, PublishedPorts([]*corev1.Service{svc}, one))
	require.Equal(t, map[gatewayv1.PortNumber]int{80: 8000, 443: 8443, 8080: 8001}, HTTPRouterPorts(svc, []KongListens{one}))

	// port_maps: Kong reports the host port as net.dst.port.
	mapped := one
	mapped.PortMaps = map[int]int{8000: 80, 8443: 443}
	require.Equal(t, map[gatewayv1.PortNumber]int{80: 80, 443: 443, 8080: 8001}, HTTPRouterPorts(svc, []KongListens{mapped}))

	// Two Kongs: a port is known only where both say the same router port.
	other := KongListens{Proxy: []KongListen{{Port: 8000}, {Port: 8443, SSL: true}}}
	require.Equal(t, map[gatewayv1.PortNumber]int{80: 8000, 443: 8443}, HTTPRouterPorts(svc, []KongListens{one, other}),
		"8080 has no proxy listen on the second Kong")
	require.Equal(t, map[gatewayv1.PortNumber]int{8080: 8001}, HTTPRouterPorts(svc, []KongListens{one, mapped}),
		"the Kongs see 80 and 443 on different ports")

	require.Nil(t, HTTPRouterPorts(nil, []KongListens{one}), "no publish Service")
	require.Nil(t, HTTPRouterPorts(svc, nil), "no listens said")
}
