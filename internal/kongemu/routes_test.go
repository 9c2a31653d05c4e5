package kongemu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRouteRules checks the per-protocol route rules (stream, grpc) and, under the
// expressions router, expression routes, through POST /schemas/routes/validate.
func TestRouteRules(t *testing.T) {
	expr := Options{RouterFlavor: RouterExpressions}
	cases := []struct {
		name   string
		opts   Options
		body   string
		fields string // "" means valid
	}{
		{"tcp route with destinations", Options{}, `{"protocols":["tcp"],"destinations":[{"ip":"10.0.0.1","port":9000}]}`, ""},
		{"tls route with snis", Options{}, `{"protocols":["tls"],"snis":["a.example.com"]}`, ""},
		{"udp route with sources", Options{}, `{"protocols":["udp"],"sources":[{"ip":"10.0.0.0/8"}]}`, ""},
		{"tcp route with paths and hosts", Options{}, `{"protocols":["tcp"],"sources":[{"port":1}],"paths":["/"],"hosts":["a"]}`,
			`{"paths":"cannot set 'paths' when 'protocols' is 'tcp', 'tls', 'tls_passthrough' or 'udp'",
			  "hosts":"cannot set 'hosts' when 'protocols' is 'tcp', 'tls', 'tls_passthrough' or 'udp'"}`},
		{"tcp route without matchers", Options{}, `{"protocols":["tcp"]}`,
			`{"@entity":["must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'"]}`},
		{"tls_passthrough needs snis", Options{}, `{"protocols":["tls_passthrough"]}`,
			`{"@entity":["must set snis when 'protocols' is 'tls_passthrough'"]}`},
		{"tls_passthrough with snis", Options{}, `{"protocols":["tls_passthrough"],"snis":["a.example.com"]}`, ""},
		{"http route with sources", Options{}, `{"paths":["/"],"sources":[{"ip":"10.0.0.1"}]}`,
			`{"sources":"cannot set 'sources' when 'protocols' is 'http' or 'https'"}`},
		{"bad source ip and port", Options{}, `{"protocols":["tcp"],"sources":[{"ip":"nope","port":70000}]}`,
			`{"sources":[{"ip":"invalid ip or cidr range: 'nope'","port":"value should be between 0 and 65535"}]}`},
		{"grpc route strips no path by default", Options{}, `{"protocols":["grpc"],"paths":["/svc"]}`, ""},
		{"grpc route with strip_path and methods", Options{}, `{"protocols":["grpcs"],"paths":["/svc"],"strip_path":true,"methods":["GET"]}`,
			`{"strip_path":"cannot set 'strip_path' when 'protocols' is 'grpc' or 'grpcs'",
			  "methods":"cannot set 'methods' when 'protocols' is 'grpc' or 'grpcs'"}`},
		{"expression fields are unknown to the traditional router", Options{}, `{"expression":"http.path ^= \"/\""}`,
			`{"expression":"unknown field"}`},
		{"expression route", expr, `{"expression":"http.host == \"a.example.com\" && http.path ^= \"/api\"","priority":10}`, ""},
		{"traditional route under the expressions router", expr, `{"paths":["/"],"regex_priority":2}`, ""},
		{"empty route under the expressions router", expr, `{}`, ""},
		{"stream expression route", expr, `{"protocols":["tls"],"expression":"tls.sni == \"a.example.com\""}`, ""},
		{"expression with traditional fields", expr, `{"expression":"http.path ^= \"/\"","paths":["/"]}`,
			`{"@entity":["Router Expression failed validation: cannot set 'expression' with 'methods', 'hosts', 'paths', 'headers', 'snis', 'sources' or 'destinations' simultaneously"]}`},
		{"expression with regex_priority", expr, `{"expression":"http.path ^= \"/\"","regex_priority":1}`,
			`{"@entity":["Router Expression failed validation: cannot set 'regex_priority' with 'expression' simultaneously"]}`},
		{"priority with traditional fields", expr, `{"paths":["/"],"priority":1}`,
			`{"@entity":["Router Expression failed validation: cannot set 'priority' with 'methods', 'hosts', 'paths', 'headers', 'snis', 'sources' or 'destinations' simultaneously"]}`},
		{"expression syntax error", expr, `{"expression":"http.path = \"/\""}`,
			`{"@entity":["Router Expression failed validation:  --> 1:11\n  |\n1 | http.path = \"/\"\n  |           ^---\n  |\n  = expected binary_operator"]}`},
		{"expression unknown field", expr, `{"expression":"http.pth == \"/\""}`,
			`{"@entity":["Router Expression failed validation: Unknown LHS field"]}`},
		{"http field in a stream route", expr, `{"protocols":["tcp"],"expression":"http.path == \"/\""}`,
			`{"@entity":["Router Expression failed validation: Unknown LHS field"]}`},
		{"expression with a regex Rust refuses", expr, `{"expression":"http.path ~ \"^/v1/{id}$\""}`,
			`{"@entity":["Router Expression failed validation:  --> 1:1\n  |\n1 | http.path ~ \"^/v1/{id}$\"\n  | ^----------------------^\n  |\n  = regex parse error:\n    ^/v1/{id}$\nerror: repetition quantifier expects a valid decimal"]}`},
		{"header regex Rust refuses", expr, `{"expression":"http.headers.x_v ~ \"[[]\""}`,
			`{"@entity":["Router Expression failed validation:  --> 1:1\n  |\n1 | http.headers.x_v ~ \"[[]\"\n  | ^----------------------^\n  |\n  = regex parse error:\n    [[]\nerror: unclosed character class"]}`},
		{"expression with a regex Rust accepts", expr, `{"expression":"http.path ~ \"^/a{1001}\\\\d**\""}`, ""},
		{"priority range", expr, `{"expression":"http.path == \"/\"","priority":-1}`,
			`{"priority":"value should be between 0 and 70368744177663"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b, _ := call(t, New(c.opts), "POST", "/schemas/routes/validate", c.body)
			requireRefused(t, st, 200, c.fields, obj(b)["fields"], b)
		})
	}
}

// TestExpressionsRouterNode: the flavor is reported in GET / and in the routes schema.
func TestExpressionsRouterNode(t *testing.T) {
	for _, c := range []struct {
		opts   Options
		flavor string
	}{{Options{}, "traditional_compatible"}, {Options{RouterFlavor: RouterExpressions}, "expressions"}} {
		e := New(c.opts)
		_, b, _ := call(t, e, "GET", "/", nil)
		require.Equal(t, c.flavor, obj(obj(b)["configuration"])["router_flavor"])
		_, b, _ = call(t, e, "GET", "/schemas/routes", nil)
		hasPriority := false
		for _, f := range obj(b)["fields"].([]any) {
			_, ok := obj(f)["priority"]
			hasPriority = hasPriority || ok
		}
		require.Equal(t, c.flavor == "expressions", hasPriority)
	}
	// DB-less: an expression route loads, a bad one is flattened against its route.
	e := New(Options{RouterFlavor: RouterExpressions})
	st, _, raw := post(t, e, "/config", "application/json", `{"_format_version":"3.0","services":[{"name":"s","host":"h",
		"routes":[{"name":"r","expression":"http.path ^= \"/\"","priority":5}]}]}`)
	require.Equal(t, 201, st, raw)
	require.Equal(t, float64(5), jsonOf(t, e.Entity("routes", "r")).(map[string]any)["priority"])
	st, body, raw := post(t, e, "/config?flatten_errors=1", "application/json", `{"_format_version":"3.0",
		"routes":[{"name":"bad","expression":"http.path ^= ","tags":["k8s:bad"]}]}`)
	require.Equal(t, 400, st, raw)
	flat := obj(body["flattened_errors"].([]any)[0])
	require.Equal(t, "bad", flat["entity_name"])
	msg := obj(flat["errors"].([]any)[0])["message"].(string)
	require.Contains(t, msg, "Router Expression failed validation:")
	require.Contains(t, msg, "expected rhs")
}
