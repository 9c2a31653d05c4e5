package kongstate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An entity Kong refuses is blamed on the KongCustomEntity whose id it carries, never on the
// first whose fields match: a tenant that copies a victim's fields does not get the victim's
// entity taken out for its own error (issue #44, item 5).
func TestCustomEntityObjectIsFoundByIDOnly(t *testing.T) {
	victim := ObjectRef{Kind: "KongCustomEntity", Namespace: "team-a", Name: "routes"}
	tenant := ObjectRef{Kind: "KongCustomEntity", Namespace: "team-b", Name: "copy"}
	s := &State{CustomEntities: []*CustomEntity{
		{Type: "degraphql_routes", Object: victim, Fields: map[string]any{"id": "id-a", "uri": "/x", "query": "q"}},
		{Type: "degraphql_routes", Object: tenant, Fields: map[string]any{"id": "id-b", "uri": "/x", "query": "q"}},
	}}
	got, ok := s.CustomEntityObject(map[string]any{"id": "id-b", "uri": "/x", "query": "q"})
	require.True(t, ok)
	require.Equal(t, tenant, got)
	_, ok = s.CustomEntityObject(map[string]any{"uri": "/x", "query": "q"})
	require.False(t, ok, "an entity without its id is no object's")
}
