package translator

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongemu"
)

// KIC's behaviour, measured in requests (issue #43 item 5): golden cases whose behaviour
// Kong's and KIC's docs describe with a request (regex paths and their priority, wildcard
// hosts, strip_path, rewrites, redirects, header and method matches, path types) are loaded
// into the Kong emulator as a DB-less Kong loads them, and each request is sent through its
// proxy: the route that takes it (Kong's debug header), the status, and the path and headers
// the upstream receives. Services without endpoints get one target here (10.99.0.1:80), so
// that a request the route takes reaches a backend.

type caseRequest struct {
	method, host, path string
	header             map[string]string
	// port is the Kong listen's port the request arrives on (net.dst.port; 0: none said).
	port int
	// route is the Kong route that takes the request ("" with status 404: none).
	route  string
	status int
	// upstream is the path and query the backend receives.
	upstream string
	// location is the Location header of a redirect.
	location string
	// sent are request headers the backend receives (a value of "" must be absent).
	sent map[string]string
	// got are response headers the client receives.
	got map[string]string
	// tls sends the request as an https one (Kong's https listen).
	tls bool
}

var requestCases = map[string][]caseRequest{
	// Wildcard hosts: *.example.com matches one label and more (Kong's =^ on ".example.com"),
	// not example.com itself; a route without hosts takes the rest. A prefix path "/wild" is
	// rendered as "/wild/" and "~/wild$", so "/wildfire" is not it.
	"hosts": {
		{host: "a.example.com", path: "/wild/x", route: "default.httpbin.httpbin._.example.com.80", upstream: "/wild/x"},
		{host: "a.b.example.com", path: "/wild", route: "default.httpbin.httpbin._.example.com.80", upstream: "/wild"},
		{host: "a.example.com", path: "/wildfire", route: "default.httpbin.httpbin..80", upstream: "/wildfire"},
		{host: "example.com", path: "/wild/x", route: "default.httpbin.httpbin..80", upstream: "/wild/x"},
		{host: "b.example.com", path: "/other", route: "default.httpbin-other.httpbin..80", upstream: "/other"},
		{host: "b.example.com", path: "/other/x?q=1", route: "default.httpbin-other.httpbin..80", upstream: "/other/x?q=1"},
	},
	// KIC's regex paths: "/~" marks a regex (anchored at the start by Kong), the
	// konghq.com/regex-prefix annotation another prefix; other paths are prefixes, "~" and all.
	"regex-prefix": {
		{host: "example.com", path: "/foo/123", route: "default.regex.httpbin.example.com.80", upstream: "/foo/123"},
		{host: "example.com", path: "/foo/1234/more", route: "default.regex.httpbin.example.com.80", upstream: "/foo/1234/more"},
		{host: "example.com", path: "/foo/12", status: 404},
		{host: "example.com", path: "/x/foo/123", status: 404},
		{host: "example.com", path: "/plain/~/not-a-prefix/y", route: "default.regex.httpbin.example.com.80", upstream: "/plain/~/not-a-prefix/y"},
		{host: "example.com", path: "/bar/abc", route: "default.custom-prefix.httpbin.example.com.80", upstream: "/bar/abc"},
		{host: "example.com", path: "/~/kept-as-is", route: "default.custom-prefix.httpbin.example.com.80", upstream: "/~/kept-as-is"},
	},
	// Path types: Exact is the path and nothing more, Prefix whole segments; a longer prefix
	// wins over a shorter one.
	"path-types": {
		{host: "example.com", path: "/whatever", route: "default.paths.httpbin.example.com.80", upstream: "/whatever"},
		{host: "example.com", path: "/internal/x", route: "default.paths.httpbin.example.com.80", upstream: "/internal/x"},
		{host: "example.com", path: "/second-rule/y", route: "default.paths.httpbin.example.com.80", upstream: "/second-rule/y"},
	},
	// konghq.com/rewrite: the regex path's capture becomes the upstream path. An Ingress whose
	// rewrite cannot be read drops the Kong service it shares, with its neighbour's routes
	// (as KIC drops the service; translation-rules.md §3.9).
	"rewrite": {
		{host: "good.example.com", path: "/api/users/7?x=1", route: "default.good.good.good.example.com.80", upstream: "/v2/users/7?x=1"},
		{host: "bad.example.com", path: "/", status: 404},
		{host: "neighbour.example.com", path: "/n", status: 404},
	},
	// Route annotations: methods, headers, host aliases, strip-path; protocols https,http
	// with a 308 redirect code serve plain HTTP too.
	"route-annotations": {
		{method: "GET", host: "alias.example.com", path: "/a/b", header: map[string]string{"X-Team": "b", "X-Env": "prod"},
			route: "default.all.httpbin.example.com.80", upstream: "/a/b"},
		{method: "DELETE", host: "example.com", path: "/", header: map[string]string{"X-Team": "a", "X-Env": "prod"}, status: 404},
		{method: "GET", host: "example.com", path: "/", header: map[string]string{"X-Team": "c", "X-Env": "prod"}, status: 404},
	},
	// HTTPRoute matches: Exact path with method and header matches (one by regex), and a
	// RegularExpression path with the same method and headers (one Kong route for both, as KIC
	// groups them); the header modifier filters on the request and the response.
	"httproute-filters": {
		{method: "GET", host: "api.example.com", path: "/exact", header: map[string]string{"X-Version": "2", "X-Regex": "v10", "X-Remove": "r"},
			route: "httproute.default.filters.0.0", upstream: "/exact", sent: map[string]string{"X-Set": "a", "X-Add": "b", "X-Remove": ""},
			got: map[string]string{"X-Resp": "c"}},
		{method: "GET", host: "api.example.com", path: "/exact", header: map[string]string{"X-Version": "3", "X-Regex": "v10"}, status: 404},
		{method: "GET", host: "x.example.com", path: "/items/42", header: map[string]string{"X-Version": "2", "X-Regex": "v1"},
			route: "httproute.default.filters.0.0", upstream: "/items/42"},
		{method: "POST", host: "api.example.com", path: "/items/42", header: map[string]string{"X-Version": "2", "X-Regex": "v1"}, status: 404},
	},
	// RequestRedirect on Kong before 3.9: request-termination and response-transformer's
	// Location.
	"httproute-redirect": {
		{host: "shop.example.com", path: "/cart", route: "httproute.default.to-https.0.0", status: 301, location: "https://shop.example.com"},
		{host: "shop.example.com", path: "/old/x", route: "httproute.default.to-https.1.0", status: 302, location: "http://new.example.com:8080/new"},
		// A scheme redirect without a hostname goes to the route's host, https.
		{host: "shop.example.com", path: "/checkout", route: "httproute.default.to-https.2.0", status: 301, location: "https://shop.example.com/checkout"},
	},
	// A redirect to https without a hostname on routes without one exact host: Kong's own
	// redirect answers plain http (the request's host without its port, its path and query);
	// an https request, which the route takes as well, gets the plugins' relative Location.
	"httproute-redirect-scheme":             schemeRedirectRequests("httproute.default.plain.", "httproute.default.wildcard.", "httproute.default.annotated."),
	"httproute-redirect-scheme-expressions": schemeRedirectRequests("httproute.default.plain._.", "httproute.default.wildcard._.example.com.", "httproute.default.annotated._."),
	// RequestRedirect on Kong 3.9: the redirect plugin.
	"httproute-redirect-expressions": {
		{host: "shop.example.com", path: "/checkout", route: "httproute.default.to-https.shop.example.com.2.0", status: 301, location: "https://shop.example.com/checkout"},
	},
	"httproute-redirect-kong-3.9": {
		{host: "shop.example.com", path: "/cart", route: "httproute.default.to-https.0.0", status: 301, location: "https://shop.example.com/cart"},
		{host: "shop.example.com", path: "/checkout/pay?x=1", route: "httproute.default.to-https.2.0", status: 301, location: "https://shop.example.com/checkout/pay?x=1"},
	},
	// URLRewrite under the expressions router: ReplacePrefixMatch.
	"httproute-expressions-rewrite": {
		{host: "example.com", path: "/users/1", route: "httproute.default.rewrite.example.com.0.0", upstream: "/api/users/1"},
		{method: "GET", host: "example.com", path: "/v1/things", header: map[string]string{"X-Env": "prod"},
			route: "httproute.default.rewrite.example.com.1.0", upstream: "/things", sent: map[string]string{}},
		{method: "GET", host: "example.com", path: "/v1/things", header: map[string]string{"X-Env": "dev"},
			route: "httproute.default.rewrite.example.com.0.0", upstream: "/api/v1/things"},
		{host: "example.com", path: "/healthz", route: "httproute.default.rewrite.example.com.2.0", upstream: "/healthz"},
	},
	// A GRPCRoute's routes under the expressions router keep the whole gRPC path: a method
	// match (==), a service prefix (^=) and a regex each take the request, and the backend
	// gets "/<service>/<method>" (with Kong's default strip_path the matched part would be
	// stripped, "/" for a method match).
	"grpcroute-expressions": {
		{method: "POST", host: "example.com", path: "/grpcbin.GRPCBin/DummyUnary", header: map[string]string{"Content-Type": "application/grpc", "X-Env": "prod"},
			route: "grpcroute.default.echo.example.com.0.0", upstream: "/grpcbin.GRPCBin/DummyUnary"},
		{method: "POST", host: "example.com", path: "/grpc.health.v1.Health/Check", header: map[string]string{"Content-Type": "application/grpc"},
			route: "grpcroute.default.echo.example.com.0.1", upstream: "/grpc.health.v1.Health/Check"},
		{method: "POST", host: "example.com", path: "/other.Svc/Index", header: map[string]string{"Content-Type": "application/grpc"},
			route: "grpcroute.default.echo.example.com.0.3", upstream: "/other.Svc/Index"},
	},
	// Listener isolation: a request belongs to the most specific listener its host matches,
	// and only that listener's routes take it; the others answer 404 for it.
	"httproute-listener-isolation-expressions": {
		{host: "other.org", path: "/empty-hostname", route: "httproute.default.attaches-to-empty-hostname._.0.0", upstream: "/empty-hostname"},
		{host: "bar.example.com", path: "/empty-hostname", status: 404},
		{host: "bar.example.com", path: "/wildcard-example-com", route: "httproute.default.attaches-to-wildcard-example-com._.example.com.0.0", upstream: "/wildcard-example-com"},
		{host: "x.bar.example.com", path: "/wildcard-example-com", status: 404}, // another Gateway's listener
		{host: "x.bar.example.com", path: "/empty-hostname", status: 404},
		{host: "abc.foo.example.com", path: "/intersect", status: 404},
		{host: "other.org", path: "/intersect", route: "httproute.default.intersecting.other.org.0.0", upstream: "/intersect"},
		{host: "bar.foo.example.com", path: "/wildcard-example-com", status: 404},
		{host: "bar.foo.example.com", path: "/wildcard-foo-example-com", route: "httproute.default.attaches-to-wildcard-foo-example-com._.foo.example.com.0.0", upstream: "/wildcard-foo-example-com"},
		{host: "abc.foo.example.com", path: "/wildcard-foo-example-com", status: 404},
		{host: "abc.foo.example.com", path: "/abc-foo-example-com", route: "httproute.default.attaches-to-abc-foo-example-com.abc.foo.example.com.0.0", upstream: "/abc-foo-example-com"},
	},
	// Listener ports (options.yaml: Gateway port 80 is Kong's 8000, 8080 is 8001, 8090 is
	// 8002): a route attached to some of the Gateway's ports takes requests on their Kong
	// ports only; one on every port, or whose port's Kong port is not known, takes them all.
	// Kong's router reads the port a request's Host names first, the listen's without one.
	"httproute-listener-ports-expressions": {
		{host: "foo.com", path: "/", port: 8001, route: "httproute.default.backend-v2.foo.com.0.0", upstream: "/"},
		{host: "foo.com:8080", path: "/", port: 8000, route: "httproute.default.backend-v2.foo.com.0.0", upstream: "/"},
		{host: "foo.com:80", path: "/", port: 8000, route: "httproute.default.backend-v1.foo.com.0.0", upstream: "/"},
		{host: "foo.com", path: "/", port: 8000, route: "httproute.default.backend-v1.foo.com.0.0", upstream: "/"},
		{host: "foo.com:8080", path: "/", port: 8001, route: "httproute.default.backend-v2.foo.com.0.0", upstream: "/"},
		{host: "bar.com:8080", path: "/", port: 8001, route: "httproute.default.backend-v2.bar.com.0.0", upstream: "/"},
		{host: "bar.com", path: "/", port: 8000, status: 404},
		{host: "foo.com:8090", path: "/v3", port: 8002, route: "httproute.default.backend-v3.foo.com.0.0", upstream: "/v3"},
		{host: "foo.com:8090", path: "/", port: 8002, status: 404},
		{host: "bar.com:8090", path: "/v3", port: 8002, status: 404},
		{host: "foo.com", path: "/v3", port: 8000, route: "httproute.default.backend-v1.foo.com.0.0", upstream: "/v3"},
		{host: "foo.com:8090", path: "/all", port: 8002, route: "httproute.default.everywhere.foo.com.0.0", upstream: "/all"},
		{host: "foo.com", path: "/unknown", port: 8000, route: "httproute.default.unknown-port.foo.com.0.0", upstream: "/unknown"},
	},
	"httproute-cors":             corsRequests("httproute.default.cors."),
	"httproute-cors-expressions": corsRequests("httproute.default.cors._."),
}

// schemeRedirectRequests are the requests of the httproute-redirect-scheme cases, whose route
// names start with plain, wildcard and annotated.
func schemeRedirectRequests(plain, wildcard, annotated string) []caseRequest {
	return []caseRequest{
		{host: "Gw.Example.NET:8080", path: "/scheme/a?b=1", route: plain + "0.0", status: 302, location: "https://gw.example.net/scheme/a?b=1"},
		{host: "gw.example.net", path: "/permanent", route: plain + "1.0", status: 301, location: "https://gw.example.net/permanent"},
		{host: "gw.example.net", path: "/scheme", tls: true, route: plain + "0.0", status: 302, location: "/scheme"},
		{host: "gw.example.net", path: "/see-other", status: 404},
		// Kept as before: the redirect to itself of a Location without a host.
		{host: "gw.example.net", path: "/with-header", route: plain + "3.0", status: 302, location: "/with-header", got: map[string]string{"X-Redirected": "yes"}},
		{host: "gw.example.net:8080", path: "/port", route: plain + "4.0", status: 302, location: "/port"},
		{host: "gw.example.net", path: "/annotated", route: annotated + "0.0", status: 302, location: "/annotated"},
		{host: "shop.example.com", path: "/cart", route: wildcard + "0.0", status: 308, location: "https://shop.example.com/cart"},
		{host: "shop.example.com", path: "/cart", tls: true, route: wildcard + "0.0", status: 308, location: "/"},
	}
}

// corsRequests are the CORS filter's requests, the same under either router (route is the
// prefix of its route names): Kong's cors plugin answers a preflight itself (200, no backend)
// and adds its headers to the backend's answer; an origin that matches no allowed one gets no
// Access-Control-Allow-Origin; a wildcard origin with credentials echoes the origin; a rule
// without the filter adds nothing.
func corsRequests(route string) []caseRequest {
	preflight := func(origin string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-header-1"}
	}
	return []caseRequest{
		{method: "OPTIONS", path: "/cors-1", header: preflight("https://xpto.www.bar.com"), route: route + "0.0",
			got: map[string]string{"Access-Control-Allow-Origin": "https://xpto.www.bar.com", "Access-Control-Allow-Methods": "GET,OPTIONS",
				"Access-Control-Allow-Headers": "x-header-1,x-header-2", "Access-Control-Allow-Credentials": "true", "Access-Control-Max-Age": "3600"}},
		{method: "OPTIONS", path: "/cors-1", header: preflight("https://bar.com"), route: route + "0.0",
			got: map[string]string{"Access-Control-Allow-Origin": ""}},
		{method: "GET", path: "/cors-1/x", header: map[string]string{"Origin": "https://www.foo.com"}, route: route + "0.0", upstream: "/cors-1/x",
			got: map[string]string{"Access-Control-Allow-Origin": "https://www.foo.com", "Access-Control-Expose-Headers": "x-header-3,x-header-4", "Vary": "Origin"}},
		{method: "GET", path: "/cors-1", header: map[string]string{"Origin": "https://foobar.com"}, route: route + "0.0", upstream: "/cors-1",
			got: map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Expose-Headers": "x-header-3,x-header-4"}},
		{method: "OPTIONS", path: "/cors-wildcard", header: preflight("https://other.foo.com"), route: route + "1.0",
			got: map[string]string{"Access-Control-Allow-Origin": "https://other.foo.com", "Access-Control-Allow-Credentials": "true",
				"Access-Control-Allow-Headers": "x-header-1", "Access-Control-Allow-Methods": "GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT"}},
		{method: "OPTIONS", path: "/plain", header: preflight("https://www.foo.com"), route: route + "2.0", upstream: "/plain",
			got: map[string]string{"Access-Control-Allow-Origin": ""}},
	}
}

func TestGoldenCasesInRequests(t *testing.T) {
	for name, requests := range requestCases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			raw, _ := renderCase(t, dir)
			var cfg map[string]any
			require.NoError(t, sigsyaml.Unmarshal([]byte(raw), &cfg))
			for _, u := range asList(cfg["upstreams"]) {
				if len(asList(u.(map[string]any)["targets"])) == 0 {
					u.(map[string]any)["targets"] = []any{map[string]any{"target": "10.99.0.1:80"}}
				}
			}
			body, err := json.Marshal(cfg)
			require.NoError(t, err)
			emu := kongemu.New(readGoldenOptions(t, dir).emulator())
			rec := httptest.NewRecorder()
			emu.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/config", strings.NewReader(string(body))))
			require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body.String())
			proxy := emu.Proxy(kongemu.ProxyOptions{AllowDebugHeader: true, Resolve: func(host string, port int) http.Handler {
				return &kongemu.EchoBackend{Pod: fmt.Sprintf("%s:%d", host, port)}
			}})
			for _, c := range requests {
				checkRequest(t, proxy, c)
			}
		})
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func checkRequest(t *testing.T, proxy http.Handler, c caseRequest) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	what := fmt.Sprintf("%s http://%s%s", method, c.host, c.path)
	r := httptest.NewRequest(method, c.path, nil)
	if c.port != 0 {
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: c.port}))
	}
	r.Host = c.host
	if c.tls {
		r.TLS = &tls.ConnectionState{ServerName: c.host}
		what = "https" + strings.TrimPrefix(what, method+" http")
	}
	r.Header.Set("Kong-Debug", "1")
	for k, v := range c.header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	proxy.ServeHTTP(rec, r)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	require.Equal(t, status, res.StatusCode, "%s: %s", what, body)
	require.Equal(t, c.route, res.Header.Get("Kong-Route-Name"), "%s: the route", what)
	if c.location != "" {
		require.Equal(t, c.location, strings.TrimSpace(res.Header.Get("Location")), "%s: Location", what)
	}
	for k, v := range c.got {
		require.Equal(t, v, res.Header.Get(k), "%s: response header %s", what, k)
	}
	if c.upstream == "" && len(c.sent) == 0 {
		return
	}
	var echo kongemu.EchoResponse
	require.NoError(t, json.Unmarshal(body, &echo), "%s: %s", what, body)
	require.Equal(t, c.upstream, echo.Path, "%s: the upstream path", what)
	for k, v := range c.sent {
		got := ""
		if vs := echo.Headers[k]; len(vs) > 0 {
			got = vs[0]
		}
		require.Equal(t, v, got, "%s: request header %s at the backend", what, k)
	}
}
