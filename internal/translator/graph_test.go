package translator

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/objgraph"
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
		objgraph.Key(ref(gvkKongConsumerGroup, "default", "gold")),
		objgraph.Key(ref(gvkKongPlugin, "default", "headers")),
		objgraph.Key(ref(gvkKongPlugin, "default", "limit")),
		objgraph.Key(ref(gvkSecret, "default", "alice-acl")),
		objgraph.Key(ref(gvkSecret, "default", "alice-basic")),
		objgraph.Key(ref(gvkSecret, "default", "alice-hmac")),
		objgraph.Key(ref(gvkSecret, "default", "alice-jwt")),
		objgraph.Key(ref(gvkSecret, "default", "alice-key")),
		objgraph.Key(ref(gvkSecret, "default", "alice-oauth")),
	}, g.References(alice))

	// The rate-limiting plugin is used by an Ingress and a consumer; what depends on it is
	// both of them (and the plugin itself), not the Service behind the Ingress.
	limit := ref(gvkKongPlugin, "default", "limit")
	require.Equal(t, []kongstate.ObjectRef{
		objgraph.Key(ref(gvkIngress, "default", "api")),
		objgraph.Key(alice),
		objgraph.Key(limit),
	}, g.Dependents(limit))
	require.Contains(t, g.References(ref(gvkIngress, "default", "api")), objgraph.Key(ref(gvkService, "default", "api")))
	require.Contains(t, g.References(ref(gvkIngress, "default", "api")), objgraph.Key(ref(gvkIngressClass, "", "kong")))

	// A missing Secret is a node too: creating it changes the translation.
	inv := buildCase(t, "consumers-invalid").Graph
	require.Equal(t, []kongstate.ObjectRef{objgraph.Key(ref(gvkKongConsumer, "default", "erin")), objgraph.Key(ref(gvkSecret, "default", "missing"))},
		inv.Dependents(ref(gvkSecret, "default", "missing")))

	// A granted cross-namespace reference records the grant that allowed it.
	rp := buildCase(t, "remote-plugins").Graph
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "a")), objgraph.Key(ref(gvkReferenceGrant, "shared", "team-a-plugins")))
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "a")), objgraph.Key(ref(gvkKongPlugin, "shared", "auth")))
	// One that no grant allows is an edge too: a grant or the plugin coming changes the
	// translation. Its Ingress is left out for it (kong_plugins_failclosed.go), and keeps its edges.
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "c")), objgraph.Key(ref(gvkKongPlugin, "shared", "other")))
	require.Contains(t, rp.References(ref(gvkIngress, "team-a", "c")), objgraph.Key(ref(gvkService, "team-a", "a")))
	require.Contains(t, rp.References(ref(gvkIngress, "team-b", "b")), objgraph.Key(ref(gvkKongPlugin, "shared", "auth")))

	// Upstream policies and KongIngresses hang off their Service.
	up := buildCase(t, "upstream-policy").Graph
	require.Equal(t, []kongstate.ObjectRef{
		objgraph.Key(ref(gvkIngress, "default", "app")),
		objgraph.Key(ref(gvkKongUpstreamPolicy, "default", "sticky-ish")),
		objgraph.Key(ref(gvkService, "default", "web")),
	}, up.Dependents(ref(gvkKongUpstreamPolicy, "default", "sticky-ish")))
}

// Two Ingresses with a default backend share the cluster's one default backend: the newer
// one's is ignored while the older one has it. A change of either reaches both (Dependents),
// but the older one refused does not take the newer one with it (Broken): left out, it would
// leave the default backend to the newer one, as in KIC.
func TestSharedValueReachesButDoesNotBreak(t *testing.T) {
	g := buildCase(t, "default-backend").Graph
	older, newer := ref(gvkIngress, "z", "older"), ref(gvkIngress, "a", "newer")
	require.Equal(t, []kongstate.ObjectRef{
		objgraph.Key(newer), objgraph.Key(older), objgraph.SharedValue("the default backend"),
	}, g.Dependents(older))
	require.Equal(t, []kongstate.ObjectRef{objgraph.Key(older)}, g.Broken(older))
	require.Equal(t, []kongstate.ObjectRef{objgraph.Key(newer)}, g.Broken(newer))
}
