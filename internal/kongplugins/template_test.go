package kongplugins

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The templates the translator writes into request-transformer (gateway_httproute.go,
// ingress_rewrite.go) and the Penlight/Lua semantics they rely on.
func TestRenderTemplate(t *testing.T) {
	env := func(captures map[string]string) map[string]luaValue {
		return map[string]luaValue{
			"uri_captures": luaTable(func(k luaValue) luaValue {
				if v, ok := captures[luaToString(k)]; ok {
					return v
				}
				return nil
			}),
			"headers": stringsTable(map[string][]string{"x-foo": {"bar"}, "x-two": {"a", "b"}}, func(k luaValue) string { return headerKey(luaToString(k)) }),
		}
	}
	cases := []struct {
		tmpl     string
		captures map[string]string
		want     string
	}{
		{`$(uri_captures[1] == nil and "/" or "/" .. uri_captures[1])`, nil, "/"},
		{`$(uri_captures[1] == nil and "/" or "/" .. uri_captures[1])`, map[string]string{"1": "a/b"}, "/a/b"},
		{`/api$(uri_captures[1] == nil and "" or "/" .. uri_captures[1])`, map[string]string{"1": "x"}, "/api/x"},
		{`/v2/$(uri_captures[1])`, map[string]string{"1": "users/7"}, "/v2/users/7"},
		{`/v2/$(uri_captures[1])`, nil, "/v2/"},
		{`$(uri_captures["rest"])-$(uri_captures['rest'])`, map[string]string{"rest": "r"}, "r-r"},
		{`$(headers["x-foo"])$(headers.x_foo)`, nil, "barbar"},
		{`$(headers["x-two"][2])`, nil, "b"},
		{`$(type(headers["x-two"]))`, nil, "table"},
		{`$(not uri_captures[1] and "none")`, nil, "none"},
		{`$(1 < 2 and "lt" or "ge")`, nil, "lt"},
		{`no template`, nil, "no template"},
	}
	for _, c := range cases {
		got, err := renderTemplate(c.tmpl, env(c.captures))
		require.NoError(t, err, c.tmpl)
		require.Equal(t, c.want, got, c.tmpl)
	}
	for _, bad := range []string{`$(uri_captures[1] .. "x")`, `$(nosuch.field)`, `$(`, `$("unfinished)`} {
		_, err := renderTemplate(bad, env(nil))
		require.Error(t, err, bad)
	}
}
