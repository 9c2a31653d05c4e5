package kongrules

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpression(t *testing.T) {
	valid := []string{
		`http.host == "example.com"`,
		`http.host =^ ".example.com"`,
		`http.path ^= "/"`,
		`http.path ~ "^/regex/\\d+$"`,
		`http.headers.x_version == "v1"`,
		`http.method == "GET"`,
		`tls.sni == "a.example.com"`,
		`(http.method == "GET" || http.method == "POST") && http.path ^= "/api"`,
		`!(http.path ^= "/internal") && lower(http.host) == "example.com"`,
		`http.queries.page == "1" && net.dst.port == 443`,
		`net.src.ip in 10.0.0.0/8 && net.src.ip not in 10.1.0.0/16`,
		`http.path == r#"/a"b"#`,
		"http.host == " + strconv.Quote("tab\there"),
		`http.path contains "x"`,
	}
	for _, e := range valid {
		require.Empty(t, Expression(e, false), e)
	}
	cases := []struct{ expr, want string }{
		{`http.host = "x"`, " --> 1:11\n  |\n1 | http.host = \"x\"\n  |           ^---\n  |\n  = expected binary_operator"},
		{`http.host == "x" &&`, " --> 1:20\n  |\n1 | http.host == \"x\" &&\n  |                    ^---\n  |\n  = expected term"},
		{`(http.host == "x"`, " --> 1:18\n  |\n1 | (http.host == \"x\"\n  |                  ^---\n  |\n  = expected logical_operator"},
		{`http.host == "x`, " --> 1:16\n  |\n1 | http.host == \"x\n  |                ^---\n  |\n  = expected \"\\\"\""},
		{`http.host == "\u00e9"`, " --> 1:15\n  |\n1 | http.host == \"\\u00e9\"\n  |               ^---\n  |\n  = expected \"\\\"\", \"\\\\\", \"n\", \"r\" or \"t\""},
		{`http.host == "x" http.path == "/"`, " --> 1:18\n  |\n1 | http.host == \"x\" http.path == \"/\"\n  |                  ^---\n  |\n  = expected EOI, logical_operator"},
		{`http.hots == "x"`, "Unknown LHS field"},
		{`http.host == 1`, "Type mismatch between the LHS and RHS values of predicate"},
		{`net.dst.port > "1"`, "Type mismatch between the LHS and RHS values of predicate"},
		{`net.src.ip in 10.0.0.1`, "In/NotIn operators only supports IP in CIDR"},
		{`lower(net.dst.port) == 1`, "lower-case transformation function only supported with String type fields"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, Expression(c.expr, false), c.expr)
	}
	require.Equal(t, "Unknown LHS field", Expression(`http.host == "x"`, true), "a stream route has no http fields")
	require.Empty(t, Expression(`tls.sni == "x" && net.dst.port == 9000`, true))
}
