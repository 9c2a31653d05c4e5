package kongemu

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

func eeDB() *Emulator { return New(Options{Mode: Postgres, Edition: Enterprise}) }

func dataOf(t *testing.T, body any) []any {
	t.Helper()
	d, ok := obj(body)["data"].([]any)
	require.True(t, ok, "a list answer: %v", body)
	return d
}

func names(t *testing.T, body any) []string {
	t.Helper()
	var out []string
	for _, x := range dataOf(t, body) {
		out = append(out, obj(x)["name"].(string))
	}
	return out
}

// Kong OSS has no workspaces: /workspaces and a prefixed path are paths it does not know.
func TestCommunityHasNoWorkspaces(t *testing.T) {
	e := New(Options{Mode: Postgres})
	for _, p := range []string{"/workspaces", "/workspaces/default", "/default/services", "/ws1/services", "/ws1/kong"} {
		status, body, _ := call(t, e, http.MethodGet, p, nil)
		require.Equal(t, http.StatusNotFound, status, p)
		require.Equal(t, "Not found", obj(body)["message"], p)
	}
	require.Nil(t, e.Workspaces())
}

func TestDefaultWorkspaceExistsFromTheStart(t *testing.T) {
	e := eeDB()
	status, body, _ := call(t, e, http.MethodGet, "/workspaces", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"default"}, names(t, body))
	status, body, _ = call(t, e, http.MethodGet, "/workspaces/default", nil)
	require.Equal(t, http.StatusOK, status)
	ws := obj(body)
	require.True(t, isUUID(ws["id"].(string)))
	require.Contains(t, ws, "comment")
	require.Nil(t, ws["comment"])
	require.NotNil(t, ws["created_at"])
	require.Equal(t, false, obj(ws["config"])["portal"], "config.portal defaults to false")
	require.Contains(t, obj(ws["meta"]), "color")
	// By id as by name (endpoint key).
	status, _, _ = call(t, e, http.MethodGet, "/workspaces/"+ws["id"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	// default is also a prefix: /default/services is /services.
	status, _, _ = call(t, e, http.MethodPost, "/default/services", map[string]any{"name": "a", "host": "a.example"})
	require.Equal(t, http.StatusCreated, status)
	require.Len(t, e.Entities("services"), 1)
}

func TestWorkspaceCRUD(t *testing.T) {
	e := eeDB()
	status, body, _ := call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws1", "comment": "team one"})
	require.Equal(t, http.StatusCreated, status, body)
	require.Equal(t, "team one", obj(body)["comment"])

	status, body, _ = call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws1"})
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, `UNIQUE violation detected on '{name="ws1"}'`, obj(body)["message"])

	status, body, _ = call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "services"})
	require.Equal(t, http.StatusBadRequest, status, "a collection's name would shadow its path")
	require.Contains(t, obj(obj(body)["fields"])["name"], "expected none of")

	status, body, _ = call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "a b"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, obj(obj(body)["fields"])["name"], "the only accepted ascii characters")

	status, body, _ = call(t, e, http.MethodPost, "/workspaces", map[string]any{"comment": "x"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "required field missing", obj(obj(body)["fields"])["name"])

	status, body, _ = call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws2", "color": "red"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "unknown field", obj(obj(body)["fields"])["color"])

	status, _, _ = call(t, e, http.MethodPatch, "/workspaces/ws1", map[string]any{"name": "renamed"})
	require.Equal(t, http.StatusBadRequest, status)
	status, body, _ = call(t, e, http.MethodPatch, "/workspaces/ws1", map[string]any{"comment": "changed"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "changed", obj(body)["comment"])

	// PUT by name creates, then replaces.
	status, _, _ = call(t, e, http.MethodPut, "/workspaces/ws3", map[string]any{})
	require.Equal(t, http.StatusCreated, status)
	status, _, _ = call(t, e, http.MethodPut, "/workspaces/ws3", map[string]any{"comment": "c"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"default", "ws1", "ws3"}, e.Workspaces())

	status, body, _ = call(t, e, http.MethodDelete, "/workspaces/default", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "Cannot delete default workspace", obj(body)["message"])

	status, _, _ = call(t, e, http.MethodPost, "/ws1/services", map[string]any{"name": "a", "host": "a.example"})
	require.Equal(t, http.StatusCreated, status)
	status, body, _ = call(t, e, http.MethodDelete, "/workspaces/ws1", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "Workspace is not empty", obj(body)["message"])
	status, _, _ = call(t, e, http.MethodDelete, "/ws1/services/a", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _, _ = call(t, e, http.MethodDelete, "/workspaces/ws1", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, body, _ = call(t, e, http.MethodGet, "/ws1/services", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "Workspace 'ws1' not found", obj(body)["message"])
}

// Each workspace holds its own entities: names are unique per workspace, IDs across all.
func TestWorkspacesHoldTheirOwnEntities(t *testing.T) {
	e := eeDB()
	for _, ws := range []string{"ws1", "ws2"} {
		status, _, _ := call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": ws})
		require.Equal(t, http.StatusCreated, status)
	}
	mk := func(prefix, name string) map[string]any {
		status, body, _ := call(t, e, http.MethodPost, prefix+"/services", map[string]any{"name": name, "host": name + ".example", "tags": []string{"t"}})
		require.Equal(t, http.StatusCreated, status, body)
		return obj(body)
	}
	inDefault := mk("", "same")
	inWS1 := mk("/ws1", "same") // the same name in another workspace
	mk("/ws1", "only-ws1")
	require.NotEqual(t, inDefault["id"], inWS1["id"])

	status, body, _ := call(t, e, http.MethodGet, "/services", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"same"}, names(t, body))
	status, body, _ = call(t, e, http.MethodGet, "/ws1/services", nil)
	require.Equal(t, http.StatusOK, status)
	require.ElementsMatch(t, []string{"same", "only-ws1"}, names(t, body))
	status, body, _ = call(t, e, http.MethodGet, "/ws2/services", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, dataOf(t, body))

	// Items and nested collections resolve in their workspace.
	status, body, _ = call(t, e, http.MethodGet, "/ws1/services/same", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, inWS1["id"], obj(body)["id"])
	status, _, _ = call(t, e, http.MethodGet, "/ws2/services/same", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, body, _ = call(t, e, http.MethodPost, "/ws1/services/only-ws1/routes", map[string]any{"name": "r", "paths": []string{"/x"}})
	require.Equal(t, http.StatusCreated, status, body)
	require.Len(t, e.EntitiesIn("ws1", "routes"), 1)
	require.Empty(t, e.Entities("routes"))

	// A duplicate name in the same workspace is refused; an ID held in another workspace too.
	status, _, _ = call(t, e, http.MethodPost, "/ws1/services", map[string]any{"name": "same", "host": "x"})
	require.Equal(t, http.StatusConflict, status)
	status, body, _ = call(t, e, http.MethodPost, "/ws2/services", map[string]any{"id": inWS1["id"], "name": "other", "host": "x"})
	require.Equal(t, http.StatusConflict, status, body)
	require.Contains(t, obj(body)["message"], "id=")
	status, _, _ = call(t, e, http.MethodPut, "/ws2/services/"+inDefault["id"].(string), map[string]any{"name": "other", "host": "x"})
	require.Equal(t, http.StatusConflict, status)

	// /tags lists the workspace's tags only.
	status, body, _ = call(t, e, http.MethodGet, "/ws1/tags", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, dataOf(t, body), 2)
	status, body, _ = call(t, e, http.MethodGet, "/tags/t", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, dataOf(t, body), 1)

	// The default workspace is untouched by the others.
	require.Len(t, e.Entities("services"), 1)
	require.Len(t, e.EntitiesIn("default", "services"), 1)
	require.Nil(t, e.EntitiesIn("nope", "services"))
}

func TestWorkspacePagesLinkWithinTheWorkspace(t *testing.T) {
	e := eeDB()
	call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws1"})
	for _, n := range []string{"a", "b", "c"} {
		status, _, _ := call(t, e, http.MethodPost, "/ws1/services", map[string]any{"name": n, "host": n})
		require.Equal(t, http.StatusCreated, status)
	}
	status, body, _ := call(t, e, http.MethodGet, "/ws1/services?size=2", nil)
	require.Equal(t, http.StatusOK, status)
	require.True(t, strings.HasPrefix(obj(body)["next"].(string), "/ws1/services?offset="), obj(body)["next"])
	status, body, _ = call(t, e, http.MethodGet, obj(body)["next"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, dataOf(t, body), 1)
}

// Kong's answers to the prefixed paths other than entities (kong/api/routes/workspaces.lua,
// the Enterprise before_filter and /{ws}/kong).
func TestWorkspacePrefixedPaths(t *testing.T) {
	e := eeDB()
	call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws1"})
	call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws2"})
	cases := []struct {
		method, path string
		status       int
		message      string
	}{
		{http.MethodGet, "/nope/services", http.StatusNotFound, "Workspace 'nope' not found"},
		{http.MethodGet, "/nope/kong", http.StatusNotFound, "Workspace 'nope' not found"},
		{http.MethodGet, "/ws1/bogus", http.StatusNotFound, "Not found"},
		{http.MethodGet, "/ws1", http.StatusNotFound, "Not found"},
		{http.MethodGet, "/ws1/workspaces", http.StatusNotFound, "Not found"},
		{http.MethodPost, "/ws1/workspaces", http.StatusNotFound, "Not found"},
		{http.MethodGet, "/ws1/workspaces/ws2", http.StatusNotFound, "Not found"},
		{http.MethodGet, "/ws1/workspaces/default", http.StatusNotFound, "Not found"},
		{http.MethodGet, "/ws1/workspaces/ws1", http.StatusOK, ""},
		{http.MethodGet, "/default/workspaces/ws2", http.StatusOK, ""},
		{http.MethodGet, "/ws1/status", http.StatusOK, ""},
		{http.MethodGet, "/ws1/schemas/services", http.StatusOK, ""},
		{http.MethodGet, "/ws1/plugins/enabled", http.StatusOK, ""},
	}
	for _, c := range cases {
		status, body, _ := call(t, e, c.method, c.path, nil)
		require.Equal(t, c.status, status, "%s %s: %v", c.method, c.path, body)
		if c.message != "" {
			require.Equal(t, c.message, obj(body)["message"], c.path)
		}
	}
	status, body, _ := call(t, e, http.MethodGet, "/ws1/kong", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "enterprise", obj(body)["edition"])
}

// Licenses are not workspaceable (workspaceable = false): every workspace sees the same.
func TestLicensesAreSharedByWorkspaces(t *testing.T) {
	e := eeDB()
	call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws1"})
	status, _, _ := call(t, e, http.MethodPost, "/ws1/licenses", map[string]any{"payload": "{}"})
	require.Equal(t, http.StatusCreated, status)
	status, body, _ := call(t, e, http.MethodGet, "/licenses", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, dataOf(t, body), 1)
	status, _, _ = call(t, e, http.MethodDelete, "/workspaces/ws1", nil)
	require.Equal(t, http.StatusNoContent, status, "a license does not make a workspace non-empty")
}

func TestDBLessEnterpriseHasOnlyTheDefaultWorkspace(t *testing.T) {
	e := New(Options{Edition: Enterprise})
	status, body, _ := call(t, e, http.MethodGet, "/workspaces", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"default"}, names(t, body))
	status, body, _ = call(t, e, http.MethodPost, "/workspaces", map[string]any{"name": "ws1"})
	require.Equal(t, http.StatusMethodNotAllowed, status)
	require.Equal(t, "cannot create 'workspaces' entities when not using a database", obj(body)["message"])
}

// go-kong addresses a workspace as KIC uses it: ExistsByName asks /{ws}/workspaces/{ws},
// Create posts /workspaces, and with SetWorkspace every path (GET / as /{ws}/kong) has the
// prefix.
func TestGoKongWorkspaces(t *testing.T) {
	e, c := gokongClient(t, Options{Mode: Postgres, Edition: Enterprise})
	ctx := context.Background()
	exists, err := c.Workspaces.ExistsByName(ctx, kong.String("team-a"))
	require.NoError(t, err)
	require.False(t, exists)
	_, err = c.Workspaces.Create(ctx, &kong.Workspace{Name: kong.String("team-a")})
	require.NoError(t, err)
	exists, err = c.Workspaces.ExistsByName(ctx, kong.String("team-a"))
	require.NoError(t, err)
	require.True(t, exists)

	c.SetWorkspace("team-a")
	root, err := c.Root(ctx)
	require.NoError(t, err)
	require.Equal(t, "enterprise", root["edition"])
	_, err = c.Services.Create(ctx, &kong.Service{Name: kong.String("svc"), Host: kong.String("svc.example")})
	require.NoError(t, err)
	all, err := c.Services.ListAll(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	exists, err = c.Workspaces.Exists(ctx, kong.String("team-a"))
	require.NoError(t, err)
	require.True(t, exists, "go-database-reconciler's WorkspaceExists: /{ws}/workspaces/{ws}")

	require.Len(t, e.EntitiesIn("team-a", "services"), 1)
	require.Empty(t, e.Entities("services"))
}
