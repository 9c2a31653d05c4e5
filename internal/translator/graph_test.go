package translator

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

func buildCase(t *testing.T, name string) Result {
	t.Helper()
	objs, err := manifest.Load(filepath.Join("testdata", name, "in.yaml"))
	require.NoError(t, err)
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	return Build(snap, Options{})
}

// The graph records every reference translation followed, so that "who depends on whom"
// has one answer: which objects a change can affect, what goes when an object is refused.
func TestGraphRecordsReferences(t *testing.T) {
	g := buildCase(t, "consumers").Graph
	alice := ref(gvkKongConsumer, "default", "alice")
	require.Equal(t, []kongstate.ObjectRef{
		Node(ref(gvkKongConsumerGroup, "default", "gold")),
		Node(ref(gvkKongPlugin, "default", "headers")),
		Node(ref(gvkKongPlugin, "default", "limit")),
		Node(ref(gvkSecret, "default", "alice-acl")),
		Node(ref(gvkSecret, "default", "alice-basic")),
		Node(ref(gvkSecret, "default", "alice-hmac")),
		Node(ref(gvkSecret, "default", "alice-jwt")),
		Node(ref(gvkSecret, "default", "alice-key")),
		Node(ref(gvkSecret, "default", "alice-oauth")),
	}, g.References(alice))

	// The rate-limiting plugin is used by an Ingress and a consumer; what depends on it is
	// both of them (and the plugin itself), not the Service behind the Ingress.
	limit := ref(gvkKongPlugin, "default", "limit")
	require.Equal(t, []kongstate.ObjectRef{
		Node(ref(gvkIngress, "default", "api")),
		Node(alice),
		Node(limit),
	}, g.Dependents(limit))
	require.Contains(t, g.References(ref(gvkIngress, "default", "api")), Node(ref(gvkService, "default", "api")))
	require.Contains(t, g.References(ref(gvkIngress, "default", "api")), Node(ref(gvkIngressClass, "", "kong")))

	// A missing Secret is a node too: creating it changes the translation.
	inv := buildCase(t, "consumers-invalid").Graph
	require.Equal(t, []kongstate.ObjectRef{Node(ref(gvkKongConsumer, "default", "erin")), Node(ref(gvkSecret, "default", "missing"))},
		inv.Dependents(ref(gvkSecret, "default", "missing")))

	// A granted cross-namespace reference records the grant that allowed it.
	rp := buildCase(t, "remote-plugins").Graph
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "a")), Node(ref(gvkReferenceGrant, "shared", "team-a-plugins")))
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "a")), Node(ref(gvkKongPlugin, "shared", "auth")))
	// One that no grant allows is an edge too: a grant or the plugin coming changes the
	// translation. Its Ingress is left out for it (kong_plugins_failclosed.go), and keeps its edges.
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "c")), Node(ref(gvkKongPlugin, "shared", "other")))
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "c")), Node(ref(gvkService, "team-a", "a")))
	require.Contains(t, rp.References(ref(gvkIngress, "team-b", "b")), Node(ref(gvkKongPlugin, "shared", "auth")))

	// Upstream policies and KongIngresses hang off their Service.
	up := buildCase(t, "upstream-policy").Graph
	require.Equal(t, []kongstate.ObjectRef{
		Node(ref(gvkIngress, "default", "app")),
		Node(ref(gvkKongUpstreamPolicy, "default", "sticky-ish")),
		Node(ref(gvkService, "default", "web")),
	}, up.Dependents(ref(gvkKongUpstreamPolicy, "default", "sticky-ish")))
}

// A graph node keeps what Node keeps of a reference: the same key for the same object,
// whatever its version and UID.
func TestNodeKeepsWhatNodeKeeps(t *testing.T) {
	for _, r := range []kongstate.ObjectRef{
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "ns", Name: "a", UID: "u1"},
		{Kind: "Service", Namespace: "ns", Name: "a"},
		{Group: "networking.k8s.io", Kind: "IngressClass", Name: "kong"},
	} {
		require.Equal(t, Node(r), nodeOf(r).ref())
		require.Equal(t, nodeOf(Node(r)), nodeOf(r))
	}
	require.NotEqual(t, nodeOf(kongstate.ObjectRef{Kind: "Service", Namespace: "ns", Name: "a"}),
		nodeOf(kongstate.ObjectRef{Group: "x.io", Kind: "Service", Namespace: "ns", Name: "a"}), "the group tells nodes apart")
}

// Two Ingresses with a default backend share the cluster's one default backend: the newer
// one's is ignored while the older one has it. A change of either reaches both (Dependents),
// but the older one refused does not take the newer one with it (Broken): left out, it would
// leave the default backend to the newer one, as in KIC.
func TestSharedValueReachesButDoesNotBreak(t *testing.T) {
	g := buildCase(t, "default-backend").Graph
	older, newer := ref(gvkIngress, "z", "older"), ref(gvkIngress, "a", "newer")
	require.Equal(t, []kongstate.ObjectRef{
		Node(newer), Node(older), SharedValue("the default backend"),
	}, g.Dependents(older))
	require.Equal(t, []kongstate.ObjectRef{Node(older)}, g.Broken(older))
	require.Equal(t, []kongstate.ObjectRef{Node(newer)}, g.Broken(newer))
}
