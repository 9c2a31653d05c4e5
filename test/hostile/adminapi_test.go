package hostile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manager"
)

// A hostile Admin API (issue #44, item 8): an endpoint that answers as Kong does, but whose
// listing of services never ends, in one endless body or in endless pages. The database-mode
// gateway's sync, through the controller's Admin API client, fails with an error that names
// the gateway instead of reading on.
func TestHostileAdminAPI(t *testing.T) {
	for name, services := range map[string]http.HandlerFunc{
		"endless body": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"data":[`)
			chunk := strings.Repeat(`{"id":"0a0a0a0a-0000-4000-8000-00000000000a","name":"x","host":"example.com"},`, 1000)
			for {
				if _, err := io.WriteString(w, chunk); err != nil {
					return // the client gave up
				}
			}
		},
		"endless pages": func(w http.ResponseWriter, r *http.Request) {
			off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			fmt.Fprintf(w, `{"data":[],"next":"/services?size=1000&offset=%d","offset":"%d"}`, off+1, off+1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			emu := kongemu.New(kongemu.Options{Mode: kongemu.Postgres})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && r.URL.Path == "/services" {
					services(w, r)
					return
				}
				emu.ServeHTTP(w, r)
			}))
			defer srv.Close()
			cfg, err := config.Parse(nil, func(string) string { return "" })
			require.NoError(t, err)
			hc, err := manager.AdminHTTPClient(cfg)
			require.NoError(t, err)
			g, err := dbmode.New(srv.URL, hc, dbmode.Options{})
			require.NoError(t, err)
			_, err = g.Diff(context.Background(), &kongstate.State{})
			require.Error(t, err)
			require.Contains(t, err.Error(), "gateway "+srv.URL+": GET /services")
			require.Contains(t, err.Error(), "is it Kong's Admin API?")
			if name == "endless pages" {
				require.Contains(t, err.Error(), fmt.Sprintf("more than %d pages", dataplane.MaxAdminPages))
			}
		})
	}
}
