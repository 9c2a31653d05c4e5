package translator

import (
	"fmt"
	"slices"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"

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

// TestEntityTagsAreTagsFor: the tags entityTags builds are kongstate.TagsFor's, user tags Kong
// would refuse left out and reported, for namespaced, cluster-scoped and core objects, with
// and without a UID.
func TestEntityTagsAreTagsFor(t *testing.T) {
	objs := []struct {
		obj client.Object
		gvk schema.GroupVersionKind
	}{
		{&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ing", UID: "u-1",
			Annotations: map[string]string{kongstate.UserTagsAnnotation: "team-a, cost,team-a"}}}, gvkIngress},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}}, gvkService},
		{&kongv1.KongClusterPlugin{ObjectMeta: metav1.ObjectMeta{Name: "global", UID: "u-2",
			Annotations: map[string]string{kongstate.UserTagsAnnotation: "ok,bad/tag"}}}, gvkKongClusterPlugin},
	}
	// A TCPRoute the store read at v1alpha2 (converted to v1, the version read in its TypeMeta)
	// is tagged k8s-version:v1alpha2, as KIC tags it.
	alpha := &gatewayv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tcp", UID: "u-3"}}
	alpha.SetGroupVersionKind(gatewayv1.SchemeGroupVersion.WithKind("TCPRoute").GroupKind().WithVersion("v1alpha2"))
	objs = append(objs, struct {
		obj client.Object
		gvk schema.GroupVersionKind
	}{alpha, gatewayv1.SchemeGroupVersion.WithKind("TCPRoute")})
	require.Contains(t, kongstate.TagsFor(alpha, gatewayv1.SchemeGroupVersion.WithKind("TCPRoute")), "k8s-version:v1alpha2")
	b := newBuilder(&store.Snapshot{}, Options{}, nil)
	for _, o := range objs {
		want := kongstate.TagsFor(o.obj, o.gvk)
		want = slices.DeleteFunc(want, func(t string) bool { return checkTag(t) != "" })
		got := b.entityTags(o.obj, o.gvk)
		require.Equal(t, want, derefAll(got), "%T", o.obj)
		require.Equal(t, len(got), cap(got), "an append copies the tags")
		require.Equal(t, fmt.Sprint(got), fmt.Sprint(b.entityTags(o.obj, o.gvk)), "one slice per object")
	}
	require.Len(t, b.problems, 1, "the refused user tag is reported")
}

func derefAll(ps []*string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}
