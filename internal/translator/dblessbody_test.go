package translator

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
)

// Issue #45: the body a DB-less Kong is sent leaves out the fields Kong fills with the value
// they hold (kongstate's kongdefaults.go). For every golden case, the body as it is sent (the
// Renderer's) is smaller than the body of the golden's rendering (DeclarativeConfig, KIC's), and
// the emulator, which fills defaults from its own copy of Kong's schemas, loads both into the
// same entities: GET /config exports the same configuration, and the answers match when Kong
// refuses one (the same refusal for both).
func TestDBLessBodyIsSmallerAndLoadsTheSameEntities(t *testing.T) {
	var full, reduced int
	eachGoldenCase(t, func(t *testing.T, dir string) {
		opts := readGoldenOptions(t, dir)
		if opts.RouterFlavor == "traditional" {
			t.Skip("the emulator's flavors compile regexes with Rust; this case's regexes are for the traditional flavor's PCRE")
		}
		objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
		require.NoError(t, err)
		state, _ := translateCaseObjects(t, dir, objs)
		config, err := state.DeclarativeConfig()
		require.NoError(t, err)
		unreduced := dbless.Body(config)
		sent, err := (&kongstate.Renderer{}).QuotedDeclarativeConfig(state, dbless.BodyPrefix, dbless.BodySuffix)
		require.NoError(t, err)
		assert.LessOrEqual(t, sent.Len(), len(unreduced))
		if len(state.Services)+len(state.Upstreams) > 0 {
			assert.Less(t, sent.Len(), len(unreduced), "services and upstreams always hold a default field (KIC's rendering fills some)")
		}
		full, reduced = full+len(unreduced), reduced+sent.Len()

		load := func(body []byte) (int, string, string) {
			emu := opts.emulator()
			emu.Now = func() time.Time { return time.Unix(1700000000, 0) } // the same timestamps
			e := kongemu.New(emu)
			post := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/config", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			e.ServeHTTP(post, req)
			export := httptest.NewRecorder()
			e.ServeHTTP(export, httptest.NewRequest(http.MethodGet, "/config", nil))
			return post.Code, post.Body.String(), export.Body.String()
		}
		wantCode, wantAnswer, wantHeld := load(unreduced)
		gotCode, gotAnswer, gotHeld := load(sent.Bytes())
		require.Equal(t, wantCode, gotCode, "%s\n%s", wantAnswer, gotAnswer)
		if wantCode != http.StatusCreated {
			require.JSONEq(t, wantAnswer, gotAnswer, "the same refusal")
			return
		}
		require.Equal(t, wantHeld, gotHeld, "the same configuration held")
	})
	t.Logf("golden cases: %d bytes sent instead of %d (%.1f%% less)", reduced, full, 100*float64(full-reduced)/float64(full))
}
