package kongrouter

import (
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// Kong computes a traditional route's priority with LuaJIT's 32-bit bit operations for the
// weight, header count and regex priority (Priority's comment). These cases pin what that
// means for which route wins; Kong's own tests do not tell the two arithmetics apart.
func TestPriorityAsLuaJITComputesIt(t *testing.T) {
	plainHostOnly := &kong.Route{Hosts: kong.StringSlice("plain.route.com")}
	wildcardHostAndPath := &kong.Route{Hosts: kong.StringSlice("*.route.com"), Paths: kong.StringSlice("/path")}
	// Weight 1 with the plain-host bit (bit 60) outranks weight 2 without it: the weight sits at
	// bits 29-31, not 61-63.
	require.Greater(t, Priority(plainHostOnly), Priority(wildcardHostAndPath))
	require.Equal(t, uint64(1)<<60|uint64(1)<<29, Priority(plainHostOnly))
	require.Equal(t, uint64(2)<<29|5, Priority(wildcardHostAndPath))

	// Weight 4 sets bit 31, which sign-extends over every bit above it.
	fourFields := &kong.Route{Hosts: kong.StringSlice("*.a.com"), Paths: kong.StringSlice("/p"), Methods: kong.StringSlice("GET"),
		Headers: map[string][]string{"x": {"1"}}}
	require.Equal(t, uint64(0xFFFFFFFF80000000)|1<<20|2, Priority(fourFields))
	require.Greater(t, Priority(fourFields), Priority(plainHostOnly))

	// A regex priority of 2 weighs as much as one header (bit 20), and a negative one sets every
	// high bit.
	regex := func(rp int) *kong.Route {
		return &kong.Route{Paths: kong.StringSlice("~/r"), RegexPriority: kong.Int(rp)}
	}
	require.Equal(t, uint64(1)<<51|1<<29|1<<20, Priority(regex(2)), "bit 20 is the header count's first bit")
	require.Equal(t, uint64(0xFFFFFFFFFFF80000)|1<<51, Priority(regex(-1)))

	// An expression route's priority field sits under 0xFF<<56.
	require.Equal(t, uint64(0xFF)<<56|100, Priority(&kong.Route{Expression: kong.String(`http.path == "/"`), Priority: kong.Uint64(100)}))
}

func TestExpressionsFlavorAddsTheProtocols(t *testing.T) {
	r := &kong.Route{Paths: kong.StringSlice("/a"), Protocols: kong.StringSlice("grpc", "grpcs")}
	got, err := ExpressionsFlavorExpression(r)
	require.NoError(t, err)
	require.Equal(t, `(http.path ^= r#"/a"#) && (net.protocol == r#"http"# || net.protocol == r#"https"#)`, got)
	r.Protocols = kong.StringSlice("https")
	got, _ = ExpressionsFlavorExpression(r)
	require.Equal(t, `(http.path ^= r#"/a"#)`, got, "a route of https alone is left to the redirect after the match")
	got, _ = ExpressionsFlavorExpression(&kong.Route{Expression: kong.String(`net.port == 80 && net.port>1`)})
	require.Equal(t, `net.dst.port == 80 && net.dst.port>1`, got)
}

func TestPathHandlingV1IsV0UnderTheATCRouters(t *testing.T) {
	route := &kong.Route{ID: kong.String("e8fb37f1-102d-461e-9c51-6608a6bb8101"), Paths: kong.StringSlice("/route"),
		StripPath: kong.Bool(false), PathHandling: kong.String("v1")}
	service := &kong.Service{Protocol: kong.String("http"), Path: kong.String("/srv")}
	r, err := New([]RouteService{{Route: route, Service: service}}, Options{})
	require.NoError(t, err)
	m, err := r.Exec(Params{Method: "GET", URI: "/routereq"})
	require.NoError(t, err)
	require.Equal(t, "/srv/routereq", m.UpstreamURI, "v1 would give /srvroutereq")
}
