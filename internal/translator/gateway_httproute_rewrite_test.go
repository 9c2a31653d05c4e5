package translator

import (
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A ReplacePrefixMatch rewrite puts the match's prefix into regexes as a literal (KIC puts it
// in unescaped, so "/a+b" matched "/aab" and "/broken(" made Kong refuse the whole
// configuration).
func TestURLRewritePrefixIsLiteralInTheRegex(t *testing.T) {
	rewrite := &gatewayv1.HTTPURLRewriteFilter{Path: &gatewayv1.HTTPPathModifier{
		Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr("/fixed")}}
	for _, tc := range []struct {
		path  string
		paths []string
	}{
		{"/broken(", []string{`~/broken\($`, `~/broken\((/.*)`}},
		{"/a+b", []string{`~/a\+b$`, `~/a\+b(/.*)`}},
		{"/", []string{"~/$", "~/(.*)"}},
		{"/v1/", []string{"~/v1$", "~/v1(/.*)"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := &file.FRoute{}
			require.NoError(t, urlRewrite(&transformer{}, rewrite, tc.path, r))
			var got []string
			for _, p := range r.Paths {
				got = append(got, *p)
			}
			require.Equal(t, tc.paths, got)
		})
	}
}
