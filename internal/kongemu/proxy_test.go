package kongemu

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// proxyWith loads cfg (a DB-less declarative configuration in YAML-free JSON form) and returns
// the emulator's proxy with echo backends at the addresses named in backends ("host:port" ->
// pod name).
func proxyWith(t *testing.T, cfg string, backends map[string]string) (*Emulator, *Proxy) {
	t.Helper()
	e := New(Options{})
	status, body, _ := call(t, e, http.MethodPost, "/config", cfg)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	p := e.Proxy(ProxyOptions{Resolve: func(host string, port int) http.Handler {
		pod, ok := backends[host+":"+itoa(port)]
		if !ok {
			return nil
		}
		return &EchoBackend{Namespace: "default", Pod: pod}
	}, AllowDebugHeader: true})
	return e, p
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// send makes a request through the proxy (from client 10.0.0.7) and returns the response and
// its body.
func send(t *testing.T, p http.Handler, method, target string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = "10.0.0.7:51000"
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, r)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

func echoOf(t *testing.T, body []byte) EchoResponse {
	t.Helper()
	var e EchoResponse
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e
}

const basicConfig = `{"_format_version":"3.0",
 "upstreams":[{"name":"echo.default.80.svc","targets":[{"target":"10.1.0.1:8080","weight":100},{"target":"10.1.0.2:8080","weight":100}]}],
 "services":[
  {"name":"echo","host":"echo.default.80.svc","port":80,"protocol":"http","path":"/",
   "routes":[
    {"name":"strip","paths":["/api"],"strip_path":true,"hosts":["example.com"]},
    {"name":"keep","paths":["/keep"],"strip_path":false,"hosts":["example.com"]},
    {"name":"regex","paths":["~/users/(?<id>\\d+)$"],"strip_path":false,"hosts":["example.com"]},
    {"name":"preserve","paths":["/preserve"],"preserve_host":true,"hosts":["example.com"]},
    {"name":"wild","paths":["/"],"hosts":["*.example.org"]}]},
  {"name":"down","host":"nowhere.default.80.svc","port":80,"protocol":"http",
   "routes":[{"name":"down","paths":["/down"]}]}]}`

func TestProxyRoutesAndForwards(t *testing.T) {
	_, p := proxyWith(t, strings.Replace(basicConfig, `,
 "upstreams_extra":null`, `,"upstreams_more":[]`, 1)[:0]+strings.Replace(basicConfig, `}`, `}`, 1), map[string]string{"10.1.0.1:8080": "echo-1", "10.1.0.2:8080": "echo-2"})

	res, body := send(t, p, "GET", "/api/v1/things?x=1&y=a%20b", map[string]string{"Host": "example.com"})
	require.Equal(t, 200, res.StatusCode, "%s", body)
	echo := echoOf(t, body)
	require.Equal(t, "/v1/things?x=1&y=a%20b", echo.Path, "strip_path takes /api off; the query is kept as sent")
	require.Equal(t, "10.1.0.1:8080", echo.Host, "the target's address as the Host Kong sends (no host_header, no preserve_host)")
	require.Equal(t, "10.0.0.7", echo.Headers["X-Forwarded-For"][0])
	require.Equal(t, "example.com", echo.Headers["X-Forwarded-Host"][0])
	require.Equal(t, "/api/v1/things", echo.Headers["X-Forwarded-Path"][0])
	require.Equal(t, "/api", echo.Headers["X-Forwarded-Prefix"][0])
	require.Equal(t, "1.1 kong/3.10.0", echo.Headers["Via"][0])
	require.Equal(t, "1.1 kong/3.10.0", res.Header.Get("Via"))
	require.NotEmpty(t, res.Header.Get("X-Kong-Request-Id"))

	// Weighted balancing across the two targets.
	pods := map[string]int{}
	for i := 0; i < 10; i++ {
		_, body := send(t, p, "GET", "/keep/x", map[string]string{"Host": "example.com"})
		pods[echoOf(t, body).Pod]++
	}
	require.Equal(t, map[string]int{"echo-1": 5, "echo-2": 5}, pods)

	_, body = send(t, p, "GET", "/keep/x", map[string]string{"Host": "example.com"})
	require.Equal(t, "/keep/x", echoOf(t, body).Path)
	_, body = send(t, p, "GET", "/users/42", map[string]string{"Host": "example.com"})
	require.Equal(t, "/users/42", echoOf(t, body).Path)
	_, body = send(t, p, "GET", "/preserve/a", map[string]string{"Host": "example.com:8000"})
	require.Equal(t, "example.com:8000", echoOf(t, body).Host)
	_, body = send(t, p, "GET", "/anything", map[string]string{"Host": "a.example.org"})
	require.Equal(t, "/anything", echoOf(t, body).Path)

	// No route: 404 with Kong's body.
	res, body = send(t, p, "GET", "/nothing", map[string]string{"Host": "example.net"})
	require.Equal(t, 404, res.StatusCode)
	var msg map[string]string
	require.NoError(t, json.Unmarshal(body, &msg))
	require.Equal(t, "no Route matched with those values", msg["message"])
	require.Equal(t, res.Header.Get("X-Kong-Request-Id"), msg["request_id"])
	require.Equal(t, "kong/3.10.0", res.Header.Get("Server"))

	// A service whose host is no upstream and that nothing answers: 502 after the retries.
	res, _ = send(t, p, "GET", "/down", nil)
	require.Equal(t, 502, res.StatusCode)

	// Kong's debug header.
	res, _ = send(t, p, "GET", "/keep", map[string]string{"Host": "example.com", "Kong-Debug": "1"})
	require.Equal(t, "keep", res.Header.Get("Kong-Route-Name"))
	require.Equal(t, "echo", res.Header.Get("Kong-Service-Name"))
	require.NotEmpty(t, res.Header.Get("Kong-Route-Id"))
}

func TestProxyUpstreamWithoutTargetsIs503(t *testing.T) {
	_, p := proxyWith(t, `{"_format_version":"3.0",
 "upstreams":[{"name":"empty.svc","targets":[{"target":"10.1.0.1:8080","weight":0}]}],
 "services":[{"name":"s","host":"empty.svc","routes":[{"paths":["/"]}]}]}`, map[string]string{"10.1.0.1:8080": "x"})
	res, body := send(t, p, "GET", "/", nil)
	require.Equal(t, 503, res.StatusCode)
	require.Contains(t, string(body), "failure to get a peer from the ring-balancer")
}

func TestProxyFollowsConfigurationChanges(t *testing.T) {
	e, p := proxyWith(t, `{"_format_version":"3.0","services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[{"name":"a","paths":["/a"]}]}]}`,
		map[string]string{"10.1.0.1:8080": "one"})
	res, _ := send(t, p, "GET", "/a", nil)
	require.Equal(t, 200, res.StatusCode)
	status, body, _ := call(t, e, http.MethodPost, "/config", `{"_format_version":"3.0","services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[{"name":"b","paths":["/b"]}]}]}`)
	require.Equal(t, 201, status, "%v", body)
	res, _ = send(t, p, "GET", "/a", nil)
	require.Equal(t, 404, res.StatusCode)
	res, _ = send(t, p, "GET", "/b", nil)
	require.Equal(t, 200, res.StatusCode)

	// Database mode: every entity write is seen by the next request.
	db := New(Options{Mode: Postgres})
	pdb := db.Proxy(ProxyOptions{Resolve: func(string, int) http.Handler { return &EchoBackend{Pod: "p"} }})
	status, svc, _ := call(t, db, "POST", "/services", map[string]any{"name": "s", "host": "10.1.0.1", "port": 8080})
	require.Equal(t, 201, status)
	res, _ = send(t, pdb, "GET", "/r", nil)
	require.Equal(t, 404, res.StatusCode)
	status, _, _ = call(t, db, "POST", "/services/s/routes", map[string]any{"name": "r", "paths": []string{"/r"}})
	require.Equal(t, 201, status)
	res, _ = send(t, pdb, "GET", "/r", nil)
	require.Equal(t, 200, res.StatusCode)
	status, _, _ = call(t, db, "DELETE", "/routes/r", nil)
	require.Equal(t, 204, status)
	res, _ = send(t, pdb, "GET", "/r", nil)
	require.Equal(t, 404, res.StatusCode)
	_ = svc
}

func TestProxyHTTPSRedirectAndGRPCChecks(t *testing.T) {
	_, p := proxyWith(t, `{"_format_version":"3.0","services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[
  {"name":"tls426","paths":["/426"],"protocols":["https"]},
  {"name":"tls301","paths":["/301"],"protocols":["https"],"https_redirect_status_code":301},
  {"name":"grpc","paths":["/grpc"],"protocols":["grpc","grpcs"]}]}]}`, map[string]string{"10.1.0.1:8080": "x"})
	res, body := send(t, p, "GET", "/426", nil)
	require.Equal(t, 426, res.StatusCode)
	require.Contains(t, string(body), "Please use HTTPS protocol")
	res, _ = send(t, p, "GET", "/301?q=1", map[string]string{"Host": "example.com"})
	require.Equal(t, 301, res.StatusCode)
	require.Equal(t, "https://example.com/301?q=1", res.Header.Get("Location"))
	res, body = send(t, p, "POST", "/grpc", nil)
	require.Equal(t, 415, res.StatusCode)
	require.Contains(t, string(body), "Non-gRPC request matched gRPC route")
	res, body = send(t, p, "POST", "/grpc", map[string]string{"Content-Type": "application/grpc"})
	require.Equal(t, 426, res.StatusCode)
	require.Contains(t, string(body), "Please use HTTP2 protocol")
}

// Kong's own http-to-https redirect (handler.lua, access phase "before"): Location is
// "https://" .. $host .. $request_uri, $host being nginx's (lower-cased, without the port;
// the server_name "kong" when the request names no host); no trusted_ips, so
// X-Forwarded-Proto and X-Forwarded-Host are the request's own. The redirect exits before the
// plugins iterator collects the route's plugins: the route's request-termination and
// response-transformer do not run (their Location would be "/other"), a global plugin's
// response phases do. An https request on the same route is proxied to its plugins.
func TestProxyHTTPSRedirectIsKongsOwn(t *testing.T) {
	_, p := proxyWith(t, `{"_format_version":"3.0","services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[
  {"name":"r","paths":["/r"],"protocols":["https"],"https_redirect_status_code":308,"plugins":[
    {"name":"request-termination","config":{"status_code":302}},
    {"name":"response-transformer","config":{"add":{"headers":["Location:/other","X-Route:1"]}}}]}]}],
 "plugins":[{"name":"response-transformer","config":{"add":{"headers":["X-Global:1"]}}}]}`, map[string]string{"10.1.0.1:8080": "x"})
	for _, c := range []struct{ host, location string }{
		{"Shop.Example.COM:8080", "https://shop.example.com/r/a%20b?q=1&x"},
		{"", "https://kong/r/a%20b?q=1&x"},
	} {
		res, _ := send(t, p, "POST", "/r/a%20b?q=1&x", map[string]string{"Host": c.host,
			"X-Forwarded-Proto": "https", "X-Forwarded-Host": "elsewhere.example.com"})
		require.Equal(t, 308, res.StatusCode, c.host)
		require.Equal(t, c.location, res.Header.Get("Location"), c.host)
		require.Empty(t, res.Header.Get("X-Route"), c.host)
		require.Equal(t, "1", res.Header.Get("X-Global"), c.host)
	}
	r := httptest.NewRequest("GET", "https://shop.example.com/r", nil)
	r.RequestURI = "/r"
	r.TLS = &tls.ConnectionState{ServerName: "shop.example.com"}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, r)
	require.Equal(t, 302, rec.Code)
	require.Equal(t, "/other", rec.Header().Get("Location"))
	require.Equal(t, "1", rec.Header().Get("X-Route"))
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// A target that sends no response within the service's read_timeout is given up (its request
// cancelled) and the next one tried, up to the service's retries, as nginx's
// proxy_next_upstream does; then Kong answers 504. A target that answers in time, or that has
// started its response, is not cut off. The echo backend's ?delay= holds its answer.
func TestProxyReadTimeoutIs504(t *testing.T) {
	e := New(Options{})
	status, out, _ := call(t, e, http.MethodPost, "/config", `{"_format_version":"3.0",
 "upstreams":[{"name":"echo.svc","targets":[{"target":"10.1.0.1:8080"},{"target":"10.1.0.2:8080"}]}],
 "services":[
  {"name":"short","host":"echo.svc","read_timeout":50,"retries":1,"routes":[{"name":"short","paths":["/short"],"strip_path":false}]},
  {"name":"long","host":"echo.svc","routes":[{"name":"long","paths":["/long"],"strip_path":false}]}]}`)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	var tries atomic.Int64
	p := e.Proxy(ProxyOptions{Resolve: func(host string, port int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tries.Add(1)
			(&EchoBackend{Namespace: "default", Pod: host}).ServeHTTP(w, r)
		})
	}})

	res, body := send(t, p, "GET", "/short?delay=1s", nil)
	require.Equal(t, http.StatusGatewayTimeout, res.StatusCode, "%s", body)
	require.Contains(t, string(body), "The upstream server is timing out")
	require.Empty(t, res.Header.Get("X-Kong-Upstream-Latency"), "no upstream response reached the client")
	require.Equal(t, int64(2), tries.Load(), "the first try and one retry")

	res, body = send(t, p, "GET", "/short?delay=1ms", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "/short?delay=1ms", echoOf(t, body).Path)

	// Kong's default read_timeout is 60 s: a slow answer still arrives.
	res, body = send(t, p, "GET", "/long?delay=200ms", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
}

// An in-process backend's header names reach Kong's plugins case-insensitively, as they would
// over the wire: the suite's echo server writes "x-header-set" as the request spelled it, and
// response-transformer's replace must find it.
func TestProxyBackendHeaderNamesAreCaseInsensitive(t *testing.T) {
	_, p := proxyWith(t, `{"_format_version":"3.0",
 "upstreams":[{"name":"echo.svc","targets":[{"target":"10.1.0.1:8080"}]}],
 "services":[{"name":"s","host":"echo.svc","routes":[{"name":"r","paths":["/"],
   "plugins":[{"name":"response-transformer","config":{"replace":{"headers":["X-Header-Set:header-set"]},"add":{"headers":["X-Header-Set:header-set"]}}}]}]}]}`,
		map[string]string{"10.1.0.1:8080": "echo-1"})
	res, body := send(t, p, "GET", "/", map[string]string{"X-Echo-Set-Header": "x-header-set:original-val-set"})
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	var sent []string // what a client would read: every spelling of the name, as on the wire
	for k, v := range res.Header {
		if strings.EqualFold(k, "X-Header-Set") {
			sent = append(sent, v...)
		}
	}
	require.Equal(t, []string{"header-set"}, sent)
}

// Kong buffers a request's body before proxying it (route request_buffering, true by
// default), so a try after one that read the body and timed out sends the whole body again.
func TestProxyRetrySendsTheWholeBody(t *testing.T) {
	e := New(Options{})
	status, out, _ := call(t, e, http.MethodPost, "/config", `{"_format_version":"3.0",
 "upstreams":[{"name":"echo.svc","targets":[{"target":"10.1.0.1:8080"},{"target":"10.1.0.2:8080"}]}],
 "services":[{"name":"s","host":"echo.svc","read_timeout":50,"retries":1,"routes":[{"name":"r","paths":["/"]}]}]}`)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	var tries atomic.Int64
	p := e.Proxy(ProxyOptions{Resolve: func(host string, port int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if tries.Add(1) == 1 {
				<-r.Context().Done() // read it all, then answer too late
				return
			}
			_, _ = w.Write(b)
		})
	}})
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("the whole body"))
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, r)
	require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body.String())
	require.Equal(t, "the whole body", rec.Body.String())
	require.Equal(t, int64(2), tries.Load())
}

// The same read timeout for a backend reached over the network (standalone kongemu): a slow
// backend is given up with 504, a quick one answers.
func TestProxyReadTimeoutOverTheNetwork(t *testing.T) {
	backend := httptest.NewServer(&EchoBackend{Pod: "net"})
	t.Cleanup(backend.Close)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	require.NoError(t, err)
	e := New(Options{})
	status, out, _ := call(t, e, http.MethodPost, "/config", `{"_format_version":"3.0",
 "services":[{"name":"s","host":"`+host+`","port":`+port+`,"read_timeout":100,"retries":0,"routes":[{"name":"r","paths":["/"],"strip_path":false}]}]}`)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	p := e.Proxy(ProxyOptions{})
	res, body := send(t, p, "GET", "/slow?delay=2s", nil)
	require.Equal(t, http.StatusGatewayTimeout, res.StatusCode, "%s", body)
	res, body = send(t, p, "GET", "/quick?delay=1ms", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "/quick?delay=1ms", echoOf(t, body).Path)
}
