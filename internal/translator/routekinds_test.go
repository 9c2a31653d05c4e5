package translator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/store"
)

// Every route kind of Gateway API has its row in routeKindTable, the translator's one list of
// route kinds (issue #42): a kind Gateway API adds fails here until it has one, and with it
// its place in the sources, the attachment input, the backendRefs' walk and the incremental
// indexes. The row's GroupVersionKind is the store's.
func TestEveryGatewayAPIRouteKindHasARow(t *testing.T) {
	var rows []string
	for _, k := range routeKindTable {
		rows = append(rows, k.kind)
		require.Equal(t, k.storeKind.GroupVersionKind(), k.gvk, k.kind)
		require.Equal(t, k.kind, k.gvk.Kind)
	}
	require.ElementsMatch(t, store.GatewayAPIRouteKinds(), rows)
}
