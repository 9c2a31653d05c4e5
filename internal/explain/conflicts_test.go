package explain

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongrouter"
)

// Two Ingresses of one host and path: Kong evaluates one first (the greater id), the other can
// never win (with Prefix paths each could win some: Kong splits "/app/" and "~/app$" into two
// matchers, each ordered by an id of its own); routes of two namespaces on one host are listed; routes that each take some
// requests (a longer path, a wildcard host beside a plain one) are not shadowed.
func TestConflicts(t *testing.T) {
	for _, expressions := range []bool{false, true} {
		conflictsUnder(t, expressions)
	}
}

func conflictsUnder(t *testing.T, expressions bool) {
	e := translated(t, echoService+
		ingress("first", "dup.example.com", "", path("/app", "ImplementationSpecific"))+
		ingress("second", "dup.example.com", "", path("/app", "ImplementationSpecific"))+
		ingress("longer", "dup.example.com", "", path("/app/v2", "Prefix"))+
		ingress("wild", "'*.example.com'", "", path("/", "Prefix"))+
		ingress("plain", "a.example.com", "", path("/", "Prefix"))+
		`
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: tenant, namespace: team-b}
spec:
  ingressClassName: kong
  rules:
  - host: dup.example.com
    http:
      paths:
      - {path: /b, pathType: Prefix, backend: {service: {name: other, port: {number: 80}}}}
`, expressions)
	c := e.Conflicts()
	require.Zero(t, c.Unchecked, "KIC's expressions are read as fields")
	require.Len(t, c.Shadowed, 1, "%+v", c.Shadowed)
	loser, winner := c.Shadowed[0].Route.Name, c.Shadowed[0].By[0].Name
	require.ElementsMatch(t, []string{"default.first.echo.dup.example.com.80", "default.second.echo.dup.example.com.80"}, []string{loser, winner})
	x := explainURL(t, e, "GET", "http://dup.example.com/app/x")
	require.Equal(t, winner, x.Route.Name, "the router takes the winner")

	require.Len(t, c.SharedHosts, 1)
	require.Equal(t, "dup.example.com", c.SharedHosts[0].Host)
	require.Equal(t, []string{"default", "team-b"}, c.SharedHosts[0].Namespaces)
	require.Len(t, c.SharedHosts[0].Routes, 4)

	var b strings.Builder
	require.NoError(t, c.Text(&b))
	require.Contains(t, b.String(), "  "+loser+" <- Ingress default/")
	require.Contains(t, b.String(), "    shadowed by "+winner+" <- Ingress default/")
	require.Contains(t, b.String(), "  dup.example.com: namespaces default, team-b\n")
}

// A route listed as shadowed never takes a request made of its own hosts, paths, methods and
// headers, over every translator golden case (the router says so, not conflicts.go).
func TestShadowedRoutesNeverWin(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "*", "in.yaml"))
	require.NoError(t, err)
	shadowed := 0
	for _, in := range dirs {
		c := loadGoldenCase(t, filepath.Dir(in))
		cfg, err := kongrouter.ConfigFromDeclarative(c.flavor, c.config)
		require.NoError(t, err)
		e, err := New(Input{Config: cfg, Objects: c.objects})
		if err != nil {
			continue
		}
		for _, s := range e.Conflicts().Shadowed {
			shadowed++
			for _, r := range requestsOf(s.Route) {
				x, err := e.Explain(r)
				require.NoError(t, err)
				if x.Route != nil {
					require.NotEqual(t, s.Route.Name, x.Route.Name, "%s: %s %s", c.name, r.Method, r.URL)
				}
			}
		}
	}
	t.Logf("%d shadowed routes in the golden cases", shadowed)
}

// requestsOf are requests made of a route's first host and method, its headers, and each of
// its literal paths.
func requestsOf(r Route) []Request {
	host := "example.com"
	if len(r.Hosts) > 0 {
		host = strings.Replace(strings.Replace(r.Hosts[0], "*", "x", 1), ".x", ".com", 1)
	}
	method := "GET"
	if len(r.Methods) > 0 {
		method = r.Methods[0]
	}
	h := http.Header{}
	for k, v := range r.Headers {
		if !strings.HasPrefix(v[0], "~*") {
			h.Set(k, v[0])
		}
	}
	var out []Request
	for _, p := range append(r.Paths, "/") {
		if strings.HasPrefix(p, "~") {
			lit, _ := regexLiteralPrefix(p[1:])
			if p = lit; p == "" {
				continue
			}
		}
		out = append(out, Request{URL: "http://" + host + p, Method: method, Header: h})
	}
	return out
}

// What covers decides, case by case.
func TestCovers(t *testing.T) {
	route := func(hosts, paths, methods []string) *kong.Route {
		return &kong.Route{Hosts: kong.StringSlice(hosts...), Paths: kong.StringSlice(paths...), Methods: kong.StringSlice(methods...)}
	}
	for _, c := range []struct {
		name string
		a, b *kong.Route
		want bool
	}{
		{"same", route([]string{"a"}, []string{"/x"}, nil), route([]string{"a"}, []string{"/x"}, nil), true},
		{"shorter prefix covers longer", route([]string{"a"}, []string{"/x"}, nil), route([]string{"a"}, []string{"/x/y"}, nil), true},
		{"longer prefix does not cover shorter", route([]string{"a"}, []string{"/x/y"}, nil), route([]string{"a"}, []string{"/x"}, nil), false},
		{"no host covers a host", route(nil, []string{"/"}, nil), route([]string{"a"}, []string{"/"}, nil), true},
		{"a host does not cover no host", route([]string{"a"}, []string{"/"}, nil), route(nil, []string{"/"}, nil), false},
		{"wildcard covers its subdomain", route([]string{"*.example.com"}, nil, nil), route([]string{"a.example.com"}, nil, nil), true},
		{"wildcard does not cover the bare domain", route([]string{"*.example.com"}, nil, nil), route([]string{"example.com"}, nil, nil), false},
		{"a method narrows", route([]string{"a"}, nil, []string{"GET"}), route([]string{"a"}, nil, nil), false},
		{"no method covers a method", route([]string{"a"}, nil, nil), route([]string{"a"}, nil, []string{"GET"}), true},
		{"prefix covers a regex's literal start", route(nil, []string{"/api"}, nil), route(nil, []string{`~/api/v\d+`}, nil), true},
		{"prefix beyond a regex's literal start", route(nil, []string{"/api/v1"}, nil), route(nil, []string{`~/api/v\d+`}, nil), false},
		{"a regex covers only itself", route(nil, []string{`~/api`}, nil), route(nil, []string{`/api/x`}, nil), false},
		{"an optional character is not literal", route(nil, []string{"/abc"}, nil), route(nil, []string{`~/abc?`}, nil), false},
		{"/ covers a route without paths", route(nil, []string{"/"}, nil), route(nil, nil, nil), true},
	} {
		require.Equal(t, c.want, covers(c.a, c.b), c.name)
	}
	_, ok := regexLiteralPrefix(`a|b`)
	require.False(t, ok, "an alternation claims nothing")
}

// An expression is read as traditional fields when it is an AND of one field's values each, as
// KIC renders them; anything else is not read.
func TestTraditionalOf(t *testing.T) {
	for _, c := range []struct {
		expr string
		want *kong.Route // nil: not read
	}{
		{`(http.host == "a.example.com") && ((http.path == "/v1") || (http.path ^= "/v1/"))`,
			&kong.Route{Hosts: kong.StringSlice("a.example.com"), Paths: kong.StringSlice(`~/v1$`, "/v1/")}},
		{`((http.host == "api.example.com") || (http.host =^ ".example.org")) && (http.method == "GET")`,
			&kong.Route{Hosts: kong.StringSlice("api.example.com", "*.example.org"), Methods: kong.StringSlice("GET")}},
		{`(http.path ~ "^/items/[0-9]+") && (http.headers.x_env == "prod")`,
			&kong.Route{Paths: kong.StringSlice("~/items/[0-9]+"), Headers: map[string][]string{"x_env": {"prod"}}}},
		{`http.path ~ "/unanchored"`, nil},
		{`(http.path ^= "/a") && (http.path ^= "/a/b")`, nil},
		{`(http.host == "a") || (http.path ^= "/a")`, nil},
		{`!(http.path ^= "/a") && (http.host == "a")`, &kong.Route{Hosts: kong.StringSlice("a")}},
		{`(http.path ^= "/a") || !(http.host == "a")`, nil},
		{`http.queries.q == "1"`, nil},
	} {
		got, ok := traditionalOf(&kong.Route{Expression: kong.String(c.expr)})
		if c.want == nil {
			require.False(t, ok, c.expr)
			continue
		}
		require.True(t, ok, c.expr)
		require.Equal(t, c.want, got, c.expr)
	}
}

// A route whose expression excludes hosts (KIC's listener isolation under the expressions
// router) is not said to cover a route of a host it excludes: the wildcard route first leaves
// a.example.com to the route of that host.
func TestConflictsWithExclusions(t *testing.T) {
	route := func(id, name, expr string, priority uint64) *kong.Route {
		return &kong.Route{ID: kong.String(id), Name: kong.String(name), Expression: kong.String(expr), Priority: kong.Uint64(priority),
			Protocols: kong.StringSlice("http", "https"), Service: &kong.Service{ID: kong.String("s")}}
	}
	cfg := &kongrouter.Config{Flavor: kongrouter.Expressions,
		Services: []*kong.Service{{ID: kong.String("s"), Name: kong.String("s"), Host: kong.String("10.0.0.1"), Protocol: kong.String("http")}},
		Routes: []*kong.Route{
			route("8e5f3f5e-0000-4000-8000-000000000001", "wild", `(http.host =^ ".example.com") && !(http.host == "a.example.com")`, 10),
			route("8e5f3f5e-0000-4000-8000-000000000002", "a", `http.host == "a.example.com"`, 5),
		}}
	e, err := New(Input{Config: cfg})
	require.NoError(t, err)
	c := e.Conflicts()
	require.Empty(t, c.Shadowed)
	require.Zero(t, c.Unchecked)
	x, err := e.Explain(Request{URL: "http://a.example.com/"})
	require.NoError(t, err)
	require.Equal(t, "a", x.Route.Name, "the router agrees: the excluded host goes to its own route")
}
