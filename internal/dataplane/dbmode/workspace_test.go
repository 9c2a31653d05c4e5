package dbmode

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// startKong serves an emulator of opts and returns it with its URL.
func startKong(tb testing.TB, opts kongemu.Options) (*kongemu.Emulator, string) {
	tb.Helper()
	e := kongemu.New(opts)
	srv, err := e.Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return e, srv.URL
}

func enterpriseKong(tb testing.TB) (*kongemu.Emulator, string) {
	return startKong(tb, kongemu.Options{Mode: kongemu.Postgres, Edition: kongemu.Enterprise})
}

func gatewayIn(tb testing.TB, url, workspace string) *Gateway {
	tb.Helper()
	g, err := New(url, &http.Client{}, Options{Workspace: workspace})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// translateIn translates objs as the controller does with --kong-workspace=ws: KIC keys
// its deterministic IDs with the workspace.
func translateIn(tb testing.TB, ws string, objs []client.Object) *kongstate.State {
	tb.Helper()
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(tb, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(tb, err)
	s, _ := translator.Translate(snap, translator.Options{Workspace: ws})
	return s
}

func entityNames(ents []map[string]any) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e["name"].(string))
	}
	return out
}

// requestsSince are the requests made since before ("METHOD path" -> count).
func requestsSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// The entities go to the workspace, the workspace is created first, the default
// workspace's entities (tagged as ours or not) are not touched, and every request of the
// sync but the workspace's creation names the workspace.
func TestWorkspaceEntitiesLandInTheWorkspace(t *testing.T) {
	e, url := enterpriseKong(t)
	// Made by hand in the default workspace: one untagged, one with the ownership tag (a
	// default-workspace controller would own it; this one must not see it).
	for _, body := range []string{
		`{"name":"by-hand","host":"by-hand.example"}`,
		`{"name":"ours-in-default","host":"x.example","tags":["managed-by-ingress-controller"]}`,
	} {
		req, _ := http.NewRequest(http.MethodPost, url+"/services", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusCreated, res.StatusCode)
	}
	require.Equal(t, []string{"default"}, e.Workspaces())

	g := gatewayIn(t, url, "team-a")
	s := translateIn(t, "team-a", objects(apps(3)...))
	before := e.Requests()
	require.NoError(t, g.Sync(ctx, target(s)))

	require.Equal(t, []string{"default", "team-a"}, e.Workspaces(), "the missing workspace was created")
	for _, kind := range []string{"services", "routes", "upstreams", "targets"} {
		require.Len(t, e.EntitiesIn("team-a", kind), 3, kind)
	}
	for _, svc := range s.Services {
		found := false
		for _, ent := range e.EntitiesIn("team-a", "services") {
			found = found || ent["id"] == *svc.ID
		}
		require.True(t, found, "service %s keeps its workspace-keyed ID", *svc.Name)
		require.NotEqual(t, kongstate.ServiceID("", *svc.Name), *svc.ID)
	}
	require.ElementsMatch(t, []string{"by-hand", "ours-in-default"}, entityNames(e.Entities("services")))
	require.Empty(t, e.Entities("routes"))

	for req := range requestsSince(before, e.Requests()) {
		// Outside the workspace: its creation, and the GET / that tells a missing
		// workspace from a Kong OSS.
		if req == "POST /workspaces" || req == "GET /" {
			continue
		}
		_, path, _ := strings.Cut(req, " ")
		require.True(t, strings.HasPrefix(path, "/team-a/"), "%s goes to the workspace", req)
	}
	require.Equal(t, 1, e.RequestCount(http.MethodPost, "/workspaces"))

	// The next sync dumps the workspace and finds it in step: nothing is written, the
	// workspace is not asked for again, and the schemas come from the cache.
	mark, before := e.AuditMark(), e.Requests()
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Empty(t, e.AuditSince(mark))
	since := requestsSince(before, e.Requests())
	// One look-up per sync is go-database-reconciler's (its defaulter's WorkspaceExists,
	// which file.Get runs on every target); none is ours once the workspace was found.
	require.Equal(t, 1, since["GET /team-a/workspaces/team-a"])
	require.Zero(t, since["GET /team-a/schemas/services"], "schemas cached under the workspace's prefix")
	require.NotZero(t, since["GET /team-a/kong"], "the version is read in the workspace")

	// A change deletes in the workspace only.
	require.NoError(t, g.Sync(ctx, target(translateIn(t, "team-a", objects(apps(1)...)))))
	require.Len(t, e.EntitiesIn("team-a", "services"), 1)
	require.ElementsMatch(t, []string{"by-hand", "ours-in-default"}, entityNames(e.Entities("services")))
}

// Two controllers with different workspaces on one Kong: neither sees nor deletes the
// other's entities, even for the same Kubernetes objects (their IDs are keyed by workspace).
func TestTwoWorkspacesDoNotSeeEachOther(t *testing.T) {
	e, url := enterpriseKong(t)
	a, b := gatewayIn(t, url, "a"), gatewayIn(t, url, "b")
	same := objects(apps(2)...)
	require.NoError(t, a.Sync(ctx, target(translateIn(t, "a", same))))
	require.NoError(t, b.Sync(ctx, target(translateIn(t, "b", objects(apps(4)...)))))
	require.Len(t, e.EntitiesIn("a", "services"), 2)
	require.Len(t, e.EntitiesIn("b", "services"), 4)

	// a in step: b's entities, same names included, are not a's to delete.
	mark := e.AuditMark()
	res, err := a.Apply(ctx, translateIn(t, "a", same))
	require.NoError(t, err)
	require.Zero(t, res.Total(), "changes: %+v", res.Changes)
	require.Empty(t, e.AuditSince(mark))

	// b empties its workspace; a's stays whole.
	require.NoError(t, b.Sync(ctx, target(translateIn(t, "b", nil))))
	require.Empty(t, e.EntitiesIn("b", "services"))
	require.Empty(t, e.EntitiesIn("b", "upstreams"))
	require.Len(t, e.EntitiesIn("a", "services"), 2)
	require.Len(t, e.EntitiesIn("a", "upstreams"), 2)
	require.Empty(t, e.Entities("services"))
}

// Only a sync writes: a dry run and a standby's Prepare leave a missing workspace missing
// and say so; an existing workspace is used as it is.
func TestMissingWorkspaceIsCreatedBySyncOnly(t *testing.T) {
	e, url := enterpriseKong(t)
	s := translateIn(t, "team-a", objects(apps(1)...))
	g := gatewayIn(t, url, "team-a")

	_, err := g.Diff(ctx, s)
	require.ErrorContains(t, err, `workspace "team-a" (--kong-workspace) does not exist`)
	require.ErrorContains(t, g.Prepare(ctx, target(s)), "does not exist")
	require.Equal(t, []string{"default"}, e.Workspaces())
	require.Empty(t, e.Audit())

	require.NoError(t, g.Sync(ctx, target(s)))
	require.Equal(t, []string{"default", "team-a"}, e.Workspaces())

	// Another controller (a restart) finds it: no second create, and a dry run works.
	other := gatewayIn(t, url, "team-a")
	res, err := other.Diff(ctx, s)
	require.NoError(t, err)
	require.Zero(t, res.Total())
	require.NoError(t, other.Sync(ctx, target(s)))
	require.Equal(t, 1, e.RequestCount(http.MethodPost, "/workspaces"))
}

// Kong OSS has no workspaces: the sync fails with an error that names the flag, and writes
// nothing.
func TestWorkspaceOnKongOSSIsAClearError(t *testing.T) {
	e, url := startKong(t, kongemu.Options{Mode: kongemu.Postgres})
	g := gatewayIn(t, url, "team-a")
	err := g.Sync(ctx, target(translateIn(t, "team-a", objects(apps(1)...))))
	require.ErrorContains(t, err, `--kong-workspace "team-a"`)
	require.ErrorContains(t, err, "not Kong Gateway Enterprise")
	require.Empty(t, e.Audit())
	require.Empty(t, e.Entities("services"))
}
