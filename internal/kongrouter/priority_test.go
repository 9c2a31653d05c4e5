package kongrouter

import (
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// Decider names the part of Kong's priority that orders two routes, and the winner is the
// route of the greater priority: the part is read back from Kong's arithmetic, LuaJIT's 32-bit
// shifts and sign extension included.
func TestDecider(t *testing.T) {
	route := func(hosts, paths []string, edit func(r *kong.Route)) *kong.Route {
		r := &kong.Route{Hosts: kong.StringSlice(hosts...), Paths: kong.StringSlice(paths...)}
		if hosts == nil {
			r.Hosts = nil
		}
		if edit != nil {
			edit(r)
		}
		return r
	}
	headers := func(n int) func(r *kong.Route) {
		return func(r *kong.Route) {
			r.Headers = map[string][]string{}
			for i := 0; i < n; i++ {
				r.Headers[string(rune('a'+i))] = []string{"x"}
			}
		}
	}
	for _, c := range []struct {
		name          string
		winner, loser *kong.Route
		part          string
	}{
		{"exact host over wildcard", route([]string{"a.example.com"}, []string{"/"}, nil), route([]string{"*.example.com"}, []string{"/"}, nil), PartPlainHosts},
		{"host over no host (fewer fields)", route([]string{"a.example.com"}, []string{"/"}, nil), route(nil, []string{"/"}, nil), PartPlainHosts},
		{"regex over prefix", route([]string{"a"}, []string{"~/a$"}, nil), route([]string{"a"}, []string{"/abcdef"}, nil), PartRegexPaths},
		{"method narrows", route([]string{"a"}, []string{"/"}, func(r *kong.Route) { r.Methods = kong.StringSlice("GET") }), route([]string{"a"}, []string{"/"}, nil), PartWeight},
		{"two headers over one", route([]string{"a"}, []string{"/"}, headers(2)), route([]string{"a"}, []string{"/"}, headers(1)), PartHeaders},
		{"regex_priority", route(nil, []string{"~/a"}, func(r *kong.Route) { r.RegexPriority = kong.Int(1) }), route(nil, []string{"~/b"}, nil), PartRegexPriority},
		{"longer prefix", route([]string{"a"}, []string{"/foo/bar"}, nil), route([]string{"a"}, []string{"/foo"}, nil), PartPathLength},
		// Four fields set every bit above 31 (sign extension): the weight outranks plain hosts.
		{"four fields over plain hosts", route([]string{"*.a"}, []string{"/"}, func(r *kong.Route) {
			r.Methods = kong.StringSlice("GET")
			headers(1)(r)
		}), route([]string{"a"}, []string{"/"}, nil), PartWeight},
		{"expression priority", &kong.Route{Expression: kong.String("true"), Priority: kong.Uint64(2)}, &kong.Route{Expression: kong.String("true"), Priority: kong.Uint64(1)}, PartExpression},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, l := PriorityPartsOf(c.winner), PriorityPartsOf(c.loser)
			require.Greater(t, w.Priority(), l.Priority())
			require.Equal(t, Priority(c.winner), w.Priority())
			require.Equal(t, c.part, Decider(w, l))
			require.Equal(t, c.part, Decider(l, w))
		})
	}
	same := PriorityPartsOf(route([]string{"a"}, []string{"/x"}, nil))
	require.Equal(t, PartNone, Decider(same, PriorityPartsOf(route([]string{"b"}, []string{"/y"}, nil))))
}
