package translator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/translator/benchdata"
)

// The entities of one object share its tags, and tags that repeat across objects share their
// strings (issue #13, memory); no append to one entity's tags can reach another's.
func TestEntitiesShareTheirObjectsTags(t *testing.T) {
	state := Build(benchdata.Snapshot(2), Options{}).State
	require.Len(t, state.Services, 2)
	require.Len(t, state.Upstreams, 2)
	a, b := state.Services[0], state.Services[1]
	require.Len(t, a.Routes, 1)
	require.Len(t, b.Routes, 1)

	upstreamOf := map[string][]*string{}
	for _, u := range state.Upstreams {
		upstreamOf[*u.Name] = u.Tags
	}
	for _, svc := range state.Services {
		require.NotEmpty(t, svc.Tags)
		require.Same(t, &svc.Tags[0], &upstreamOf[*svc.Host][0], "the Kong service and its upstream share the Service's tags")
		require.Equal(t, len(svc.Tags), cap(svc.Tags), "an append copies the tags")
		require.Equal(t, len(svc.Routes[0].Tags), cap(svc.Routes[0].Tags), "an append copies the tags")
	}
	// Name and UID are each object's own; kind, group and version (and a namespace, when both
	// are in the same) are one string.
	ra, rb := a.Routes[0].Tags, b.Routes[0].Tags
	require.Len(t, ra, 6)
	require.Len(t, rb, 6)
	for _, i := range []int{2, 4, 5} {
		require.Same(t, ra[i], rb[i], "tag %s is shared", *ra[i])
	}
}
