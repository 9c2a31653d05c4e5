package kongemu

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamProxyWith starts the stream listens given, loads the configuration cfg makes of their
// ports, and resolves targets to backends ("network host:port" -> backend).
func streamProxyWith(t *testing.T, listens []string, cfg func(ports []int) string, backends map[string]StreamBackend) *StreamServer {
	t.Helper()
	e := New(Options{})
	p := e.Proxy(ProxyOptions{ResolveStream: func(network, host string, port int) StreamBackend {
		return backends[fmt.Sprintf("%s %s:%d", network, host, port)]
	}})
	s, err := p.StartStreams(listens)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	var ports []int
	for _, a := range s.Addrs {
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(a, "udp:"))
		n, _ := json.Number(port).Int64()
		ports = append(ports, int(n))
	}
	status, body, _ := call(t, e, http.MethodPost, "/config", cfg(ports))
	require.Equal(t, http.StatusCreated, status, "%v", body)
	return s
}

// tcpEcho speaks the TCP echo protocol over c: the welcome line, then TEST's answer.
func tcpEcho(t *testing.T, c net.Conn) TCPEchoAssertions {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	welcome, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, TCPEchoWelcome, welcome)
	fmt.Fprint(c, "TEST\n")
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	var a TCPEchoAssertions
	require.NoError(t, json.Unmarshal([]byte(line), &a), line)
	return a
}

// closedWithoutAnswer: the proxy closed c without a byte (Kong found no route).
func closedWithoutAnswer(t *testing.T, c net.Conn) {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	require.Equal(t, 0, n)
	require.Error(t, err)
	require.False(t, isTimeout(err), "closed, not left hanging: %v", err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TCP routes take connections by the listen's port (destinations), balanced across the
// upstream's targets; a listen no route names closes its connections.
func TestStreamProxyTCPByDestinationPort(t *testing.T) {
	s := streamProxyWith(t, []string{"127.0.0.1:0", "127.0.0.1:0"}, func(ports []int) string {
		return fmt.Sprintf(`{"_format_version":"3.0",
 "upstreams":[{"name":"echo.default.3000.svc","targets":[{"target":"10.1.0.1:3000"},{"target":"10.1.0.2:3000"}]}],
 "services":[{"name":"echo","host":"echo.default.3000.svc","port":3000,"protocol":"tcp",
   "routes":[{"name":"tcp","protocols":["tcp"],"destinations":[{"port":%d}]}]}]}`, ports[0])
	}, map[string]StreamBackend{
		"tcp 10.1.0.1:3000": &StreamEchoBackend{Namespace: "default", Pod: "echo-1"},
		"tcp 10.1.0.2:3000": &StreamEchoBackend{Namespace: "default", Pod: "echo-2"},
	})
	pods := map[string]int{}
	for range 4 {
		c, err := net.Dial("tcp", s.Addrs[0])
		require.NoError(t, err)
		a := tcpEcho(t, c)
		require.Equal(t, "default", a.Namespace)
		require.False(t, a.IsTLS)
		pods[a.Pod]++
	}
	require.Equal(t, map[string]int{"echo-1": 2, "echo-2": 2}, pods, "round robin over equal weights")

	c, err := net.Dial("tcp", s.Addrs[1])
	require.NoError(t, err)
	closedWithoutAnswer(t, c)
}

// On an ssl listen: a tls_passthrough route takes the connection by its SNI and hands the
// client's TLS on (the client sees the backend's certificate); a tls route is terminated with
// the configured certificate of the SNI and the backend reads plain bytes; an SNI no route has
// gets its connection closed.
func TestStreamProxyTLSPassthroughAndTermination(t *testing.T) {
	backendCert, backendKey, backendX509 := certFor(t, "pass.example.com")
	kongCert, kongKey, kongX509 := certFor(t, "term.example.com")
	pair, err := tls.X509KeyPair([]byte(backendCert), []byte(backendKey))
	require.NoError(t, err)
	s := streamProxyWith(t, []string{"127.0.0.1:0 ssl"}, func([]int) string {
		raw, _ := json.Marshal(map[string]any{"_format_version": "3.0",
			"certificates": []any{map[string]any{"cert": kongCert, "key": kongKey, "snis": []any{map[string]any{"name": "term.example.com"}}}},
			"services": []any{
				map[string]any{"name": "pass", "host": "10.2.0.1", "port": 8443, "protocol": "tcp", "routes": []any{
					map[string]any{"name": "pass", "protocols": []string{"tls_passthrough"}, "snis": []string{"pass.example.com"}}}},
				map[string]any{"name": "term", "host": "10.3.0.1", "port": 3000, "protocol": "tcp", "routes": []any{
					map[string]any{"name": "term", "protocols": []string{"tls"}, "snis": []string{"term.example.com"}}}}}})
		return string(raw)
	}, map[string]StreamBackend{
		"tcp 10.2.0.1:8443": &StreamEchoBackend{Namespace: "default", Pod: "tls-1", TLS: &tls.Config{Certificates: []tls.Certificate{pair}}},
		"tcp 10.3.0.1:3000": &StreamEchoBackend{Namespace: "default", Pod: "plain-1"},
	})
	dialTLS := func(name string, root *x509.Certificate) (*tls.Conn, error) {
		pool := x509.NewCertPool()
		pool.AddCert(root)
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.Addrs[0], &tls.Config{ServerName: name, RootCAs: pool})
	}

	c, err := dialTLS("pass.example.com", backendX509)
	require.NoError(t, err, "the backend's own certificate reaches the client")
	a := tcpEcho(t, c)
	require.Equal(t, "tls-1", a.Pod)
	require.True(t, a.IsTLS)
	require.Equal(t, "pass.example.com", a.TLS.ServerName)

	c, err = dialTLS("term.example.com", kongX509)
	require.NoError(t, err, "Kong's certificate for the SNI")
	a = tcpEcho(t, c)
	require.Equal(t, "plain-1", a.Pod)
	require.False(t, a.IsTLS, "Kong terminated TLS")

	_, err = dialTLS("other.example.com", backendX509)
	require.Error(t, err, "no route for that SNI: the connection is closed")

	plain, err := net.Dial("tcp", s.Addrs[0])
	require.NoError(t, err)
	fmt.Fprint(plain, "PING\n")
	closedWithoutAnswer(t, plain)
}

// A udp listen routes each datagram by its port and answers with the backend's reply; weights
// spread datagrams as they spread connections, and a weight of 0 takes none.
func TestStreamProxyUDP(t *testing.T) {
	s := streamProxyWith(t, []string{"127.0.0.1:0 udp"}, func(ports []int) string {
		return fmt.Sprintf(`{"_format_version":"3.0",
 "upstreams":[{"name":"dns.default.53.svc","targets":[{"target":"10.4.0.1:8080","weight":3},{"target":"10.4.0.2:8080","weight":1},{"target":"10.4.0.3:8080","weight":0}]}],
 "services":[{"name":"udp","host":"dns.default.53.svc","port":8080,"protocol":"udp",
   "routes":[{"name":"udp","protocols":["udp"],"destinations":[{"port":%d}]}]}]}`, ports[0])
	}, map[string]StreamBackend{
		"udp 10.4.0.1:8080": &StreamEchoBackend{Namespace: "default", Service: "v1", Pod: "udp-1"},
		"udp 10.4.0.2:8080": &StreamEchoBackend{Namespace: "default", Service: "v2", Pod: "udp-2"},
		"udp 10.4.0.3:8080": &StreamEchoBackend{Namespace: "default", Service: "v3", Pod: "udp-3"},
	})
	pods := map[string]int{}
	for i := range 8 {
		c, err := net.Dial("udp", strings.TrimPrefix(s.Addrs[0], "udp:"))
		require.NoError(t, err)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = fmt.Fprintf(c, "probe-%d", i)
		require.NoError(t, err)
		buf := make([]byte, 1024)
		n, err := c.Read(buf)
		require.NoError(t, err)
		c.Close()
		var a UDPEchoAnswer
		require.NoError(t, json.Unmarshal(buf[:n], &a))
		require.Equal(t, fmt.Sprintf("probe-%d", i), a.Request)
		pods[a.Pod]++
	}
	require.Equal(t, map[string]int{"udp-1": 6, "udp-2": 2}, pods)
}
