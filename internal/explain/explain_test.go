package explain

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongrouter"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// translated is an Explainer over manifests translated as `konductor translate` does, for
// the traditional_compatible router or (expressions) the expressions router.
func translated(t *testing.T, manifests string, expressions bool) *Explainer {
	t.Helper()
	loaded, err := manifest.Parse([]byte(manifests))
	require.NoError(t, err)
	st, err := store.NewForObjects(loaded.Objects, store.Options{IngressClass: store.DefaultIngressClass})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	opts := translator.Options{ExpressionRoutes: expressions, RustRegexes: true}
	state, problems := translator.Translate(snap, opts)
	cfg, err := state.DeclarativeConfig()
	require.NoError(t, err)
	flavor := kongrouter.TraditionalCompatible
	if expressions {
		flavor = kongrouter.Expressions
	}
	kc, err := kongrouter.ConfigFromDeclarative(flavor, cfg)
	require.NoError(t, err)
	e, err := New(Input{Config: kc, Objects: loaded.Objects, Problems: problems})
	require.NoError(t, err)
	return e
}

func explainURL(t *testing.T, e *Explainer, method, u string, header ...string) *Explanation {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	x, err := e.Explain(Request{URL: u, Method: method, Header: h})
	require.NoError(t, err)
	return x
}

const echoService = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, namespace: default, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints: [{addresses: [10.0.0.1], conditions: {ready: true}}]
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: team-b}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
`

// ingress is an Ingress of one rule in namespace default, its paths made by path.
func ingress(name, host, annotations, paths string) string {
	return "\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: " + name +
		"\n  namespace: default\n  annotations: {" + annotations + "}\nspec:\n  ingressClassName: kong\n  rules:\n  - host: " + host +
		"\n    http:\n      paths:\n" + paths
}

// gateway is a GatewayClass of KIC's controller and a Gateway "kong" in default that takes
// routes of every namespace.
const gateway = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: kong}
spec: {controllerName: konghq.com/kic-gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: kong, namespace: default}
spec:
  gatewayClassName: kong
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
`

// httpRoute is an HTTPRoute of example.com in default with one rule of one match (match: the
// match's YAML flow fields) to the echo Service.
func httpRoute(name, match string) string {
	return "\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name + ", namespace: default}\n" +
		"spec:\n  parentRefs: [{name: kong}]\n  hostnames: [example.com]\n  rules:\n  - matches: [{" + match + "}]\n" +
		"    backendRefs: [{name: echo, port: 80}]\n"
}

// path is an Ingress path to the echo Service.
func path(p, typ string) string {
	return "      - {path: '" + p + "', pathType: " + typ + ", backend: {service: {name: echo, port: {number: 80}}}}\n"
}

// The source of the route that takes a request is the Ingress path whose Kong paths take it
// (rule and path index), or the HTTPRoute rule and match; the service and upstream name their
// Service.
func TestSourcesOfTheRoute(t *testing.T) {
	manifests := echoService + `
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: default}
spec:
  ingressClassName: kong
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /cart, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}
  - host: api.example.com
    http:
      paths:
      - {path: /v1, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}
      - {path: /v1/orders, pathType: Exact, backend: {service: {name: echo, port: {number: 80}}}}
      - {path: /v2, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}
` + gateway + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: gw, namespace: default}
spec:
  parentRefs: [{name: kong}]
  hostnames: [gw.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /a}}]
    backendRefs: [{name: echo, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /b}}, {path: {type: PathPrefix, value: /c}, method: POST}]
    backendRefs: [{name: echo, port: 80}]
`
	for _, expressions := range []bool{false, true} {
		sourcesUnder(t, translated(t, manifests, expressions))
	}
}

// Without the objects (--from-controller), an HTTPRoute's match is read from the route's name
// under the expressions router only.
func TestSourcesWithoutObjects(t *testing.T) {
	manifests := echoService + gateway + httpRoute("gw", "path: {type: PathPrefix, value: /a}") +
		"  - matches: [{path: {type: PathPrefix, value: /b}}]\n    backendRefs: [{name: echo, port: 80}]\n"
	for _, c := range []struct {
		expressions bool
		want        string
	}{{false, "HTTPRoute default/gw"}, {true, "HTTPRoute default/gw spec.rules[1].matches[0]"}} {
		e := translated(t, manifests, c.expressions)
		e.sources.httpRoutes = nil // as from a controller's dump: tags, no objects
		x := explainURL(t, e, "GET", "http://example.com/b/x")
		require.Equal(t, c.want, x.Route.Source.String(), x.Router)
	}
	// A GRPCRoute's routes are one per match under both routers.
	grpc := &kong.Route{Name: kong.String("grpcroute.default.echo.0.3"), Paths: kong.StringSlice("~/.+/Index"),
		Tags: kong.StringSlice("k8s-name:echo", "k8s-namespace:default", "k8s-kind:GRPCRoute")}
	require.Equal(t, "GRPCRoute default/echo spec.rules[0].matches[3]", newSources(Input{}).ofRoute(grpc, nil, nil).String())
}

func sourcesUnder(t *testing.T, e *Explainer) {
	t.Helper()
	for _, c := range []struct {
		method, url, source string
	}{
		{"GET", "http://shop.example.com/cart/items", "Ingress default/shop spec.rules[0].http.paths[0]"},
		{"GET", "http://api.example.com/v1/users", "Ingress default/shop spec.rules[1].http.paths[0]"},
		// /v1/orders is both paths' (Exact and Prefix /v1): the Exact one's regex ranks first.
		{"GET", "http://api.example.com/v1/orders", "Ingress default/shop spec.rules[1].http.paths[1]"},
		{"GET", "http://api.example.com/v2", "Ingress default/shop spec.rules[1].http.paths[2]"},
		{"GET", "http://gw.example.com/a/x", "HTTPRoute default/gw spec.rules[0].matches[0]"},
		{"POST", "http://gw.example.com/c", "HTTPRoute default/gw spec.rules[1].matches[1]"},
		{"GET", "http://gw.example.com/b", "HTTPRoute default/gw spec.rules[1].matches[0]"},
	} {
		x := explainURL(t, e, c.method, c.url)
		require.NotNil(t, x.Route, "%s (%s)", c.url, x.Router)
		require.Equal(t, c.source, x.Route.Source.String(), "%s (%s)", c.url, x.Router)
		require.Equal(t, "Service default/echo", x.Service.Source.String(), c.url)
	}
}

// KIC's and Kong's documented routing, each case as the docs state its outcome: the route that
// takes the request, why the other loses, and the path the upstream receives.
func TestDocumentedRouting(t *testing.T) {
	for _, c := range []struct {
		name      string
		doc       string
		manifests string
		method    string
		url       string
		header    []string
		route     string // the winner ("" for none)
		// exprRoute and exprLoser are the winner and loser under the expressions router when
		// they differ (HTTPRoute routes are named by host there; regex_priority is not in KIC's
		// expression priorities).
		exprRoute, exprLoser string
		loser                string // a route that also matches
		decider              string
		upstream             string // the path the upstream receives
	}{
		{
			name: "longest prefix wins", doc: "Kong: routes/#matching-priorities, prefix paths by length",
			manifests: ingress("short", "example.com", "", path("/version", "Prefix")) + ingress("long", "example.com", "", path("/version/any", "Prefix")),
			url:       "http://example.com/version/any/thing", route: "default.long.echo.example.com.80", loser: "default.short.echo.example.com.80",
			decider: kongrouter.PartPathLength, upstream: "/version/any/thing",
		},
		{
			name: "regex before prefix", doc: "Kong: regex paths are evaluated before prefix paths; KIC: /~ marks a regex path",
			manifests: ingress("prefix", "example.com", "", path("/version/any/thing", "ImplementationSpecific")) +
				ingress("regex", "example.com", "", path(`/~/version/\d+`, "ImplementationSpecific")),
			url: "http://example.com/version/any/thing", route: "default.prefix.echo.example.com.80",
		},
		{
			name: "regex outranks a longer prefix", doc: "Kong: regex paths are evaluated before prefix paths",
			manifests: ingress("prefix", "example.com", "", path("/status/123/and/more", "ImplementationSpecific")) +
				ingress("regex", "example.com", "", path(`/~/status/\d+`, "ImplementationSpecific")),
			url: "http://example.com/status/123/and/more", route: "default.regex.echo.example.com.80", loser: "default.prefix.echo.example.com.80",
			decider: kongrouter.PartRegexPaths, upstream: "/status/123/and/more",
		},
		{
			name: "regex_priority orders regexes", doc: "Kong: regex_priority; KIC: konghq.com/regex-priority",
			manifests: ingress("low", "example.com", "", path(`/~/version/\d+/status/\d+`, "ImplementationSpecific")) +
				ingress("high", "example.com", "konghq.com/regex-priority: '6'", path(`/~/version/\d+`, "ImplementationSpecific")),
			url: "http://example.com/version/1/status/2", route: "default.high.echo.example.com.80", loser: "default.low.echo.example.com.80",
			decider: kongrouter.PartRegexPriority, upstream: "/version/1/status/2",
			// KIC's expression routes have no regex_priority: the longer regex wins.
			exprRoute: "default.low.echo.example.com.80",
		},
		{
			name: "plain host over wildcard", doc: "Kong: plain hosts rank above wildcard hosts",
			manifests: ingress("wild", "'*.example.com'", "", path("/", "Prefix")) + ingress("plain", "a.example.com", "", path("/", "Prefix")),
			url:       "http://a.example.com/x", route: "default.plain.echo.a.example.com.80", loser: "default.wild.echo._.example.com.80",
			decider: kongrouter.PartPlainHosts, upstream: "/x",
		},
		{
			name: "a header narrows", doc: "Kong: a route with more matching fields ranks first; KIC: konghq.com/headers.*",
			manifests: ingress("any", "example.com", "", path("/", "Prefix")) + ingress("beta", "example.com", "konghq.com/headers.x-beta: 'yes'", path("/", "Prefix")),
			url:       "http://example.com/x", header: []string{"X-Beta", "yes"}, route: "default.beta.echo.example.com.80", loser: "default.any.echo.example.com.80",
			decider: kongrouter.PartWeight, upstream: "/x",
		},
		{
			name: "Prefix is per segment", doc: "KIC: pathType Prefix /foo matches /foo and /foo/bar, not /foobar",
			manifests: ingress("foo", "example.com", "", path("/foo", "Prefix")),
			url:       "http://example.com/foobar",
		},
		{
			name: "Exact is the path only", doc: "KIC: pathType Exact /foo matches /foo only",
			manifests: ingress("foo", "example.com", "", path("/foo", "Exact")),
			url:       "http://example.com/foo/",
		},
		{
			name: "strip_path", doc: "Kong: strip_path strips the matched prefix; KIC: konghq.com/strip-path",
			manifests: ingress("strip", "example.com", "konghq.com/strip-path: 'true'", path("/service", "Prefix")),
			url:       "http://example.com/service/path/to/resource?x=1", route: "default.strip.echo.example.com.80", upstream: "/path/to/resource?x=1",
		},
		{
			name: "no strip_path by default", doc: "KIC: routes keep their path (strip_path false)",
			manifests: ingress("keep", "example.com", "", path("/service", "Prefix")),
			url:       "http://example.com/service/path", route: "default.keep.echo.example.com.80", upstream: "/service/path",
		},
		{
			name: "HTTPRoute: the longest PathPrefix", doc: "Gateway API: the longest matching prefix takes precedence",
			manifests: gateway + httpRoute("short", "path: {type: PathPrefix, value: /api}") + httpRoute("long", "path: {type: PathPrefix, value: /api/v1}"),
			url:       "http://example.com/api/v1/users", route: "httproute.default.long.0.0", loser: "httproute.default.short.0.0",
			decider: kongrouter.PartPathLength, upstream: "/api/v1/users",
			exprRoute: "httproute.default.long.example.com.0.0", exprLoser: "httproute.default.short.example.com.0.0",
		},
		{
			name: "HTTPRoute: a method match", doc: "Gateway API: a method match takes precedence over none",
			manifests: gateway + httpRoute("any", "path: {type: PathPrefix, value: /api}") + httpRoute("get", "path: {type: PathPrefix, value: /api}, method: GET"),
			url:       "http://example.com/api/x", route: "httproute.default.get.0.0", loser: "httproute.default.any.0.0",
			decider: kongrouter.PartWeight, upstream: "/api/x",
			exprRoute: "httproute.default.get.example.com.0.0", exprLoser: "httproute.default.any.example.com.0.0",
		},
		{
			name: "HTTPRoute: more header matches", doc: "Gateway API: the most header matches take precedence",
			manifests: gateway + httpRoute("one", "path: {type: PathPrefix, value: /api}, headers: [{name: x-a, value: '1'}]") +
				httpRoute("two", "path: {type: PathPrefix, value: /api}, headers: [{name: x-a, value: '1'}, {name: x-b, value: '2'}]"),
			url: "http://example.com/api/x", header: []string{"X-A", "1", "X-B", "2"}, route: "httproute.default.two.0.0", loser: "httproute.default.one.0.0",
			decider: kongrouter.PartHeaders, upstream: "/api/x",
			exprRoute: "httproute.default.two.example.com.0.0", exprLoser: "httproute.default.one.example.com.0.0",
		},
		{
			name: "the service's path before what strip_path leaves", doc: "Kong: path_handling v0 (service path /s, route /fv0, request /fv0/req: /s/req); KIC: konghq.com/path on the Service",
			manifests: `
---
apiVersion: v1
kind: Service
metadata: {name: pathed, namespace: default, annotations: {konghq.com/path: /s}}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
` + strings.ReplaceAll(ingress("fv0", "example.com", "konghq.com/strip-path: 'true'", path("/fv0", "ImplementationSpecific")), "name: echo", "name: pathed"),
			url: "http://example.com/fv0/req", route: "default.fv0.pathed.example.com.80", upstream: "/s/req",
		},
		{
			name: "a method narrows", doc: "KIC: konghq.com/methods",
			manifests: ingress("post", "example.com", "konghq.com/methods: 'POST'", path("/", "Prefix")),
			method:    "GET", url: "http://example.com/",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, expressions := range []bool{false, true} {
				e := translated(t, echoService+c.manifests, expressions)
				x := explainURL(t, e, c.method, c.url, c.header...)
				route, loser := c.route, c.loser
				if expressions && c.exprRoute != "" {
					route, loser = c.exprRoute, c.route
					if c.exprLoser != "" {
						loser = c.exprLoser
					}
				}
				if route == "" {
					require.Nil(t, x.Route, "%s (%s): no route takes %s", c.doc, x.Router, c.url)
					require.Equal(t, 404, x.Answer.Status)
					require.NotEmpty(t, x.Nearest, "a miss names the nearest routes")
					continue
				}
				require.NotNil(t, x.Route, "%s (%s)", c.doc, x.Router)
				require.Equal(t, route, x.Route.Name, "%s (%s)", c.doc, x.Router)
				if c.upstream != "" {
					require.Equal(t, c.upstream, x.Forward.Path, "%s (%s)", c.doc, x.Router)
				}
				if loser == "" {
					continue
				}
				require.Len(t, x.Losers, 1, "%s (%s)", c.doc, x.Router)
				require.Equal(t, loser, x.Losers[0].Route.Name)
				require.NotEmpty(t, x.Losers[0].Why)
				if expressions {
					require.Equal(t, kongrouter.PartExpression, x.Losers[0].Decider)
					require.Contains(t, x.Losers[0].Why, "KIC's priority part that decides is the")
				} else {
					require.Equal(t, c.decider, x.Losers[0].Decider, x.Losers[0].Why)
				}
			}
		})
	}
}

// A request no route takes names the nearest routes and what differs; an object translation
// left out that would have taken it is named with its problems, one that would not is not.
func TestNoMatchNearestAndLeftOut(t *testing.T) {
	manifests := echoService + ingress("api", "api.example.com", "konghq.com/methods: GET", path("/v1", "Prefix")) +
		ingress("broken", "broken.example.com", "", path("/ok", "Prefix")+"      - {path: /nothing, pathType: Prefix, backend: {}}\n")
	for _, expressions := range []bool{true, false} {
		e := translated(t, manifests, expressions)
		x := explainURL(t, e, "POST", "http://api.example.com/v2")
		require.Nil(t, x.Route)
		require.Equal(t, "router", x.Answer.By)
		require.NotEmpty(t, x.Nearest)
		require.Equal(t, "default.api.echo.api.example.com.80", x.Nearest[0].Route.Name)
		require.Len(t, x.Nearest[0].Differs, 2, x.Router)
		require.Equal(t, "method: the route takes GET, not POST", x.Nearest[0].Differs[0], x.Router)
		require.Regexp(t, `^path: the route takes .*/v1.*, not /v2$`, x.Nearest[0].Differs[1], x.Router)
	}
	e := translated(t, manifests, false)

	x := explainURL(t, e, "GET", "http://broken.example.com/nothing/x")
	require.Nil(t, x.Route)
	require.Len(t, x.LeftOut, 1)
	require.Equal(t, "Ingress default/broken", x.LeftOut[0].Source.String())
	require.Len(t, x.LeftOut[0].Problems, 1)
	require.Contains(t, x.LeftOut[0].Problems[0], "spec.rules[0].http.paths[1].backend")
	// The Ingress's other path took this one: nothing of it was left out on its way.
	x = explainURL(t, e, "GET", "http://broken.example.com/ok")
	require.NotNil(t, x.Route)
	require.Empty(t, x.LeftOut)
}

// Plugins are listed in Kong's order with their source, and one that answers ends the request
// there; the upstream request carries what the transformer adds.
func TestPluginsAndTheUpstreamRequest(t *testing.T) {
	e := translated(t, echoService+`
---
apiVersion: configuration.konghq.com/v1
kind: KongPlugin
metadata: {name: add-header, namespace: default}
plugin: request-transformer
config: {add: {headers: ["x-added:yes"]}, remove: {headers: ["x-secret"]}}
---
apiVersion: configuration.konghq.com/v1
kind: KongPlugin
metadata: {name: auth, namespace: default}
plugin: key-auth
`+ingress("open", "open.example.com", "konghq.com/plugins: add-header, konghq.com/preserve-host: 'false'", path("/", "Prefix"))+
		ingress("closed", "closed.example.com", "konghq.com/plugins: 'auth,add-header'", path("/", "Prefix")), false)
	x := explainURL(t, e, "GET", "http://open.example.com/a", "X-Secret", "s")
	require.Len(t, x.Plugins, 1)
	require.Equal(t, "request-transformer", x.Plugins[0].Name)
	require.Equal(t, "route", x.Plugins[0].Scope)
	require.Equal(t, "KongPlugin default/add-header", x.Plugins[0].Source.String())
	require.True(t, x.Plugins[0].Ran)
	require.Equal(t, []string{"yes"}, x.Forward.Added["X-Added"])
	require.Equal(t, []string{"X-Secret"}, x.Forward.Removed)
	require.Equal(t, "10.0.0.1:8080", x.Forward.Host, "preserve_host off: the target's address")
	require.Equal(t, "http://10.0.0.1:8080/a", x.Forward.URL)

	x = explainURL(t, e, "GET", "http://closed.example.com/a")
	require.Equal(t, []string{"key-auth", "request-transformer"}, []string{x.Plugins[0].Name, x.Plugins[1].Name}, "Kong's order: PRIORITY 1250 before 801")
	require.True(t, x.Plugins[0].Answered)
	require.False(t, x.Plugins[1].Ran)
	require.Equal(t, 401, x.Answer.Status)
	require.Equal(t, "key-auth", x.Answer.By)
	require.Nil(t, x.Forward)
}

// Bad input is an error that names what is wrong, never a panic.
func TestBadInput(t *testing.T) {
	_, err := New(Input{})
	require.ErrorContains(t, err, "no configuration")
	e := translated(t, echoService, false)
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{URL: "example.com/x"}, "absolute http:// or https:// URL"},
		{Request{URL: "ftp://example.com/x"}, "absolute http:// or https:// URL"},
		{Request{URL: "http:///x"}, "has no host"},
		{Request{URL: "http://example.com:port/x"}, "example.com:port"},
		{Request{URL: "http://example.com/", Method: "GE T"}, "not an HTTP method"},
		{Request{URL: "http://example.com/", SourceIP: "nope"}, `--source-ip "nope"`},
		{Request{URL: "http://example.com/", SNI: "a.example.com"}, "--sni goes with an https:// URL"},
	} {
		_, err := e.Explain(c.r)
		require.ErrorContains(t, err, c.want, "%+v", c.r)
	}
	_, err = kongrouter.ConfigFromDeclarative(kongrouter.TraditionalCompatible, []byte("services: {}"))
	require.ErrorContains(t, err, "services is not a list")
	_, err = kongrouter.ConfigFromDeclarative(kongrouter.TraditionalCompatible, []byte("routes: [{name: r, service: nope}]"))
	require.ErrorContains(t, err, `"nope" is not in the configuration`)
}

// The text answer is the explanation's, line by line (testdata/*.txt; -update rewrites them).
func TestTextGolden(t *testing.T) {
	e := translated(t, echoService+ingress("short", "example.com", "", path("/version", "Prefix"))+
		ingress("long", "example.com", "konghq.com/strip-path: 'true'", path("/version/any", "Prefix")), false)
	for name, u := range map[string]string{"matched": "http://example.com/version/any/thing", "missed": "http://other.example.com/version"} {
		var b strings.Builder
		require.NoError(t, explainURL(t, e, "GET", u).Text(&b))
		golden := filepath.Join("testdata", name+".txt")
		if os.Getenv("UPDATE_GOLDEN") != "" {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err, "UPDATE_GOLDEN=1 go test ./internal/explain -run TestTextGolden")
		require.Equal(t, string(want), b.String())
	}
}

// The request's TLS name, scheme and client address are what the router and Kong's checks
// read: a route with SNIs takes an https request of its name only, an https-only route answers
// plain HTTP with its redirect, and the client's address is what the upstream is told.
func TestRequestFacts(t *testing.T) {
	e := translated(t, echoService+
		ingress("tls", "tls.example.com", "konghq.com/snis: tls.example.com", path("/", "Prefix"))+
		ingress("only-https", "secure.example.com", "konghq.com/protocols: https, konghq.com/https-redirect-status-code: '308'", path("/", "Prefix")), false)
	x, err := e.Explain(Request{URL: "https://tls.example.com/a"})
	require.NoError(t, err)
	require.Equal(t, "default.tls.echo.tls.example.com.80", x.Route.Name, "the SNI defaults to the URL's host")
	require.Equal(t, "tls.example.com", x.Request.SNI)
	x, err = e.Explain(Request{URL: "https://tls.example.com/a", SNI: "other.example.com"})
	require.NoError(t, err)
	require.Nil(t, x.Route)
	var tlsNear *Near
	for i := range x.Nearest {
		if x.Nearest[i].Route.Name == "default.tls.echo.tls.example.com.80" {
			tlsNear = &x.Nearest[i]
		}
	}
	require.NotNil(t, tlsNear, "%+v", x.Nearest)
	require.Equal(t, []string{"sni: not other.example.com"}, tlsNear.Differs)

	x, err = e.Explain(Request{URL: "http://secure.example.com/a?b=1"})
	require.NoError(t, err)
	require.Equal(t, "default.only-https.echo.secure.example.com.80", x.Route.Name)
	require.Equal(t, &Answer{Status: 308, By: "route"}, x.Answer)
	require.Nil(t, x.Forward)

	x, err = e.Explain(Request{URL: "https://secure.example.com/a", SourceIP: "192.0.2.7", Header: http.Header{"X-Forwarded-For": {"198.51.100.1"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"198.51.100.1, 192.0.2.7"}, x.Forward.Added["X-Forwarded-For"])
	require.Equal(t, []string{"192.0.2.7"}, x.Forward.Added["X-Real-Ip"])
	require.Equal(t, []string{"https"}, x.Forward.Added["X-Forwarded-Proto"])
}

// Odd requests are answered or refused with an error, never a panic: IPv6 hosts, bad escapes,
// bytes that are not UTF-8 in a path or a header a route reads, an empty path, a long one.
func TestOddRequestsNeverPanic(t *testing.T) {
	e := translated(t, echoService+ingress("h", "example.com", "konghq.com/headers.x-team: a", path("/", "Prefix"))+
		ingress("regex", "example.com", "", path(`/~/r/\d+`, "ImplementationSpecific")), false)
	for _, r := range []Request{
		{URL: "http://[::1]:8000/x"},
		{URL: "http://example.com/%zz"},
		{URL: "http://example.com/r/%ff%fe"},
		{URL: "http://example.com"},
		{URL: "http://example.com/" + strings.Repeat("a/", 5000)},
		{URL: "http://example.com/", Header: http.Header{"X-Team": {"\xff"}}},
		{URL: "https://example.com:443/?a=%00&&b"},
		{URL: "http://example.com/", Method: "purge"},
	} {
		require.NotPanics(t, func() {
			x, err := e.Explain(r)
			if err == nil {
				var b strings.Builder
				require.NoError(t, x.Text(&b))
			}
		}, "%q", r.URL)
	}
	_, err := e.Explain(Request{URL: "http://example.com/", Header: http.Header{"X-Team": {"\xff"}}})
	require.ErrorContains(t, err, "Kong's router cannot take the request")
}
