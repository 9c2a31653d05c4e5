package kongemu

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A proxy with several plain listens: the router sees each request's port as the listen's
// (net.dst.port), as Kong's does (var.server_port), so expression routes tell them apart.
func TestProxyMoreListensRouteByDestinationPort(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	a, b := free(), free()
	_, portA, _ := net.SplitHostPort(a)
	_, portB, _ := net.SplitHostPort(b)
	e := New(Options{RouterFlavor: RouterExpressions})
	cfg := fmt.Sprintf(`{"_format_version":"3.0",
 "services":[{"name":"echo","host":"10.1.0.1","port":8080,"protocol":"http",
  "routes":[
   {"name":"on-a","expression":"net.dst.port == %s","priority":1},
   {"name":"on-b","expression":"(http.path ^= \"/b\") && (net.dst.port == %s)","priority":1}]}]}`, portA, portB)
	status, body, _ := call(t, e, http.MethodPost, "/config", cfg)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	p := e.Proxy(ProxyOptions{Resolve: func(host string, port int) http.Handler {
		return &EchoBackend{Namespace: "default", Pod: "echo"}
	}, AllowDebugHeader: true})
	ps, err := p.Start(ProxyListen{MoreAddrs: []string{a, b}})
	require.NoError(t, err)
	t.Cleanup(func() { ps.Close() })
	require.Equal(t, []string{"http://" + a, "http://" + b}, ps.MoreURLs)

	get := func(url string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Kong-Debug", "1")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, res.Header.Get("Kong-Route-Name")
	}
	code, route := get(ps.MoreURLs[0] + "/b")
	require.Equal(t, 200, code)
	require.Equal(t, "on-a", route)
	code, route = get(ps.MoreURLs[1] + "/b")
	require.Equal(t, 200, code)
	require.Equal(t, "on-b", route)
	code, _ = get(ps.MoreURLs[1] + "/a")
	require.Equal(t, 404, code, "no route of port B takes /a")
	code, _ = get(ps.URL + "/b")
	require.Equal(t, 404, code, "the first listen's port is neither")
}
