package translator

import (
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongrules"
)

// Every value a user can write is a string literal Kong's expression grammar takes, and reads
// back as the same value: every byte from 1 to 127, line and paragraph separators, a
// non-character, a 4-byte rune, and the grammar's own escapes.
func TestATCQuoteIsWhatKongsGrammarReads(t *testing.T) {
	values := []string{"plain", "", `"`, `\`, `\\u2028`, "a\u2028b\u2029c", "\ufffe", "🙂", "tab\there", "new\nline", "cr\r", `ends with \`}
	for c := 1; c < 128; c++ {
		values = append(values, "x"+string(rune(c))+"y")
	}
	for _, v := range values {
		expr := predicate("http.headers.x_tenant", "==", v).expression()
		node, bad := kongrules.ParseExpression(expr, false)
		require.Empty(t, bad, "Kong refuses %s", expr)
		require.NotNil(t, node.Predicate, expr)
		require.Equal(t, v, node.Predicate.Value.Str, "%s reads back", expr)
	}
}

// What route annotations put in an Ingress route's expression is checked as an HTTPRoute's
// expression is: a header regex Rust's crate refuses (look-behind) is named.
func TestAnnotationExpressionIsChecked(t *testing.T) {
	probe := &file.FRoute{Route: kong.Route{Headers: map[string][]string{"x-a": {"~*(?<=a)b"}}, Methods: kong.StringSlice("GET")}}
	require.Contains(t, annotationExpressionRefused(probe), "(?<=a)b")
	probe.Headers = map[string][]string{"x-a": {"line\u2028sep"}}
	require.Empty(t, annotationExpressionRefused(probe))
}
