package translator

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
)

// The Gateway API and TCPIngress/UDPIngress golden outputs are configurations Kong takes whole
// (the emulator applies Kong's schema rules, unique names included): bad input was left out
// and reported, not passed on for Kong to refuse.
func TestGatewayGoldenAcceptedByKong(t *testing.T) {
	var dirs []string
	for _, pattern := range []string{"testdata/gateway-*", "testdata/grpcroute-*", "testdata/httproute-*", "testdata/l4-*"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		dirs = append(dirs, m...)
	}
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if readGoldenOptions(t, dir).RouterFlavor == "traditional" {
				t.Skip("the emulator's flavors compile regexes with Rust; this case's regexes are for the traditional flavor's PCRE")
			}
			out, _ := renderCase(t, dir)
			req := httptest.NewRequest(http.MethodPost, "/config", strings.NewReader(out))
			req.Header.Set("Content-Type", "application/yaml")
			w := httptest.NewRecorder()
			emu := kongemu.Options{Mode: kongemu.DBLess}
			if readGoldenOptions(t, dir).Translator.ExpressionRoutes {
				emu.RouterFlavor = kongemu.RouterExpressions
			}
			kongemu.New(emu).ServeHTTP(w, req)
			require.Equal(t, http.StatusCreated, w.Code, "%s", w.Body.String())
		})
	}
}
