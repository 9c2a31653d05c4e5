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

// atc-router's Pratt parser declares "&&" before "||", so "||" binds tighter.
func TestParseExpressionPrecedence(t *testing.T) {
	render := func(n *ATCNode) string { return renderATC(n) }
	cases := map[string]string{
		`http.path == "/a" || http.path == "/b" && http.method == "GET"`:    `((/a || /b) && GET)`,
		`http.method == "GET" && http.path == "/a" || http.path == "/b"`:    `(GET && (/a || /b))`,
		`http.method == "GET" && http.path == "/a" && http.host == "h"`:     `((GET && /a) && h)`,
		`!(http.path == "/a" || http.path == "/b") && http.method == "GET"`: `(!(/a || /b) && GET)`,
		`lower(any(http.headers.x)) == "/a"`:                                `/a`,
	}
	for expr, want := range cases {
		n, err := ParseExpression(expr, false)
		require.Empty(t, err, expr)
		require.Equal(t, want, render(n), expr)
	}
	n, _ := ParseExpression(`lower(any(http.headers.x)) == "v"`, false)
	require.Equal(t, []string{"lower", "any"}, n.Predicate.Transforms)
	for lit, want := range map[string]int64{"0": 0, "010": 8, "08": 8, "0x1F": 31, "-12": -12, "443": 443} {
		n, err := ParseExpression("net.dst.port == "+lit, false)
		require.Empty(t, err, lit)
		require.Equal(t, want, n.Predicate.Value.Int, lit)
	}
	n, _ = ParseExpression(`net.src.ip in 10.0.0.0/8`, false)
	require.Equal(t, "10.0.0.0/8", n.Predicate.Value.CIDR.String())
	_, err := ParseExpression(`net.src.ip in 10.1.2.3/8`, false)
	require.Contains(t, err, "host part of address was not zero")
}

func renderATC(n *ATCNode) string {
	switch n.Op {
	case ATCAnd:
		return "(" + renderATC(n.Left) + " && " + renderATC(n.Right) + ")"
	case ATCOr:
		return "(" + renderATC(n.Left) + " || " + renderATC(n.Right) + ")"
	case ATCNot:
		return "!" + renderATC(n.Left)
	}
	return n.Predicate.Value.Str
}

func TestExpressionPathSegmentsLenIsAnInt(t *testing.T) {
	require.Empty(t, Expression(`http.path.segments.len == 3`, false))
	require.Equal(t, "Type mismatch between the LHS and RHS values of predicate", Expression(`http.path.segments.len == "3"`, false))
	require.Empty(t, Expression(`http.path.segments.0_1 == "a/b"`, false))
}
