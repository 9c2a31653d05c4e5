package kongemu

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
)

// A WebSocket upgrade goes through the proxy as through Kong on an http service: the backend
// gets Upgrade: websocket and Connection: keep-alive, Upgrade (kong/runloop/handler.lua), its
// 101 reaches the client with Kong's headers, and frames then flow both ways (the echo
// backend's /ws echoes them, as echo-basic's).
func TestProxyCarriesWebSocketUpgrades(t *testing.T) {
	var seen http.Header
	_, p := proxyWith(t, basicConfig, map[string]string{"10.1.0.1:8080": "echo-1", "10.1.0.2:8080": "echo-2"})
	p.opts.Resolve = func(host string, port int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = r.Header.Clone()
			(&EchoBackend{Pod: host}).ServeHTTP(w, r)
		})
	}
	ps, err := p.Start(ProxyListen{})
	require.NoError(t, err)
	t.Cleanup(func() { ps.Close() })
	addr := strings.TrimPrefix(ps.URL, "http://")

	cfg, err := websocket.NewConfig("ws://example.com/api/ws", "http://example.com/")
	require.NoError(t, err)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	ws, err := websocket.NewClient(cfg, conn)
	require.NoError(t, err)
	defer ws.Close()
	require.Equal(t, "websocket", seen.Get("Upgrade"))
	require.Equal(t, "keep-alive, Upgrade", seen.Get("Connection"))
	require.NoError(t, websocket.Message.Send(ws, "hello"))
	var text string
	require.NoError(t, websocket.Message.Receive(ws, &text))
	require.Equal(t, "hello", text)
	require.NoError(t, websocket.Message.Send(ws, []byte{1, 2, 3}))
	var bin []byte
	require.NoError(t, websocket.Message.Receive(ws, &bin))
	require.Equal(t, []byte{1, 2, 3}, bin)

	// The 101 carries Kong's headers.
	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Write([]byte("GET /api/ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://example.com/\r\n\r\n"))
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(raw), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	require.Equal(t, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", res.Header.Get("Sec-WebSocket-Accept"))
	require.NotEmpty(t, res.Header.Get("X-Kong-Request-Id"))
	require.Equal(t, "1.1 kong/"+p.e.opts.Version, res.Header.Get("Via"))
}

// An Upgrade to anything but websocket is not passed on (Kong forwards only that one), nor is
// the client's Connection header.
func TestProxyDropsOtherUpgrades(t *testing.T) {
	var seen http.Header
	_, p := proxyWith(t, basicConfig, nil)
	p.opts.Resolve = func(host string, port int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })
	}
	res, _ := send(t, p, "GET", "/api/x", map[string]string{"Host": "example.com", "Upgrade": "h2c", "Connection": "Upgrade, HTTP2-Settings"})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Empty(t, seen.Get("Upgrade"))
	require.NotContains(t, seen.Get("Connection"), "Upgrade")
}

// A request for the echo backend's WebSocket that is no upgrade gets its 400, as from
// echo-basic.
func TestEchoWebSocketWithoutUpgradeIs400(t *testing.T) {
	_, p := proxyWith(t, basicConfig, map[string]string{"10.1.0.1:8080": "echo-1", "10.1.0.2:8080": "echo-2"})
	res, _ := send(t, p, "GET", "/api/ws", map[string]string{"Host": "example.com"})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}
