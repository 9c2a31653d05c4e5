package translator

import (
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A ReplacePrefixMatch rewrite puts the match's prefix into regexes unescaped (as KIC does):
// a prefix that breaks them is refused here rather than sent on for Kong to refuse the whole
// configuration, under either router.
func TestURLRewritePrefixThatBreaksTheRegexIsRefused(t *testing.T) {
	rewrite := &gatewayv1.HTTPURLRewriteFilter{Path: &gatewayv1.HTTPPathModifier{
		Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr("/fixed")}}
	for _, tc := range []struct {
		path    string
		wantErr bool
		paths   []string
	}{
		{"/broken(", true, nil},
		{"/a+b", false, []string{"~/a+b$", "~/a+b(/.*)"}},
		{"/", false, []string{"~/$", "~/(.*)"}},
		{"/v1/", false, []string{"~/v1$", "~/v1(/.*)"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := &file.FRoute{}
			err := urlRewrite(&transformer{}, rewrite, tc.path, r)
			if tc.wantErr {
				require.ErrorContains(t, err, "invalid regex")
				return
			}
			require.NoError(t, err)
			var got []string
			for _, p := range r.Paths {
				got = append(got, *p)
			}
			require.Equal(t, tc.paths, got)
		})
	}
}
