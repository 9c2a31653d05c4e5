package kongrouter

import (
	"net/http"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

func TestGatewayStreamsAndCandidates(t *testing.T) {
	cfg := &Config{
		Flavor: TraditionalCompatible,
		Services: []*kong.Service{
			{ID: kong.String("s-tcp"), Name: kong.String("tcp"), Protocol: kong.String("tcp"), Host: kong.String("db.default.5432.svc"), Port: kong.Int(5432)},
			{ID: kong.String("s-http"), Name: kong.String("web"), Protocol: kong.String("http"), Host: kong.String("10.0.0.5"), Port: kong.Int(80)},
		},
		Upstreams: []*kong.Upstream{{ID: kong.String("u1"), Name: kong.String("db.default.5432.svc")}},
		Targets: []*kong.Target{
			{Target: kong.String("10.0.1.1:5432"), Weight: kong.Int(100), Upstream: &kong.Upstream{ID: kong.String("u1")}},
		},
		Routes: []*kong.Route{
			{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8101"), Name: kong.String("by-port"), Protocols: kong.StringSlice("tcp"),
				Destinations: []*kong.CIDRPort{{Port: kong.Int(9000)}}, Service: &kong.Service{ID: kong.String("s-tcp")}},
			{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8102"), Name: kong.String("by-sni"), Protocols: kong.StringSlice("tls"),
				SNIs: kong.StringSlice("db.example.com"), Service: &kong.Service{ID: kong.String("s-tcp")}},
			{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8103"), Name: kong.String("short"), Protocols: kong.StringSlice("http"),
				Paths: kong.StringSlice("/a"), Service: &kong.Service{ID: kong.String("s-http")}},
			{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8104"), Name: kong.String("long"), Protocols: kong.StringSlice("http"),
				Paths: kong.StringSlice("/a/b"), Service: &kong.Service{ID: kong.String("s-http")}},
		},
	}
	g, err := NewGateway(cfg, "3.10.0")
	require.NoError(t, err)

	d, err := g.ProxyStream(&StreamRequest{Scheme: "tls", SNI: "db.example.com", ServerPort: 8443})
	require.NoError(t, err)
	require.Equal(t, "by-sni", *d.Match.Route.Name)
	target, exit := g.PickTarget(d)
	require.Nil(t, exit)
	require.Equal(t, Target{Host: "10.0.1.1", Port: 5432, Hostname: "10.0.1.1"}, *target)
	// Kong's transform makes an SNI route's SNIs count only for TLS connections
	// ("(net.protocol != tls || tls.sni == ...)", Kong #6425), and traditional_compatible adds
	// no protocol test: a plain TCP connection is taken by the SNI route, whose SNI bit outranks
	// a destination port.
	d, err = g.ProxyStream(&StreamRequest{Scheme: "tcp", ServerPort: 9000, ClientIP: "10.9.9.9", ClientPort: 40000})
	require.NoError(t, err)
	require.Equal(t, "by-sni", *d.Match.Route.Name)

	cfg.Routes = append(cfg.Routes[:1:1], cfg.Routes[2:]...)
	g, err = NewGateway(cfg, "3.10.0")
	require.NoError(t, err)
	d, err = g.ProxyStream(&StreamRequest{Scheme: "tcp", ServerPort: 9000})
	require.NoError(t, err)
	require.Equal(t, "by-port", *d.Match.Route.Name)
	d, err = g.ProxyStream(&StreamRequest{Scheme: "tcp", ServerPort: 9001})
	require.NoError(t, err)
	require.Nil(t, d, "no stream route takes it")

	// The HTTP routes are not in the stream router, nor the stream routes in the HTTP one.
	hd := g.Proxy(&Request{Method: "GET", Scheme: "http", Host: "x", URI: "/a/b/c", Header: http.Header{}, ClientIP: "10.9.9.9", ServerPort: 8000})
	require.Nil(t, hd.Exit)
	require.Equal(t, "long", *hd.Match.Route.Name)
	candidates, err := g.HTTPRouter().Candidates(Params{Method: "GET", URI: "/a/b/c"})
	require.NoError(t, err)
	require.Len(t, candidates, 2)
	require.Equal(t, "long", *candidates[0].Route.Name, "the longer prefix first")
	require.Equal(t, "short", *candidates[1].Route.Name)
	require.Greater(t, candidates[0].Matcher.Priority, candidates[1].Matcher.Priority)
}

// Misses says what of a route a request fails; Gateway.Candidates routes as Proxy does (the
// query is not the path).
func TestMissesAndGatewayCandidates(t *testing.T) {
	cfg := &Config{Flavor: TraditionalCompatible,
		Services: []*kong.Service{{ID: kong.String("s"), Name: kong.String("s"), Protocol: kong.String("http"), Host: kong.String("10.0.0.5"), Port: kong.Int(80)}},
		Routes: []*kong.Route{
			{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8201"), Name: kong.String("api"), Protocols: kong.StringSlice("http"),
				Hosts: kong.StringSlice("api.example.com", "*.api.example.com"), Paths: kong.StringSlice("/v1"), Methods: kong.StringSlice("GET"),
				Headers: map[string][]string{"x-team": {"a"}}, Service: &kong.Service{ID: kong.String("s")}},
			{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8202"), Name: kong.String("root"), Protocols: kong.StringSlice("http"),
				Paths: kong.StringSlice("/"), Service: &kong.Service{ID: kong.String("s")}},
		},
	}
	g, err := NewGateway(cfg, "3.10.0")
	require.NoError(t, err)
	var api *Matcher
	for _, m := range g.HTTPRouter().Matchers() {
		if *m.Route.Name == "api" {
			api = m
		}
	}
	req := func(method, host, uri string, h http.Header) *Request {
		return &Request{Method: method, Scheme: "http", Host: host, URI: uri, Header: h, ClientIP: "10.9.9.9", ServerPort: 8000}
	}
	for _, c := range []struct {
		r    *Request
		want []string
	}{
		{req("GET", "api.example.com", "/v1/x", http.Header{"X-Team": {"a"}}), []string{}},
		{req("GET", "x.api.example.com", "/v1", http.Header{"X-Team": {"a"}}), []string{}},
		{req("GET", "example.com", "/v1", http.Header{"X-Team": {"a"}}), []string{"http.host"}},
		{req("POST", "api.example.com", "/v2?/v1", http.Header{"X-Team": {"a"}}), []string{"http.method", "http.path"}},
		{req("GET", "api.example.com", "/v1", http.Header{"X-Team": {"b"}}), []string{"http.headers.x_team"}},
		{req("GET", "api.example.com", "/v1", http.Header{}), []string{"http.headers.x_team"}},
	} {
		got, err := g.Misses(api, c.r)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "%s %s%s", c.r.Method, c.r.Host, c.r.URI)
		cands, err := g.Candidates(c.r)
		require.NoError(t, err)
		names := []string{}
		for _, m := range cands {
			names = append(names, *m.Route.Name)
		}
		want := []string{"root"}
		if len(c.want) == 0 {
			want = []string{"api", "root"}
		}
		require.Equal(t, want, names)
		require.Equal(t, names[0], *g.Proxy(c.r).Match.Route.Name, "Candidates' first is what Proxy routes by")
	}
}
