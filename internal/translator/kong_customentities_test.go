package translator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// A KongCustomEntity depends on the plugin its parentRef names (translation-rules.md §12.3): the
// object graph has the edge, so a refused plugin takes its custom entities out with it.
func TestCustomEntityDependsOnItsParentPlugin(t *testing.T) {
	dir := filepath.Join("testdata", "custom-entities")
	var opts goldenOptions
	b, err := os.ReadFile(filepath.Join(dir, "options.yaml"))
	require.NoError(t, err)
	require.NoError(t, sigsyaml.UnmarshalStrict(b, &opts))
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"degraphql_routes"}, CustomEntityTypes(snap))

	res := Build(snap, opts.Translator)
	plugin := objgraph.Key(ref(gvkKongPlugin, "default", "graphql"))
	attached := objgraph.Key(ref(gvkKongCustomEntity, "default", "attached"))
	require.Contains(t, res.Graph.References(attached), plugin)
	require.Contains(t, res.Graph.Dependents(plugin), attached)
	require.NotContains(t, res.Graph.Dependents(plugin), objgraph.Key(ref(gvkKongCustomEntity, "default", "contacts")), "an unattached one does not depend on it")

	// Left out with its plugin (as a fallback configuration does), the attached entity is
	// not generated; the unattached one stays.
	without := snap.Select(func(_ schema.GroupVersionKind, o client.Object) bool {
		return !(o.GetName() == "attached" || o.GetName() == "graphql")
	})
	state := Build(without, opts.Translator).State
	var names []string
	for _, e := range state.CustomEntities {
		names = append(names, e.Object.Name)
	}
	require.Equal(t, []string{"contacts"}, names)
}
