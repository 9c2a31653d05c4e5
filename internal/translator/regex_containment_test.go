package translator

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// regexContainmentObjects: one HTTPRoute whose rules all share one Kong service (the same
// backendRefs), and one GRPCRoute rule of two matches; in each, some matches Kong would
// refuse ("/x(y" under both routers, "/v1/{id}" only under traditional_compatible, which
// compiles regexes with Rust's syntax), and one Kong route of two rules with a filter
// konductor cannot translate.
const regexContainmentObjects = `
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
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: httpbin, namespace: default}
spec:
  ports: [{port: 80, protocol: TCP, targetPort: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shared, namespace: default}
spec:
  parentRefs: [{name: kong}]
  rules:
    - matches:   # one Kong route (.0.0) with rule 3's match: same method, no headers
        - path: {type: RegularExpression, value: /x(y}
        - path: {type: RegularExpression, value: "/fine/[0-9]+"}
        - path: {type: RegularExpression, value: "/v1/{id}"}
      backendRefs: [{name: httpbin, port: 80}]
    - matches:   # its own Kong route (.1.0): only a bad match
        - method: GET
          path: {type: RegularExpression, value: /bad(}
      backendRefs: [{name: httpbin, port: 80}]
    - matches:   # its own Kong route (.2.0): a bad header regex, which all its matches share
        - path: {type: PathPrefix, value: /headers}
          headers: [{name: x-version, type: RegularExpression, value: "[[]v("}]
      backendRefs: [{name: httpbin, port: 80}]
    - matches:
        - path: {type: Exact, value: /ok}
      backendRefs: [{name: httpbin, port: 80}]
    - matches:   # its own Kong route (.4.0)
        - method: POST
          path: {type: Exact, value: /post}
      backendRefs: [{name: httpbin, port: 80}]
    - matches:   # one Kong route (.5.0) with rule 6's match: same filters, method, headers
        - path: {type: Exact, value: /mirror}
      filters: [{type: RequestMirror, requestMirror: {backendRef: {name: httpbin, port: 80}}}]
      backendRefs: [{name: httpbin, port: 80}]
    - matches:
        - path: {type: Exact, value: /mirror2}
      filters: [{type: RequestMirror, requestMirror: {backendRef: {name: httpbin, port: 80}}}]
      backendRefs: [{name: httpbin, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: default}
spec:
  parentRefs: [{name: kong}]
  hostnames: [grpc.example.com]
  rules:
    - matches:
        - method: {type: RegularExpression, service: "pkg\\.(", method: Get}
        - method: {type: RegularExpression, service: "pkg\\.v[0-9]+", method: Get}
        - method: {type: RegularExpression, service: "pkg\\.{v}", method: Get}
      backendRefs: [{name: httpbin, port: 80}]
`

// TestTraditionalRouterLeavesOutOnlyTheRefusedMatch: under the traditional and
// traditional_compatible routers, a match Kong would refuse is left out and reported alone;
// the other matches keep their Kong route (KIC's name, named after the group's first match
// even when that one is left out) and the other routes of the same Kong service stay.
func TestTraditionalRouterLeavesOutOnlyTheRefusedMatch(t *testing.T) {
	cases := []struct {
		name     string
		opts     Options
		routes   []string // "<route name> <paths>"
		problems []string
	}{{
		name: "traditional (PCRE)",
		routes: []string{
			"grpcroute.default.grpc.0.1 ~/pkg\\.v[0-9]+/Get",
			"grpcroute.default.grpc.0.2 ~/pkg\\.{v}/Get",
			"httproute.default.shared.0.0 ~/fine/[0-9]+ ~/v1/{id} ~/ok$",
			"httproute.default.shared.4.0 ~/post$",
		},
		problems: []string{
			`GRPCRoute default/grpc: spec.rules[0].matches[0].method: GRPCRoute can't be routed: invalid regex "/pkg\\.(/Get": missing closing parenthesis; the match is left out`,
			`HTTPRoute default/shared: spec.rules[0].matches[0].path: HTTPRoute can't be routed: invalid regex "/x(y": missing closing parenthesis; the match is left out`,
			`HTTPRoute default/shared: spec.rules[1].matches[0].path: HTTPRoute can't be routed: invalid regex "/bad(": missing closing parenthesis; the rule is left out`,
			`HTTPRoute default/shared: spec.rules[2].matches[0].headers: HTTPRoute can't be routed: invalid regex "[[]v(" for header x-version: missing closing parenthesis; the rule is left out`,
			`HTTPRoute default/shared: spec.rules[5].filters: HTTPRoute can't be routed: httpFilter RequestMirror unsupported; the matches spec.rules[5].matches[0], spec.rules[6].matches[0] are left out`,
		},
	}, {
		name: "traditional_compatible (Rust's syntax)",
		opts: Options{RustRegexes: true},
		routes: []string{
			"grpcroute.default.grpc.0.1 ~/pkg\\.v[0-9]+/Get",
			"httproute.default.shared.0.0 ~/fine/[0-9]+ ~/ok$",
			"httproute.default.shared.4.0 ~/post$",
		},
		problems: []string{
			`GRPCRoute default/grpc: spec.rules[0].matches[0].method: GRPCRoute can't be routed: invalid regex "/pkg\\.(/Get": missing closing parenthesis; the match is left out`,
			`GRPCRoute default/grpc: spec.rules[0].matches[2].method: GRPCRoute can't be routed: invalid regex "~/pkg\\.{v}/Get": Kong's router compiles it with Rust's regex syntax: repetition quantifier expects a valid decimal; the match is left out`,
			`HTTPRoute default/shared: spec.rules[0].matches[0].path: HTTPRoute can't be routed: invalid regex "/x(y": missing closing parenthesis; the match is left out`,
			`HTTPRoute default/shared: spec.rules[0].matches[2].path: HTTPRoute can't be routed: invalid regex "/v1/{id}": Kong's router compiles it with Rust's regex syntax: repetition quantifier expects a valid decimal; the match is left out`,
			`HTTPRoute default/shared: spec.rules[1].matches[0].path: HTTPRoute can't be routed: invalid regex "/bad(": missing closing parenthesis; the rule is left out`,
			`HTTPRoute default/shared: spec.rules[2].matches[0].headers: HTTPRoute can't be routed: invalid regex "[[]v(" for header x-version: missing closing parenthesis; the rule is left out`,
			`HTTPRoute default/shared: spec.rules[5].filters: HTTPRoute can't be routed: httpFilter RequestMirror unsupported; the matches spec.rules[5].matches[0], spec.rules[6].matches[0] are left out`,
		},
	}}
	loaded, err := manifest.Parse([]byte(regexContainmentObjects))
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.NewForObjects(loaded.Objects, store.Options{})
			require.NoError(t, err)
			snap, err := st.Snapshot(context.Background())
			require.NoError(t, err)
			state, problems := Translate(snap, tc.opts)

			var routes []string
			for _, s := range state.Services {
				for _, r := range s.Routes {
					line := *r.Name
					for _, p := range r.Paths {
						line += " " + *p
					}
					routes = append(routes, line)
				}
			}
			sort.Strings(routes)
			assert.Equal(t, tc.routes, routes)

			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			assert.Equal(t, tc.problems, got)
		})
	}
}

// A ReplacePrefixMatch rewrite makes its Kong route's paths from the group's first match;
// when that match is left out, from the first served one, so that what was left out never
// reaches Kong through the rewrite.
func TestPrefixRewriteTakesTheFirstServedMatch(t *testing.T) {
	objects := regexContainmentObjects[:strings.Index(regexContainmentObjects, "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute")] + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: rewrite, namespace: default}
spec:
  parentRefs: [{name: kong}]
  rules:
    - matches:
        - path: {type: RegularExpression, value: /x(y}
        - path: {type: PathPrefix, value: /ok}
      filters:
        - type: URLRewrite
          urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}
      backendRefs: [{name: httpbin, port: 80}]
`
	loaded, err := manifest.Parse([]byte(objects))
	require.NoError(t, err)
	st, err := store.NewForObjects(loaded.Objects, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	state, problems := Translate(snap, Options{})
	require.Len(t, problems, 1, "the refused match: %v", problems)
	require.Len(t, state.Services, 1)
	require.Len(t, state.Services[0].Routes, 1)
	var paths []string
	for _, p := range state.Services[0].Routes[0].Paths {
		paths = append(paths, *p)
	}
	require.NotEmpty(t, paths)
	for _, p := range paths {
		assert.Contains(t, p, "/ok", "route paths %v", paths)
		assert.NotContains(t, p, "x", "route paths %v carry the match left out", paths)
	}
}
