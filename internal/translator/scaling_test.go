package translator

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// shardApp is one team's Ingress with its Service and EndpointSlice, in class.
func shardApp(ns, name, class string) []client.Object {
	prefix := netv1.PathTypePrefix
	port := int32(8080)
	ready := true
	return []client.Object{
		&netv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-ing-" + ns + "-" + name)},
			Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{
				Host: name + "." + ns + ".example.com",
				IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix,
					Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: 80}}},
				}}}},
			}}},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-svc-" + ns + "-" + name)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
	}
}

// docs/scaling.md's worked example: four teams' namespaces, two ingress classes (public and
// internal), and a body limit that one controller's configuration of everything is over.
// Sharded as the page says, by class (one controller and one Kong Deployment per class) and
// the public class again by namespace (--watch-namespace, two controllers, each with its own
// Kong Deployment), every Ingress is served by exactly one shard, each shard's entities are
// those the unsharded configuration has for its Ingresses (same names, same IDs, so a
// database-mode Kong KIC or one controller wrote is adopted as it is), and each shard's DB-less
// body fits where the whole one does not.
func TestShardingWorkedExample(t *testing.T) {
	teams := []string{"team-a", "team-b", "team-c", "team-d"}
	const perTeam = 30
	var objs []client.Object
	for _, class := range []string{"kong-public", "kong-internal"} {
		objs = append(objs, &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec: netv1.IngressClassSpec{Controller: "ingress-controllers.konghq.com/kong"}})
	}
	for _, ns := range teams {
		for i := range perTeam {
			class := "kong-public"
			if i%3 == 2 { // a third of each team's Ingresses are internal
				class = "kong-internal"
			}
			objs = append(objs, shardApp(ns, fmt.Sprintf("app-%02d", i), class)...)
		}
	}

	type shard struct {
		name       string
		class      string
		namespaces []string
	}
	// What one controller per class would hold: the reference.
	whole := map[string]shard{
		"kong-public":   {"public (unsharded)", "kong-public", nil},
		"kong-internal": {"internal", "kong-internal", nil},
	}
	shards := []shard{
		{"public-1", "kong-public", []string{"team-a", "team-b"}},
		{"public-2", "kong-public", []string{"team-c", "team-d"}},
		whole["kong-internal"],
	}
	render := func(s shard) (routes map[string]string, body int) {
		st, err := store.NewForObjects(objs, store.Options{IngressClass: s.class, Namespaces: s.namespaces})
		require.NoError(t, err)
		snap, err := st.Snapshot(t.Context())
		require.NoError(t, err)
		res := Build(snap, Options{})
		require.Empty(t, res.Problems, s.name)
		b, err := (&kongstate.Renderer{}).QuotedDeclarativeConfig(res.State, `{"config":"`, `"}`)
		require.NoError(t, err)
		routes = map[string]string{}
		for _, svc := range res.State.Services {
			for _, r := range svc.Routes {
				routes[*r.Name] = *r.ID + " " + *svc.ID
			}
		}
		return routes, b.Len()
	}

	publicRoutes, publicBody := render(whole["kong-public"])
	internalRoutes, _ := render(whole["kong-internal"])
	require.Len(t, publicRoutes, len(teams)*perTeam*2/3)
	require.Len(t, internalRoutes, len(teams)*perTeam/3)
	// The limit the worked example assumes: the public class's body is over it.
	limit := publicBody * 6 / 10

	servedBy := map[string][]string{}
	for _, s := range shards {
		routes, body := render(s)
		assert.LessOrEqual(t, body, limit, "%s: %d bytes", s.name, body)
		want := publicRoutes
		if s.class == "kong-internal" {
			want = internalRoutes
		}
		for name, ids := range routes {
			servedBy[name] = append(servedBy[name], s.name)
			assert.Equal(t, want[name], ids, "%s: route %s as one controller of its class names it", s.name, name)
		}
	}
	assert.Greater(t, publicBody, limit, "one controller of the public class is over the limit")
	var all []string
	for name := range publicRoutes {
		all = append(all, name)
	}
	for name := range internalRoutes {
		all = append(all, name)
	}
	sort.Strings(all)
	require.Len(t, servedBy, len(all), "no route lost, none made up")
	for _, name := range all {
		assert.Len(t, servedBy[name], 1, "route %s served by %v", name, servedBy[name])
	}
}
