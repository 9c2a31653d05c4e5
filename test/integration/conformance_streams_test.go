package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
)

// conformanceAddress is the Gateways' address (--publish-status-address): a loopback address
// of its own, on which the emulator's stream listens take the suite's TCP, TLS and UDP
// clients, which dial it themselves (the suite's HTTP and gRPC clients go through the
// harness's dialer, conformanceGateway.dial).
const conformanceAddress = "127.0.0.20"

// conformanceStreamListens are the emulator's stream_listen, as Kong's would be for the
// suite: each Gateway listener port of the suite's TCPRoute, UDPRoute and TLSRoute tests is
// a listen on that port (a TCPRoute's or UDPRoute's Kong route matches its listener's port as
// the destination port Kong listens on, KIC's translation), TLS ones with "ssl" (Kong reads
// the SNI there, and terminates TLS for tls routes).
var conformanceStreamListens = func() []string {
	var out []string
	for _, p := range []int{9300, 9301, 9302, 9310, 9311, 9312, 9313, 9320, 9321} {
		out = append(out, fmt.Sprintf("%s:%d", conformanceAddress, p))
	}
	for _, p := range []int{5300, 5301, 5302, 5310, 5311, 5312} {
		out = append(out, fmt.Sprintf("%s:%d udp", conformanceAddress, p))
	}
	for _, p := range []int{443, 8443, 8883} {
		out = append(out, fmt.Sprintf("%s:%d ssl", conformanceAddress, p))
	}
	return out
}()

// startConformanceStreams serves the proxy's stream listens for the suite.
func startConformanceStreams(t *testing.T, p *kongemu.Proxy) {
	t.Helper()
	s, err := p.StartStreams(conformanceStreamListens)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
}

// conformanceStreamBackends answers a target's address as the Pod there would: the echo
// server's TCP mode (TCP_ECHO_SERVER, TLS on its TLS port with the certificate of its
// Secret), its UDP mode (UDP_ECHO_SERVER), its HTTPS listener (an HTTP echo server given
// TLS_SERVER_CERT), or CoreDNS.
func conformanceStreamBackends(c client.Client) func(network, host string, port int) kongemu.StreamBackend {
	certs := &secretCerts{c: c, byName: map[string]*tls.Config{}}
	return func(network, host string, port int) kongemu.StreamBackend {
		pod, ok := fakePods.pod(host)
		if !ok {
			return nil
		}
		_, tlsServer := pod.Env["TLS_SERVER_CERT"]
		tlsPort := 8443
		if v, err := strconv.Atoi(pod.Env["TLS_PORT"]); err == nil {
			tlsPort = v
		}
		switch {
		case network == "udp" && strings.Contains(pod.Image, "coredns"):
			return dnsBackend{}
		case network == "udp":
			if _, ok := pod.Env["UDP_ECHO_SERVER"]; !ok {
				return nil
			}
			return &kongemu.StreamEchoBackend{Namespace: pod.Namespace, Service: pod.Env["SERVICE_NAME"], Pod: pod.Name}
		}
		var cfg *tls.Config
		if tlsServer && port == tlsPort {
			if cfg = certs.config(pod.Namespace, pod.Secret); cfg == nil {
				return nil
			}
		}
		if _, ok := pod.Env["TCP_ECHO_SERVER"]; ok {
			return &kongemu.StreamEchoBackend{Namespace: pod.Namespace, Service: pod.Env["SERVICE_NAME"], Pod: pod.Name,
				TCPPort: strconv.Itoa(port), TLS: cfg}
		}
		if cfg != nil {
			return &httpsBackend{tls: cfg, handler: &kongemu.EchoBackend{Namespace: pod.Namespace, Pod: pod.Name, HTTPPort: strconv.Itoa(port)}}
		}
		return nil
	}
}

// secretCerts are the TLS configurations of the Secrets the echo Pods mount.
type secretCerts struct {
	c      client.Client
	mu     sync.Mutex
	byName map[string]*tls.Config
}

func (s *secretCerts) config(namespace, name string) *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := namespace + "/" + name
	if cfg, ok := s.byName[key]; ok {
		return cfg
	}
	var secret corev1.Secret
	if s.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &secret) != nil {
		return nil
	}
	pair, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
	if err != nil {
		return nil
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	s.byName[key] = cfg
	return cfg
}

// httpsBackend is the echo server's HTTPS listener: TLS with its Secret's certificate, then
// HTTP answered by handler.
type httpsBackend struct {
	tls     *tls.Config
	handler http.Handler
}

func (b *httpsBackend) ServeConn(conn net.Conn) {
	srv := &http.Server{Handler: b.handler}
	_ = srv.Serve(kongemu.OneConnListener(tls.Server(conn, b.tls)))
}

func (b *httpsBackend) Answer([]byte) []byte { return nil }

// dnsBackend answers DNS queries as the suite's CoreDNS does for its test name (the whoami
// plugin: an A record of the client's address); over TCP nothing.
type dnsBackend struct{}

func (dnsBackend) ServeConn(conn net.Conn) { conn.Close() }

func (dnsBackend) Answer(datagram []byte) []byte {
	var q dns.Msg
	if q.Unpack(datagram) != nil {
		return nil
	}
	var reply dns.Msg
	reply.SetReply(&q)
	for _, question := range q.Question {
		reply.Answer = append(reply.Answer, &dns.A{Hdr: dns.RR_Header{Name: question.Name, Rrtype: dns.TypeA, Class: dns.ClassINET},
			A: net.ParseIP(conformanceAddress)})
	}
	out, err := reply.Pack()
	if err != nil {
		return nil
	}
	return out
}
