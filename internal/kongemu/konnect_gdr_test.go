package kongemu

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// konnectClient is the go-kong client KIC makes for a control plane
// (adminapi.NewKongClientForKonnectControlPlane): base URL <address>/kic/api/control-planes/<id>,
// the client certificate, no token.
func konnectClient(t *testing.T, srv *KonnectServer, cpid string) *kong.Client {
	t.Helper()
	c, err := kong.NewClient(kong.String(srv.ControlPlaneURL(cpid)), srv.Client(nil))
	require.NoError(t, err)
	return c
}

// syncKonnect runs what KIC's UpdateStrategyDBMode runs for Konnect: dump.Get with
// KonnectControlPlane (no select tags), file.Get, diff.NewSyncer with IsKonnect, Solve.
func syncKonnect(t *testing.T, client *kong.Client, cpid string, content *file.Content) diff.Stats {
	t.Helper()
	ctx := context.Background()
	dumpConfig := dump.Config{KonnectControlPlane: cpid}
	currentRaw, err := dump.Get(ctx, client, dumpConfig)
	require.NoError(t, err)
	currentState, err := state.Get(currentRaw)
	require.NoError(t, err)
	version, err := utils.ParseKongVersion("3.10.0")
	require.NoError(t, err)
	targetRaw, err := file.Get(ctx, content, file.RenderConfig{CurrentState: currentState, KongVersion: version}, dumpConfig, client)
	require.NoError(t, err)
	targetState, err := state.Get(targetRaw)
	require.NoError(t, err)
	syncer, err := diff.NewSyncer(diff.SyncerOpts{CurrentState: currentState, TargetState: targetState, KongClient: client,
		SilenceWarnings: true, IsKonnect: true, IncludeLicenses: true, EnableEntityActions: true})
	require.NoError(t, err)
	// With entity actions (as KIC runs it) the result channel must be drained, as KIC does.
	var actionErrs []string
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for a := range syncer.GetResultChan() {
			if a.Error != nil {
				actionErrs = append(actionErrs, a.Error.Error())
			}
		}
	}()
	stats, errs, _ := syncer.Solve(ctx, 4, false, false)
	<-drained
	require.Empty(t, errs)
	require.Empty(t, actionErrs)
	return stats
}

// TestKonnectReconcilerRoundTrip syncs a configuration into a control plane with
// go-database-reconciler in Konnect mode over mTLS: the entities land in the control
// plane's emulator, a second sync writes nothing, and what leaves the content is deleted.
func TestKonnectReconcilerRoundTrip(t *testing.T) {
	k := NewKonnect(KonnectOptions{})
	srv, err := k.Start()
	require.NoError(t, err)
	defer srv.Close()
	cpid := k.ControlPlaneIDs()[0]
	client := konnectClient(t, srv, cpid)
	cp := k.ControlPlane(cpid)

	cfg := func(withTarget2, withRoute2 bool) string {
		targets := `{"target":"10.0.0.1:8080","weight":100}`
		if withTarget2 {
			targets += `,{"target":"10.0.0.2:8080"}`
		}
		routes := `{"name":"default.echo.00","hosts":["echo.example.com"],"paths":["/echo"],"strip_path":false,
		       "protocols":["http","https"],"plugins":[{"name":"cors","config":{"origins":["*"]}}]}`
		if withRoute2 {
			routes += `,{"name":"default.echo.01","paths":["/two"]}`
		}
		return `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]},
		 "services":[{"name":"default.echo.80","host":"echo.default.80.svc","port":80,"protocol":"http",
		    "tags":["` + managedTag + `"],"routes":[` + routes + `]}],
		 "upstreams":[{"name":"echo.default.80.svc","algorithm":"round-robin","targets":[` + targets + `]}],
		 "consumer_groups":[{"name":"gold"}],
		 "consumers":[{"username":"alice","groups":[{"name":"gold"}],"keyauth_credentials":[{"key":"alice-key"}]}],
		 "plugins":[{"name":"correlation-id","config":{"header_name":"X-Req"}}]
		}`
	}

	stats := syncKonnect(t, client, cpid, content(t, cfg(true, true)))
	require.Positive(t, stats.CreateOps.Count())
	for kind, n := range map[string]int{"services": 1, "routes": 2, "plugins": 2, "upstreams": 1, "targets": 2,
		"consumers": 1, "keyauth_credentials": 1, "consumer_groups": 1, "consumer_group_consumers": 1} {
		require.Len(t, cp.Entities(kind), n, kind)
	}
	require.Equal(t, "echo.default.80.svc", cp.Entity("services", "default.echo.80")["host"])
	// The Konnect-only paths were used: the global targets list and the /v1 consumer group writes.
	require.Positive(t, k.RequestCount(http.MethodGet, "/targets"))
	require.Zero(t, cp.RequestCount(http.MethodGet, "/upstreams/"), "targets are listed globally in Konnect mode")
	require.Equal(t, 1, k.RequestCount(http.MethodPost, "/v1/consumer-groups"))
	require.Equal(t, 1, k.RequestCount(http.MethodPost, "/v1/consumers/"))
	require.Zero(t, k.RequestCount(http.MethodGet, "/oauth2"), "oauth2 credentials are not dumped in Konnect mode")
	require.Zero(t, k.RequestCount(http.MethodGet, "/licenses"), "licenses are not dumped in Konnect mode")
	require.Positive(t, k.RequestCount(http.MethodGet, "/v1/schemas/json/"))

	// In sync: a second pass finds nothing to do and writes nothing.
	mark := cp.AuditMark()
	k.ResetRequests()
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncKonnect(t, client, cpid, content(t, cfg(true, true)))))
	require.Empty(t, cp.AuditSince(mark), "an in-sync control plane gets no writes")
	for _, r := range k.Requests() {
		require.Contains(t, []string{http.MethodGet, http.MethodHead}, r.Method, r.Path)
	}

	// A route and a target leave the content: they are deleted.
	mark = cp.AuditMark()
	stats = syncKonnect(t, client, cpid, content(t, cfg(false, false)))
	require.Equal(t, [3]int32{0, 0, 2}, ops(stats))
	var deleted []string
	for _, a := range cp.AuditSince(mark) {
		require.Equal(t, http.MethodDelete, a.Method)
		deleted = append(deleted, a.Entity+":"+a.Name)
	}
	require.ElementsMatch(t, []string{"routes:default.echo.01", "targets:10.0.0.2:8080"}, deleted)
	require.Len(t, cp.Entities("routes"), 1)
	require.Len(t, cp.Entities("targets"), 1)

	// Konnect mode dumps the whole control plane (no select tags): an empty content deletes
	// every entity, consumer groups included (DELETE /v1/consumer-groups/{id}).
	empty := `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]}}`
	syncKonnect(t, client, cpid, content(t, empty))
	for _, kind := range []string{"services", "routes", "plugins", "upstreams", "targets", "consumers",
		"keyauth_credentials", "consumer_groups", "consumer_group_consumers"} {
		require.Empty(t, cp.Entities(kind), kind)
	}
	require.Equal(t, 1, k.RequestCount(http.MethodDelete, "/v1/consumer-groups/"))
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncKonnect(t, client, cpid, content(t, empty))))
}

// TestKonnectReconcilerWithIDs is the round trip with the IDs KIC fills (feature gate
// FillIDs): every write is a PUT by id, and a change of a field is one update.
func TestKonnectReconcilerWithIDs(t *testing.T) {
	k := NewKonnect(KonnectOptions{ControlPlaneIDs: []string{"cp-a", "cp-b"}})
	srv, err := k.Start()
	require.NoError(t, err)
	defer srv.Close()
	client := konnectClient(t, srv, "cp-b")
	cp := k.ControlPlane("cp-b")

	cfg := func(port string) string {
		return `{"_format_version":"3.0",
		 "services":[{"id":"5b1484f2-5209-49d9-b43e-92ba09dd9d52","name":"svc","host":"svc.default.80.svc","port":` + port + `,
		    "routes":[{"id":"1b1484f2-5209-49d9-b43e-92ba09dd9d52","name":"r","paths":["/r"]}]}],
		 "upstreams":[{"id":"2b1484f2-5209-49d9-b43e-92ba09dd9d52","name":"svc.default.80.svc",
		    "targets":[{"id":"3b1484f2-5209-49d9-b43e-92ba09dd9d52","target":"10.0.0.1:80"}]}]
		}`
	}
	syncKonnect(t, client, "cp-b", content(t, cfg("80")))
	require.Len(t, cp.Entities("services"), 1)
	require.Empty(t, k.ControlPlane("cp-a").Entities("services"), "control planes are apart")
	for _, r := range k.Requests() {
		if r.Method == http.MethodPost {
			// go-kong's target Create with an id PUTs, and POSTs on 404 (the Admin API
			// emulator's nested targets take no PUT of a new id).
			require.True(t, strings.HasSuffix(r.Rel, "/targets"), r.Rel)
		}
	}
	require.Positive(t, k.RequestCount(http.MethodPut, "/services/5b1484f2"))

	mark := cp.AuditMark()
	require.Equal(t, [3]int32{0, 1, 0}, ops(syncKonnect(t, client, "cp-b", content(t, cfg("8080")))))
	audit := cp.AuditSince(mark)
	require.Len(t, audit, 1)
	require.True(t, strings.HasPrefix(audit[0].Path, "/services/"), audit[0].Path)
	require.Equal(t, float64(8080), obj(jsonOf(t, cp.Entity("services", "svc")))["port"])
}
