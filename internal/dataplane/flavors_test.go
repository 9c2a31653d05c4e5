package dataplane

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Routes are rendered for the expressions router once every gateway that answered says so;
// a change of that answer asks for a new round, and only a change does.
func TestRouterFlavors(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	require.False(t, f.Expressions(), "nothing known: traditional")
	f.Report("http://a", "expressions")
	require.True(t, f.Expressions())
	require.Equal(t, 1, changes)
	f.Report("http://a", "expressions")
	require.Equal(t, 1, changes, "the same answer again changes nothing")
	f.Report("http://b", "traditional_compatible")
	require.False(t, f.Expressions(), "one gateway on another router: traditional for all")
	require.Equal(t, 2, changes)

	var none *RouterFlavors
	none.Report("http://a", "expressions")
	require.False(t, none.Expressions())
}

// Regexes are checked as the Rust regex crate's once a gateway that answered runs any flavor
// but "traditional" (traditional_compatible and expressions compile them with Rust); the
// answer changing asks for a new round.
func TestRouterFlavorsRustRegexes(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	require.False(t, f.RustRegexes(), "nothing known: PCRE's syntax only")
	f.Report("http://a", "traditional")
	require.False(t, f.RustRegexes())
	require.Equal(t, 0, changes)
	f.Report("http://b", "traditional_compatible")
	require.True(t, f.RustRegexes(), "one gateway compiles them with Rust")
	require.Equal(t, 1, changes)
	f.Report("http://b", "traditional")
	require.False(t, f.RustRegexes())
	require.Equal(t, 2, changes)
	f.Report("http://c", "")
	require.False(t, f.RustRegexes(), "no flavor (Kong before 3): traditional")
	var none *RouterFlavors
	require.False(t, none.RustRegexes())
}

// Gateways that went away no longer decide: a Kong upgraded to the expressions router Pod by
// Pod renders for it once the last traditional Pod is gone.
func TestRouterFlavorsForgetGatewaysGone(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	f.Report("http://old", "traditional_compatible")
	f.Report("http://new", "expressions")
	require.False(t, f.Expressions())
	require.Equal(t, 1, changes)
	f.KeepOnly(map[string]bool{"http://new": true, "http://unknown": true})
	require.True(t, f.Expressions(), "the gateway gone no longer counts")
	require.Equal(t, 2, changes)
	f.KeepOnly(map[string]bool{"http://new": true})
	require.Equal(t, 2, changes, "nothing changed, nothing asked")
	f.KeepOnly(nil)
	require.False(t, f.Expressions(), "no gateway left: traditional")
	var none *RouterFlavors
	none.KeepOnly(nil)
}
