package kongrules

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What the Rust regex crate (Kong's expressions router) accepts and refuses, where RE2 and
// PCRE would say otherwise.
func TestRustRegex(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		kind    string // "" when Rust compiles it
	}{
		{`^/api/v[0-9]+/users$`, ""},
		{`^/(?P<id>\d+)/(?<name>[a-z]+)`, ""},
		{`(?i)^/abc`, ""},
		{`(?x) ^/a b # verbose`, ""},
		{`a{1001}`, ""},  // RE2 stops at 1000
		{`a**`, ""},      // a repetition of a repetition nests
		{`a{2}{3}`, ""},  // the same
		{`a*?+`, ""},     // the same
		{`\<word\>`, ""}, // word boundaries
		{`\b{start}x`, ""},
		{`\u00e9\U0001F600\u{1F600}`, ""},
		{`[a[bc]]`, ""},      // a nested class
		{`[[:alpha:]-]`, ""}, // an ASCII class
		{`[]a]`, ""},         // "]" first is literal
		{`[a&&[^b]]`, ""},    // class intersection
		{`\/\-\_\ `, ""},     // escaped punctuation
		{`/x(y`, "unclosed group"},
		{`/x)y`, "unopened group"},
		{`[abc`, "unclosed character class"},
		{`[[]`, "unclosed character class"}, // "[" inside a class nests in Rust; RE2 takes it as literal
		{`*a`, "repetition operator missing expression"},
		{`/v1/{id}`, "repetition quantifier expects a valid decimal"}, // RE2 reads "{id}" as literal
		{`{2}`, "repetition operator missing expression"},
		{`a{`, "unclosed counted repetition"},
		{`a{3,2}`, "invalid repetition count range, the start must be <= the end"},
		{`(a)\1`, "backreferences are not supported"},
		{`\0`, "backreferences are not supported"}, // RE2 reads an octal escape
		{`\Qa.b\E`, "unrecognized escape sequence"},
		{`(?=a)`, "look-around, including look-ahead and look-behind, is not supported"},
		{`(?<!a)b`, "look-around, including look-ahead and look-behind, is not supported"},
		{`\q`, "unrecognized escape sequence"},
		{`[z-a]`, "invalid character class range, the start must be <= the end"},
		{`a\`, "incomplete escape sequence, reached end of pattern prematurely"},
		{`[`, "unclosed character class"},
	} {
		got := RustRegex(tc.pattern)
		if tc.kind == "" {
			require.Empty(t, got, tc.pattern)
			continue
		}
		require.Equal(t, "regex parse error:\n    "+tc.pattern+"\nerror: "+tc.kind, got, tc.pattern)
	}
}

// atc-router compiles the string on the right of "~" when it parses the expression: a regex
// it refuses is a parse error over the predicate, reported before any semantic error.
func TestExpressionRefusesAnInvalidRegex(t *testing.T) {
	got := Expression(`http.host == "a" && http.path ~ "^/x(y"`, false)
	require.True(t, strings.HasPrefix(got, " --> 1:21\n"), got)
	require.Contains(t, got, "1 | http.host == \"a\" && http.path ~ \"^/x(y\"\n")
	require.Contains(t, got, "  |                     ^-----------------^\n")
	require.True(t, strings.HasSuffix(got, "  = regex parse error:\n    ^/x(y\nerror: unclosed group"), got)

	require.Contains(t, Expression(`http.headers.x_a ~ r#"[[]"#`, false), "unclosed character class", "raw strings too")
	require.Empty(t, Expression(`http.path ~ "^/a\\d+$"`, false))
	require.Contains(t, Expression(`http.path ~ "(" && net.foo == 1`, false), "regex parse error", "before the unknown field")
	require.Empty(t, Expression(`http.path ~ "^/v1/\\{id\\}$"`, false))
}

// No pattern or expression, however malformed, makes the checks panic (they run on user input
// in the translator and the emulator).
func FuzzRustRegex(f *testing.F) {
	for _, s := range []string{`^/v1/{id}`, `[[]`, `a**`, `\b{start}`, `(?x)a b`, `\u{1F600}`, `[a[b]]`, `(?<!a)`, `a{2}{3}`, `\`, `[`, `{`} {
		f.Add(s)
	}
	// And 20,000 strings of regex syntax (a fixed sequence), which `go test` runs without the
	// fuzzer's instrumented build; `make fuzz` searches with coverage guidance.
	const alphabet = `ab019-_^$.*+?|(){}[]\,:<>=!#&~ pPdDwWsSbBAzxuU'` + "\n\t\u00e9"
	rng := rand.New(rand.NewPCG(17, 3))
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("KONDUCTOR_FUZZ_SEEDS")); err == nil {
		n = v * 4
	}
	for range n {
		b := make([]rune, 1+rng.IntN(24))
		r := []rune(alphabet)
		for i := range b {
			b[i] = r[rng.IntN(len(r))]
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = RustRegex(s)
		_ = Expression(`http.path ~ "`+s+`"`, false)
		_ = Expression(s, false)
	})
}

func TestCompileRustRegex(t *testing.T) {
	cases := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{`^/users/\d+/profile$`, []string{"/users/123/profile", "/users/١٢٣/profile"}, []string{"/users/x/profile"}},
		{`^/w/\w+$`, []string{"/w/abc_1", "/w/héllo"}, []string{"/w/a-b"}},
		{`^/c/[\w.-]+$`, []string{"/c/a.b-c", "/c/é"}, []string{"/c/a/b"}},
		{`^/n/\D+$`, []string{"/n/abc"}, []string{"/n/a1"}},
		{`^/x{2}$`, []string{"/xx"}, []string{"/x"}},
		{`(?P<id>\d+)`, []string{"a1"}, []string{"b"}},
		{`[]a]`, []string{"]"}, []string{"b"}},
	}
	for _, c := range cases {
		re, err := CompileRustRegex(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		for _, s := range c.match {
			if !re.MatchString(s) {
				t.Errorf("%s should match %q", c.pattern, s)
			}
		}
		for _, s := range c.miss {
			if re.MatchString(s) {
				t.Errorf("%s should not match %q", c.pattern, s)
			}
		}
	}
	for _, refused := range []string{`(`, `\1`, `a{2000}`, `[[a]b]`} {
		if _, err := CompileRustRegex(refused); err == nil {
			t.Errorf("%s: want an error", refused)
		}
	}
}
