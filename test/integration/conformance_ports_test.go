package integration

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kong is published for the suite as a real Kong is, through Services whose ports are the
// Gateways' listener ports and whose targetPorts are Kong's listens (KIC's model; gatewayapi
// kongports.go): konductor reads them (--publish-service) with the listens the emulator
// reports in GET / to judge each Gateway listener (served or PortUnavailable) and, under the
// expressions router, to hold an HTTPRoute attached to some of its Gateway's HTTP ports to
// the Kong listens behind them (net.dst.port; HTTPRouteListenerPortMatching).
//
// The HTTP(S) ports are the proxy Service's (--publish-service): each plain port is a plain
// proxy listen of its own on 127.0.0.20, so that Kong's router sees which one a request
// came through; the HTTPS ports share the one TLS proxy listen. The targetPorts differ from
// the ports, as behind a real Service (80 -> 18000...), so what is matched is Kong's port.
// The stream ports are a second Service's (--publish-service-udp, which konductor reads as
// KIC does, for ports whatever their protocol): port 443 (and 80, 8443) is both an HTTP(S)
// port and a stream port of the suite's Gateways here (conformance_streams_test.go), which one
// Service cannot say (a port and protocol once), as one real Kong address could not serve.

// conformanceHTTPPorts are the suite's HTTP and HTTPS listener ports (every one its
// manifests use) and the proxy listen (port on 127.0.0.20) behind each.
var conformanceHTTPPorts = map[int32]int32{80: 18000, 8080: 18080, 8090: 18090, 5300: 15300}

var conformanceHTTPSPorts = map[int32]int32{443: 18443, 6443: 18443, 7443: 18443, 8443: 18443}

// conformanceStreamPorts are the suite's TCP, TLS and UDP listener ports: each a stream listen
// on the same port (conformanceStreamListens), but TCP port 80 (a ListenerSet's protocol
// conflict test, which routes nothing: no listen, so served as TCP).
var conformanceStreamPorts = map[int32]corev1.Protocol{
	9300: corev1.ProtocolTCP, 9301: corev1.ProtocolTCP, 9302: corev1.ProtocolTCP, 9310: corev1.ProtocolTCP,
	9311: corev1.ProtocolTCP, 9312: corev1.ProtocolTCP, 9313: corev1.ProtocolTCP, 9320: corev1.ProtocolTCP,
	9321: corev1.ProtocolTCP, 443: corev1.ProtocolTCP, 8443: corev1.ProtocolTCP, 8883: corev1.ProtocolTCP,
	80:   corev1.ProtocolTCP,
	5300: corev1.ProtocolUDP, 5301: corev1.ProtocolUDP, 5302: corev1.ProtocolUDP, 5310: corev1.ProtocolUDP,
	5311: corev1.ProtocolUDP, 5312: corev1.ProtocolUDP,
}

// The publish Services, in the suite's infrastructure namespace (watched).
const (
	conformanceProxyService   = "kong-proxy"
	conformanceStreamsService = "kong-proxy-streams"
)

// conformanceProxyListen is the emulator's proxy_listen (as GET / reports it) and where its
// proxy listens: the first plain listen, the TLS one, the other plain ones.
func conformanceProxyListen() (proxyListen []string, first, tlsAddr string, more []string) {
	addr := func(p int32) string { return net.JoinHostPort(conformanceAddress, strconv.Itoa(int(p))) }
	first = addr(conformanceHTTPPorts[80])
	var targets []int32
	for _, t := range conformanceHTTPPorts {
		targets = append(targets, t)
	}
	slices.Sort(targets)
	for _, t := range targets {
		proxyListen = append(proxyListen, addr(t))
		if addr(t) != first {
			more = append(more, addr(t))
		}
	}
	tlsAddr = addr(conformanceHTTPSPorts[443])
	proxyListen = append(proxyListen, tlsAddr+" http2 ssl")
	return proxyListen, first, tlsAddr, more
}

// proxyTarget is where a connection to a Gateway's port P goes, as through the proxy
// Service: its targetPort on 127.0.0.20; a port the Service has not (the suite dials only
// its Gateways' ports) to port 80's.
func proxyTarget(port int32) string {
	t, ok := conformanceHTTPPorts[port]
	if !ok {
		if t, ok = conformanceHTTPSPorts[port]; !ok {
			t = conformanceHTTPPorts[80]
		}
	}
	return net.JoinHostPort(conformanceAddress, strconv.Itoa(int(t)))
}

// createPublishServices creates the two publish Services in namespace ns (and ns, when it is
// not there yet), deleted with the test.
func createPublishServices(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	proxy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: conformanceProxyService}}
	for _, ports := range []map[int32]int32{conformanceHTTPPorts, conformanceHTTPSPorts} {
		for p, target := range ports {
			proxy.Spec.Ports = append(proxy.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("proxy-%d", p), Port: p,
				TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP})
		}
	}
	streams := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: conformanceStreamsService}}
	for p, proto := range conformanceStreamPorts {
		streams.Spec.Ports = append(streams.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("stream-%d-%s", p, strings.ToLower(string(proto))), Port: p,
			TargetPort: intstr.FromInt32(p), Protocol: proto})
	}
	for _, svc := range []*corev1.Service{proxy, streams} {
		slices.SortFunc(svc.Spec.Ports, func(a, b corev1.ServicePort) int { return int(a.Port - b.Port) })
		_ = admin.Delete(ctx, svc.DeepCopy()) // a previous run's
		require.NoError(t, admin.Create(ctx, svc))
		t.Cleanup(func() { _ = admin.Delete(context.Background(), svc) })
	}
}
