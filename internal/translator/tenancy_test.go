package translator

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/manifest"
)

// --host-ownership reads which object a route comes from by its tags, as custom entities'
// foreign keys do: without a UID (a manifest given to `konductor translate` has none) the
// object is still known, and another namespace's route on an owned host is still left out.
func TestHostOwnershipWithoutUIDs(t *testing.T) {
	dir := filepath.Join("testdata", "tenants-host-ownership")
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	for _, o := range objs {
		o.SetUID(types.UID(""))
	}
	_, problems := translateCaseObjects(t, dir, objs)
	var refused []string
	for _, p := range problems {
		refused = append(refused, p.Object.Kind+" "+p.Object.Namespace+"/"+p.Object.Name)
	}
	require.ElementsMatch(t, []string{"Ingress team-b/squat", "HTTPRoute team-b/squat-route"}, refused)
}
