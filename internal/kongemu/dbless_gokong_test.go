package kongemu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// TestGoKongDBLess is what a DB-less controller does: read the root for the
// database mode, push with ReloadDeclarativeRawConfig (check_hash=1,
// flatten_errors=1), read /status, and parse flattened errors on rejection.
func TestGoKongDBLess(t *testing.T) {
	ctx := context.Background()
	e, c := gokongClient(t, Options{})
	root, err := c.Root(ctx)
	require.NoError(t, err)
	require.Equal(t, "off", root["configuration"].(map[string]any)["database"])
	require.Equal(t, "3.10.0", kong.VersionFromInfo(root))

	require.NoError(t, c.ReloadDeclarativeRawConfig(ctx, bytes.NewReader([]byte(okConfig)), true, true))
	st, err := c.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, e.ConfigHash(), st.ConfigurationHash)
	require.NotEqual(t, emptyHash, st.ConfigurationHash)
	// Same config with check_hash: 304 counts as success.
	require.NoError(t, c.ReloadDeclarativeRawConfig(ctx, bytes.NewReader([]byte(okConfig)), true, true))
	require.Len(t, e.Audit(), 1)

	routes, err := c.Routes.ListAll(ctx)
	require.NoError(t, err)
	require.Len(t, routes, 1)
	_, err = c.Services.Create(ctx, &kong.Service{Name: kong.String("x"), Host: kong.String("h")})
	require.Equal(t, 405, apiCode(err))

	err = c.ReloadDeclarativeRawConfig(ctx, bytes.NewReader([]byte(`{"_format_version":"3.0","services":[{"name":"bad","tags":["k8s-uid:1"]}]}`)), true, true)
	require.Error(t, err)
	apiErr := err.(*kong.APIError)
	require.Equal(t, 400, apiErr.Code())
	var body struct {
		Flattened []struct {
			EntityType string   `json:"entity_type"`
			EntityName string   `json:"entity_name"`
			EntityTags []string `json:"entity_tags"`
			Errors     []struct {
				Type, Field, Message string
			} `json:"errors"`
		} `json:"flattened_errors"`
	}
	require.NoError(t, json.Unmarshal(apiErr.Raw(), &body))
	require.Len(t, body.Flattened, 1)
	require.Equal(t, "service", body.Flattened[0].EntityType)
	require.Equal(t, "bad", body.Flattened[0].EntityName)
	require.Equal(t, []string{"k8s-uid:1"}, body.Flattened[0].EntityTags)
	require.Equal(t, "host", body.Flattened[0].Errors[0].Field)

	e.Restart()
	st, err = c.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, emptyHash, st.ConfigurationHash)
}

// TestConcurrentRequests exercises the lock under -race.
func TestConcurrentRequests(t *testing.T) {
	e := New(Options{Mode: Postgres, Seed: 3})
	srv, err := e.Start()
	require.NoError(t, err)
	defer srv.Close()
	e.InjectFault(Fault{Fraction: 0.1, Status: 503, PathPrefix: "/status"})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				body := fmt.Sprintf(`{"name":"s-%d-%d","host":"h","tags":["w%d"]}`, w, i, w)
				res, err := http.Post(srv.URL+"/services", "application/json", bytes.NewReader([]byte(body)))
				if err == nil {
					res.Body.Close()
				}
				res, err = http.Get(srv.URL + "/services?tags=w" + fmt.Sprint(w))
				if err == nil {
					res.Body.Close()
				}
				res, err = http.Get(srv.URL + "/status")
				if err == nil {
					res.Body.Close()
				}
				_ = e.Entities("services")
				_ = e.Audit()
			}
		}(w)
	}
	wg.Wait()
	require.Len(t, e.Entities("services"), 160)
	require.Len(t, e.Audit(), 160)
	require.Equal(t, 160, e.RequestCount("POST", "/services"))
}
