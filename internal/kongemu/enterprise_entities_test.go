package kongemu

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Kong Gateway Enterprise has licenses and the degraphql plugin's degraphql_routes: their
// schemas are served, and DB-less configuration takes them, the route's service by foreign
// key. Kong OSS has neither: 404 on the schema, "unknown field" in configuration.
func TestEnterpriseEntitiesLicensesAndDegraphqlRoutes(t *testing.T) {
	config := map[string]any{
		"_format_version": "3.0",
		"services":        []any{map[string]any{"id": "fe1e2edc-5479-52fe-b0f4-b90d8d5f83ba", "name": "s", "host": "h"}},
		"degraphql_routes": []any{map[string]any{"uri": "/c", "query": "q",
			"service": map[string]any{"id": "fe1e2edc-5479-52fe-b0f4-b90d8d5f83ba"}}},
		"licenses": []any{map[string]any{"id": "a88e1c68-83d8-55b8-b3e9-c661f64e91eb", "payload": "{}"}},
	}

	ee := New(Options{Mode: DBLess, Edition: Enterprise})
	status, body, _ := call(t, ee, http.MethodGet, "/schemas/degraphql_routes", nil)
	require.Equal(t, http.StatusOK, status)
	fields := obj(body)["fields"].([]any)
	require.Equal(t, map[string]any{"service": map[string]any{"type": "foreign", "reference": "services"}}, fields[1])
	status, _, _ = call(t, ee, http.MethodPost, "/config", config)
	require.Equal(t, http.StatusCreated, status)
	status, body, _ = call(t, ee, http.MethodGet, "/degraphql_routes", nil)
	require.Equal(t, http.StatusOK, status)
	routes := obj(body)["data"].([]any)
	require.Len(t, routes, 1)
	require.Equal(t, []any{"GET"}, obj(routes[0])["methods"], "methods default to GET")
	status, body, _ = call(t, ee, http.MethodGet, "/licenses/a88e1c68-83d8-55b8-b3e9-c661f64e91eb", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "{}", obj(body)["payload"])

	missing := map[string]any{"_format_version": "3.0", "degraphql_routes": []any{map[string]any{"uri": "/c"}}}
	status, body, _ = call(t, ee, http.MethodPost, "/config?flatten_errors=1", missing)
	require.Equal(t, http.StatusBadRequest, status)
	flat := obj(obj(body)["flattened_errors"].([]any)[0])
	require.Equal(t, map[string]any{"uri": "/c"}, flat["entity"], "Kong quotes the entity it refused")

	oss := New(Options{Mode: DBLess})
	status, body, _ = call(t, oss, http.MethodGet, "/schemas/licenses", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "No entity named 'licenses'", obj(body)["message"])
	status, body, _ = call(t, oss, http.MethodPost, "/config", config)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, map[string]any{"degraphql_routes": "unknown field", "licenses": "unknown field"}, obj(body)["fields"])
}

// Kong ignores the tags option on a collection whose entity has no tags field
// (extract_options in kong/api/endpoints.lua): GET /licenses?tags=x lists every license, as
// go-database-reconciler's dump (select tags) then sees them.
func TestTagsIgnoredOnEntitiesWithoutTags(t *testing.T) {
	ee := New(Options{Mode: Postgres, Edition: Enterprise})
	status, _, _ := call(t, ee, http.MethodPost, "/licenses", map[string]any{"payload": "{}"})
	require.Equal(t, http.StatusCreated, status)
	status, body, _ := call(t, ee, http.MethodGet, "/licenses?tags=managed-by-ingress-controller", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, obj(body)["data"].([]any), 1)
	status, body, _ = call(t, ee, http.MethodGet, "/services?tags=managed-by-ingress-controller", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, obj(body)["data"])
}
