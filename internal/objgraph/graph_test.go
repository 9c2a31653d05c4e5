package objgraph

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
)

// A graph node keeps what Key keeps of a reference: the same key for the same object,
// whatever its version and UID.
func TestNodeKeepsWhatKeyKeeps(t *testing.T) {
	for _, r := range []kongstate.ObjectRef{
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "ns", Name: "a", UID: "u1"},
		{Kind: "Service", Namespace: "ns", Name: "a"},
		{Group: "networking.k8s.io", Kind: "IngressClass", Name: "kong"},
	} {
		require.Equal(t, Key(r), NodeOf(r).Ref())
		require.Equal(t, NodeOf(Key(r)), NodeOf(r))
	}
	require.NotEqual(t, NodeOf(kongstate.ObjectRef{Kind: "Service", Namespace: "ns", Name: "a"}),
		NodeOf(kongstate.ObjectRef{Group: "x.io", Kind: "Service", Namespace: "ns", Name: "a"}), "the group tells nodes apart")
}

// A value two objects share connects them both ways for Dependents (a change of either
// reaches the other), but Broken does not cross it: what refers to a broken object goes with
// it, what only shares a value with it stays.
func TestBrokenDoesNotCrossSharedValues(t *testing.T) {
	ing := func(name string) kongstate.ObjectRef {
		return kongstate.ObjectRef{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "ns", Name: name}
	}
	plugin := kongstate.ObjectRef{Group: "configuration.konghq.com", Kind: "KongPlugin", Namespace: "ns", Name: "p"}
	g := New()
	g.Refer(ing("a"), plugin)
	for _, i := range []kongstate.ObjectRef{ing("a"), ing("b")} {
		g.Refer(i, SharedValue("route x"))
		g.Refer(SharedValue("route x"), i)
	}
	require.Equal(t, []kongstate.ObjectRef{ing("a"), ing("b"), plugin, SharedValue("route x")}, g.Dependents(plugin))
	require.Equal(t, []kongstate.ObjectRef{ing("a"), plugin}, g.Broken(plugin))
	require.True(t, NodeOf(SharedValue("route x")).Shared())
	require.False(t, NodeOf(plugin).Shared())
}
