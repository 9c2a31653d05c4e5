package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

func policyService(name, policy string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if policy != "" {
		svc.Annotations = map[string]string{kongv1beta1.KongUpstreamPolicyAnnotationKey: policy}
	}
	return svc
}

func upstreamPolicy(name string) *kongv1beta1.KongUpstreamPolicy {
	return &kongv1beta1.KongUpstreamPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 2},
		Spec: kongv1beta1.KongUpstreamPolicySpec{Algorithm: ptr.To("least-connections")}}
}

// ingressTo is an Ingress of our class with one path per backend: a Service name, or
// "facade:<name>" for a KongServiceFacade.
func ingressTo(name string, backends ...string) *netv1.Ingress {
	class := "kong"
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: netv1.IngressSpec{IngressClassName: &class}}
	prefix := netv1.PathTypePrefix
	rule := netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{}}
	for _, be := range backends {
		path := netv1.HTTPIngressPath{Path: "/" + be, PathType: &prefix}
		if len(be) > 7 && be[:7] == "facade:" {
			path.Backend.Resource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(incubatorv1alpha1.GroupVersion.Group), Kind: "KongServiceFacade", Name: be[7:]}
		} else {
			path.Backend.Service = &netv1.IngressServiceBackend{Name: be, Port: netv1.ServiceBackendPort{Number: 80}}
		}
		rule.HTTP.Paths = append(rule.HTTP.Paths, path)
	}
	ing.Spec.Rules = []netv1.IngressRule{{Host: name + ".example.com", IngressRuleValue: rule}}
	return ing
}

// translated is what the translator makes of snap, as the updater keeps it.
func translated(snap *store.Snapshot) *policyTranslation {
	snap.IngressClass = "kong"
	r := translator.Build(snap, translator.Options{KongServiceFacade: true})
	return &policyTranslation{graph: r.Graph, problems: r.Problems, attachment: r.Gateway}
}

type ancestorWant struct {
	group, kind, name            string
	accepted, acceptedReason     metav1.ConditionStatus
	programmed, programmedReason metav1.ConditionStatus
}

func TestUpstreamPolicyAncestors(t *testing.T) {
	served := &store.Snapshot{
		Ingresses: []*netv1.Ingress{ingressTo("web", "a", "b", "plain", "facade:f")},
		Services:  []*corev1.Service{policyService("a", "p"), policyService("b", "p"), policyService("plain", ""), policyService("unused", "p"), policyService("other", "q")},
		KongServiceFacades: []*incubatorv1alpha1.KongServiceFacade{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "f", Annotations: map[string]string{kongv1beta1.KongUpstreamPolicyAnnotationKey: "p"}},
			Spec:       incubatorv1alpha1.KongServiceFacadeSpec{Backend: incubatorv1alpha1.KongServiceFacadeBackend{Name: "plain", Port: 80}},
		}},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{upstreamPolicy("p"), upstreamPolicy("q")},
	}
	latest := translated(served)
	invalidPolicy := upstreamPolicy("p")
	invalidPolicy.Spec.HashOn = &kongv1beta1.KongUpstreamHash{Header: ptr.To("")}
	invalid := translated(&store.Snapshot{Ingresses: served.Ingresses, Services: served.Services, KongServiceFacades: served.KongServiceFacades,
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{invalidPolicy}})
	// b is no longer served when the earlier translation was taken.
	earlier := translated(&store.Snapshot{Ingresses: []*netv1.Ingress{ingressTo("web", "a")}, Services: served.Services,
		KongUpstreamPolicies: served.KongUpstreamPolicies})

	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	svc := func(name string, acc metav1.ConditionStatus, accReason string, prog metav1.ConditionStatus, progReason string) ancestorWant {
		return ancestorWant{"core", "Service", name, acc, metav1.ConditionStatus(accReason), prog, metav1.ConditionStatus(progReason)}
	}
	facade := func(acc metav1.ConditionStatus, accReason string, prog metav1.ConditionStatus, progReason string) ancestorWant {
		return ancestorWant{incubatorv1alpha1.GroupVersion.Group, "KongServiceFacade", "f", acc, metav1.ConditionStatus(accReason), prog, metav1.ConditionStatus(progReason)}
	}
	for _, tc := range []struct {
		name   string
		policy string
		in     upstreamPolicyInputs
		want   []ancestorWant
	}{
		{"attached and programmed: the Services and facade served with it, not an annotated Service nothing serves", "p",
			upstreamPolicyInputs{latest: latest, programmed: latest},
			[]ancestorWant{svc("a", T, "Accepted", T, "Programmed"), svc("b", T, "Accepted", T, "Programmed"), facade(T, "Accepted", T, "Programmed")}},
		{"no sync reached a gateway yet: Programmed is Pending", "p",
			upstreamPolicyInputs{latest: latest},
			[]ancestorWant{svc("a", T, "Accepted", F, "Pending"), svc("b", T, "Accepted", F, "Pending"), facade(T, "Accepted", F, "Pending")}},
		{"the translation a gateway took had only a", "p",
			upstreamPolicyInputs{latest: latest, programmed: earlier},
			[]ancestorWant{svc("a", T, "Accepted", T, "Programmed"), svc("b", T, "Accepted", F, "Pending"), facade(T, "Accepted", F, "Pending")}},
		{"a gateway refused b's entities", "p",
			upstreamPolicyInputs{latest: latest, programmed: latest, refused: map[kongstate.ObjectRef]bool{graphNode(kongstate.ObjectRef{Group: "core", Kind: "Service", Namespace: "default", Name: "b"}): true}},
			[]ancestorWant{svc("a", T, "Accepted", T, "Programmed"), svc("b", T, "Accepted", F, "Invalid"), facade(T, "Accepted", T, "Programmed")}},
		{"conflicted: b, and a Service only a route's rule shares with others", "p",
			upstreamPolicyInputs{latest: latest, programmed: latest, conflicts: map[string]map[string]string{"default/p": {"default/b": "why", "default/shared": "why"}}},
			[]ancestorWant{svc("a", T, "Accepted", T, "Programmed"), svc("b", F, "Conflicted", F, "Pending"), svc("shared", F, "Conflicted", F, "Pending"), facade(T, "Accepted", T, "Programmed")}},
		{"invalid: translation refused the policy", "p",
			upstreamPolicyInputs{latest: invalid, programmed: invalid},
			[]ancestorWant{svc("a", F, "Invalid", F, "Invalid"), svc("b", F, "Invalid", F, "Invalid"), facade(F, "Invalid", F, "Invalid")}},
		{"no ancestors: only an unserved Service names it", "q",
			upstreamPolicyInputs{latest: latest, programmed: latest}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.ancestors(upstreamPolicy(tc.policy))
			var gotWant []ancestorWant
			for _, e := range got {
				require.Len(t, e.conditions, 2)
				a, p := e.conditions[0], e.conditions[1]
				require.Equal(t, "Accepted", a.Type)
				require.Equal(t, "Programmed", p.Type)
				require.Equal(t, "default", string(*e.ref.Namespace))
				gotWant = append(gotWant, ancestorWant{string(*e.ref.Group), string(*e.ref.Kind), string(e.ref.Name),
					a.Status, metav1.ConditionStatus(a.Reason), p.Status, metav1.ConditionStatus(p.Reason)})
				if a.Status == F {
					require.NotEmpty(t, a.Message, "a refusal says why")
				}
			}
			require.Equal(t, tc.want, gotWant)
		})
	}
}

// The conflicts are the translation's: a Service with a policy is conflicted where translation
// left the policy out of an upstream it shares with a resolved Service of another policy, or
// none; a rule whose other backend does not resolve takes the policy (KIC's status, counting
// every backendRef, says Conflicted there), and policies are compared by name, as KIC's
// translation does, so Services of two namespaces naming "p" share one.
func TestConflictedServices(t *testing.T) {
	rule := func(backends ...string) gatewayv1.HTTPRouteRule {
		r := gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
			Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/" + strings.Join(backends, "-"))}}}}
		for _, b := range backends {
			ref := gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(b), Port: ptr.To(gatewayv1.PortNumber(80))}
			if ns, name, ok := strings.Cut(b, "/"); ok {
				ref.Namespace, ref.Name = ptr.To(gatewayv1.Namespace(ns)), gatewayv1.ObjectName(name)
			}
			r.BackendRefs = append(r.BackendRefs, gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: ref}})
		}
		return r
	}
	served := testRoute("default", "served", nil, parentRef("kong", ""))
	served.Spec.Rules = []gatewayv1.HTTPRouteRule{rule("a", "b"), rule("c", "none"), rule("d", "other"), rule("e", "missing"), rule("g", "team/t")}
	notOurs := testRoute("default", "elsewhere", nil, parentRef("nginx", ""))
	notOurs.Spec.Rules = []gatewayv1.HTTPRouteRule{rule("f", "none")}
	teamService := policyService("t", "p")
	teamService.Namespace = "team"
	snap := &store.Snapshot{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}},
		Gateways:       []*gatewayv1.Gateway{testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))},
		HTTPRoutes:     []*gatewayv1.HTTPRoute{served, notOurs},
		ReferenceGrants: []*gatewayv1beta1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "from-default"},
			Spec: gatewayv1beta1.ReferenceGrantSpec{
				From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "HTTPRoute", Namespace: "default"}},
				To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Service"}}}}},
		Services: []*corev1.Service{policyService("a", "p"), policyService("b", "p"), policyService("c", "p"), policyService("none", ""),
			policyService("d", "p"), policyService("other", "q"), policyService("e", "p"), policyService("f", "p"), policyService("g", "p"), teamService},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{upstreamPolicy("p"), upstreamPolicy("q")},
	}
	tr := translated(snap)

	got := conflictedServices(tr.problems, snap.Services)
	require.Len(t, got, 2, "%v", tr.problems)
	require.ElementsMatch(t, []string{"default/c", "default/d"}, keysOf(got["default/p"]),
		"a and b share p; e's other backend does not resolve; g and team/t both name p; f is in a route we do not serve")
	require.Contains(t, got["default/p"]["default/c"], "inconsistent KongUpstreamPolicy configuration for services default/c, default/none")
	require.ElementsMatch(t, []string{"default/other"}, keysOf(got["default/q"]))

	entries := upstreamPolicyInputs{latest: tr, programmed: tr, conflicts: got}.ancestors(upstreamPolicy("p"))
	accepted := map[string]string{}
	for _, e := range entries {
		accepted[string(e.ref.Name)] = string(e.conditions[0].Status) + "/" + e.conditions[0].Reason
	}
	require.Equal(t, map[string]string{"a": "True/Accepted", "b": "True/Accepted", "c": "False/Conflicted", "d": "False/Conflicted",
		"e": "True/Accepted", "g": "True/Accepted"}, accepted)

	require.Empty(t, conflictedServices(translated(&store.Snapshot{Services: snap.Services, KongUpstreamPolicies: snap.KongUpstreamPolicies}).problems, snap.Services),
		"no Gateway API: no conflict")
}

// The updater reads the conflicted Services' policies from the cache: a Service the
// translation reported in conflict is written Conflicted.
func TestUpstreamPolicyUpdaterWritesConflicts(t *testing.T) {
	ctx := context.Background()
	route := testRoute("default", "web", nil, parentRef("kong", ""))
	route.Spec.Rules = []gatewayv1.HTTPRouteRule{{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{
			{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "c", Port: ptr.To(gatewayv1.PortNumber(80))}}},
			{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "none", Port: ptr.To(gatewayv1.PortNumber(80))}}}}}}
	snap := &store.Snapshot{
		GatewayClasses:       []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}},
		Gateways:             []*gatewayv1.Gateway{testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))},
		HTTPRoutes:           []*gatewayv1.HTTPRoute{route},
		Services:             []*corev1.Service{policyService("c", "p"), policyService("none", "")},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{upstreamPolicy("p")},
	}
	var writes atomic.Int32
	c := gatedWriterClient(gatedWriterCase{objs: []client.Object{snap.KongUpstreamPolicies[0], snap.Services[0], snap.Services[1]},
		status: []client.Object{&kongv1beta1.KongUpstreamPolicy{}}}, &writes, func(client.Object) {})
	u := NewUpstreamPolicyUpdater("", store.New(c, store.Options{Kinds: store.NewKindSet(store.KindKongUpstreamPolicy, store.KindService)}), c, c, logr.Discard())
	u.Report(ctx, round(translated(snap), true))
	require.NoError(t, u.Update(ctx))
	var got kongv1beta1.KongUpstreamPolicy
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p"}, &got))
	require.Len(t, got.Status.Ancestors, 1)
	require.Equal(t, "c", string(got.Status.Ancestors[0].AncestorRef.Name))
	require.Equal(t, "False/Conflicted", condition(got.Status.Ancestors[0].Conditions, "Accepted"))
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The updater writes our entries after a round, keeps another controller's, writes nothing
// when nothing changed (its own write does not make it write again), and removes our entry
// once the policy no longer applies.
func TestUpstreamPolicyUpdaterWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	theirs := gatewayv1.PolicyAncestorStatus{AncestorRef: ancestorRef("core", "Service", "default", "a"), ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.NewTime(t0)}}}
	p := upstreamPolicy("p")
	p.Status.Ancestors = []gatewayv1.PolicyAncestorStatus{theirs}
	snap := &store.Snapshot{Ingresses: []*netv1.Ingress{ingressTo("web", "a")}, Services: []*corev1.Service{policyService("a", "p")},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{p}}
	var writes atomic.Int32
	c := gatedWriterClient(gatedWriterCase{objs: []client.Object{p, snap.Services[0]}, status: []client.Object{&kongv1beta1.KongUpstreamPolicy{}}},
		&writes, func(client.Object) {})
	u := NewUpstreamPolicyUpdater("", store.New(c, store.Options{Kinds: store.NewKindSet(store.KindKongUpstreamPolicy)}), c, c, logr.Discard())
	u.now = func() time.Time { return t0 }

	require.NoError(t, u.Update(ctx), "nothing translated yet")
	require.Zero(t, writes.Load())
	u.Report(ctx, round(translated(snap), true))
	require.NoError(t, u.Update(ctx))
	require.Equal(t, int32(1), writes.Load())
	var got kongv1beta1.KongUpstreamPolicy
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p"}, &got))
	require.Len(t, got.Status.Ancestors, 2)
	require.True(t, equality.Semantic.DeepEqual(theirs, got.Status.Ancestors[0]), "another controller's entry stays, first")
	ourEntry := got.Status.Ancestors[1]
	require.Equal(t, ours, string(ourEntry.ControllerName))
	require.Equal(t, "core/Service/default/a", ancestorKey(ourEntry.AncestorRef))
	for _, cond := range ourEntry.Conditions {
		require.Equal(t, metav1.ConditionTrue, cond.Status, cond.Type)
		require.Equal(t, int64(2), cond.ObservedGeneration)
	}

	u.now = func() time.Time { return t0.Add(time.Hour) }
	u.Report(ctx, round(translated(snap), true))
	require.NoError(t, u.Update(ctx))
	require.Equal(t, int32(1), writes.Load(), "the same outcome is not written again")

	snap.Ingresses = nil // nothing serves a any more
	u.Report(ctx, round(translated(snap), true))
	require.NoError(t, u.Update(ctx))
	require.Equal(t, int32(2), writes.Load())
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p"}, &got))
	require.True(t, equality.Semantic.DeepEqual([]gatewayv1.PolicyAncestorStatus{theirs}, got.Status.Ancestors), "%v", got.Status.Ancestors)
}

// round is the report of a round that translated t and, with reached, whose sync a gateway took.
func round(t *policyTranslation, reached bool) dataplane.Round {
	r := dataplane.Round{Graph: t.graph, Problems: t.problems, GatewayAPI: t.attachment, Translated: true}
	if reached {
		r.Gateways = []dataplane.GatewayResult{{URL: "http://kong"}}
	}
	return r
}

// A gateway that refused one Service and took the fallback configuration without it programmed
// the others: their entries are Programmed True, the refused Service's False/Invalid; a stale
// sync (of an older translation) programs nothing of the latest.
func TestUpstreamPolicyUpdaterFollowsAFallbackConfiguration(t *testing.T) {
	ctx := context.Background()
	snap := &store.Snapshot{Ingresses: []*netv1.Ingress{ingressTo("web", "a", "b")}, Services: []*corev1.Service{policyService("a", "p"), policyService("b", "p")},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{upstreamPolicy("p")}}
	b := kongstate.ObjectRef{Group: "core", Version: "v1", Kind: "Service", Namespace: "default", Name: "b"}
	var writes atomic.Int32
	c := gatedWriterClient(gatedWriterCase{objs: []client.Object{snap.KongUpstreamPolicies[0], snap.Services[0], snap.Services[1]},
		status: []client.Object{&kongv1beta1.KongUpstreamPolicy{}}}, &writes, func(client.Object) {})
	u := NewUpstreamPolicyUpdater("", store.New(c, store.Options{Kinds: store.NewKindSet(store.KindKongUpstreamPolicy)}), c, c, logr.Discard())
	programmed := func() map[string]string {
		require.NoError(t, u.Update(ctx))
		var got kongv1beta1.KongUpstreamPolicy
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p"}, &got))
		out := map[string]string{}
		for _, a := range got.Status.Ancestors {
			for _, cond := range a.Conditions {
				if cond.Type == "Programmed" {
					out[string(a.AncestorRef.Name)] = string(cond.Status) + "/" + cond.Reason
				}
			}
		}
		return out
	}

	r := round(translated(snap), false)
	r.Gateways = []dataplane.GatewayResult{{URL: "http://kong", Stale: true}}
	u.Report(ctx, r)
	require.Equal(t, map[string]string{"a": "False/Pending", "b": "False/Pending"}, programmed(), "a stale sync")

	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "http://kong",
		Err:      &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: b, Message: "no"}}},
		Fallback: &dataplane.FallbackResult{Broken: []kongstate.ObjectRef{b}, Excluded: []kongstate.ObjectRef{b}}}}})
	require.Equal(t, map[string]string{"a": "True/Programmed", "b": "False/Invalid"}, programmed())
}

// The entries observe the generation the verdict was computed from (the snapshot's), not a
// newer one the policy has when it is read again after a conflict.
func TestUpstreamPolicyObservedGenerationIsTheSnapshots(t *testing.T) {
	ctx := context.Background()
	p := upstreamPolicy("p") // generation 2
	snap := &store.Snapshot{Ingresses: []*netv1.Ingress{ingressTo("web", "a")}, Services: []*corev1.Service{policyService("a", "p")},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{p}}
	conflicts := 0
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(p.DeepCopy(), snap.Services[0].DeepCopy()).
		WithStatusSubresource(&kongv1beta1.KongUpstreamPolicy{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if up, ok := obj.(*kongv1beta1.KongUpstreamPolicy); ok && conflicts == 0 {
				// The spec changes just before our write lands.
				var cur kongv1beta1.KongUpstreamPolicy
				require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(up), &cur))
				cur.Generation = 3
				cur.Spec.Algorithm = ptr.To("round-robin")
				require.NoError(t, cl.Update(ctx, &cur))
				conflicts++
				return apierrors.NewConflict(schema.GroupResource{Group: kongv1beta1.SchemeGroupVersion.Group, Resource: "kongupstreampolicies"}, up.Name, fmt.Errorf("the object has been modified"))
			}
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	u := NewUpstreamPolicyUpdater("", store.New(c, store.Options{Kinds: store.NewKindSet(store.KindKongUpstreamPolicy)}), c, c, logr.Discard())
	u.Report(ctx, round(translated(snap), true))
	require.NoError(t, u.Update(ctx))
	require.Equal(t, 1, conflicts)
	var got kongv1beta1.KongUpstreamPolicy
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(p), &got))
	require.Equal(t, int64(3), got.Generation)
	require.Len(t, got.Status.Ancestors, 1)
	for _, cond := range got.Status.Ancestors[0].Conditions {
		require.Equal(t, int64(2), cond.ObservedGeneration, cond.Type)
	}
}

// One change of a policy's ancestors is one status write when its sync follows promptly: the
// update the round's translation asks for waits for the sync and writes Accepted and
// Programmed at once. A sync that fails leaves the new entry Accepted and Pending, written
// once; a sync slower than the gate's MaxWait has it written Pending, then Programmed.
func TestUpstreamPolicyWrittenOncePerChange(t *testing.T) {
	ctx := context.Background()
	snap := &store.Snapshot{Ingresses: []*netv1.Ingress{ingressTo("web", "a")}, Services: []*corev1.Service{policyService("a", "p"), policyService("b", "p")},
		KongUpstreamPolicies: []*kongv1beta1.KongUpstreamPolicy{upstreamPolicy("p")}}
	var writes atomic.Int32
	c := gatedWriterClient(gatedWriterCase{objs: []client.Object{snap.KongUpstreamPolicies[0], snap.Services[0], snap.Services[1]},
		status: []client.Object{&kongv1beta1.KongUpstreamPolicy{}}}, &writes, func(client.Object) {})
	u := NewUpstreamPolicyUpdater("", store.New(c, store.Options{Kinds: store.NewKindSet(store.KindKongUpstreamPolicy)}), c, c, logr.Discard())
	gate := dataplane.NewSyncGate()
	clk := testingclock.NewFakeClock(time.Now())
	gate.Clock = clk
	u.WaitForSyncs(gate)
	programmed := func() map[string]string {
		var got kongv1beta1.KongUpstreamPolicy
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p"}, &got))
		out := map[string]string{}
		for _, a := range got.Status.Ancestors {
			for _, cond := range a.Conditions {
				out[string(a.AncestorRef.Name)+" "+cond.Type] = string(cond.Status) + "/" + cond.Reason
			}
		}
		return out
	}
	took := dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "http://kong"}}}
	// change is what the loop does for one change (the round holds the gate until its sync
	// was reported) and the updates the runner runs for it: the one the translation asked
	// for, waiting at the gate, and the one the sync's report asked for.
	change := func(sync dataplane.Round, slow bool) {
		release := gate.Hold()
		u.Report(ctx, round(translated(snap), false))
		done := passWaitingAtGate(t, gate, u.Update)
		if slow {
			clk.Step(gate.MaxWait)
			require.NoError(t, <-done)
		}
		u.Report(ctx, sync)
		release()
		if !slow {
			require.NoError(t, <-done)
		}
		require.NoError(t, u.Update(ctx))
	}

	change(took, false)
	require.Equal(t, int32(1), writes.Load(), "one change, one write")
	require.Equal(t, map[string]string{"a Accepted": "True/Accepted", "a Programmed": "True/Programmed"}, programmed())

	// b now uses the policy; the sync fails: b's entry is written once, Accepted and Pending.
	snap.Ingresses = []*netv1.Ingress{ingressTo("web", "a", "b")}
	change(dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "http://kong", Err: errors.New("connection refused")}}}, false)
	require.Equal(t, int32(2), writes.Load())
	require.Equal(t, map[string]string{"a Accepted": "True/Accepted", "a Programmed": "True/Programmed",
		"b Accepted": "True/Accepted", "b Programmed": "False/Pending"}, programmed())

	// The next sync takes it, slower than MaxWait: Pending is written first, then Programmed.
	snap.Ingresses = []*netv1.Ingress{ingressTo("web", "b")}
	change(took, true)
	require.Equal(t, int32(4), writes.Load(), "a slow sync: Pending, then Programmed")
	require.Equal(t, map[string]string{"b Accepted": "True/Accepted", "b Programmed": "True/Programmed"}, programmed())
}
