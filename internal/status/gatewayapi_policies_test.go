package status

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/testcert"
)

// Our ancestors entries follow the verdict and the Gateways; another controller's entries
// stay as they are, first; a condition whose status holds keeps its lastTransitionTime; at
// most 16 entries.
func TestPolicyAncestors(t *testing.T) {
	const us = "konghq.com/kic-gateway-controller"
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	accepted := gatewayapi.BackendTLSPolicyVerdict{
		Accepted:     metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		ResolvedRefs: metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
	}
	theirs := gatewayv1.PolicyAncestorStatus{AncestorRef: gatewayv1.ParentReference{Name: "kong"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Conflicted"}}}

	got := policyAncestors([]gatewayv1.PolicyAncestorStatus{theirs}, []namespacedName{{"ns", "b"}, {"ns", "a"}}, accepted, us, 2, t0)
	require.Len(t, got, 3)
	require.Equal(t, theirs, got[0])
	require.Equal(t, gatewayv1.ObjectName("a"), got[1].AncestorRef.Name, "sorted by name")
	require.Equal(t, "Gateway", string(*got[1].AncestorRef.Kind))
	require.Equal(t, gatewayv1.GroupName, string(*got[1].AncestorRef.Group))
	require.Equal(t, "ns", string(*got[1].AncestorRef.Namespace))
	require.Equal(t, us, string(got[1].ControllerName))
	c := meta.FindStatusCondition(got[1].Conditions, "Accepted")
	require.Equal(t, int64(2), c.ObservedGeneration)

	// The same verdict later: nothing changes (no write).
	again := policyAncestors(got, []namespacedName{{"ns", "a"}, {"ns", "b"}}, accepted, us, 2, t1)
	require.Equal(t, got, again)

	// Gateway b is no ancestor any more, and the policy is conflicted now.
	conflicted := accepted
	conflicted.Accepted = metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Conflicted"}
	got = policyAncestors(again, []namespacedName{{"ns", "a"}}, conflicted, us, 3, t1)
	require.Len(t, got, 2)
	require.Equal(t, theirs, got[0])
	c = meta.FindStatusCondition(got[1].Conditions, "Accepted")
	require.Equal(t, "False/Conflicted", string(c.Status)+"/"+c.Reason)
	require.Equal(t, t1.Unix(), c.LastTransitionTime.Unix())
	r := meta.FindStatusCondition(got[1].Conditions, "ResolvedRefs")
	require.Equal(t, t0.Unix(), r.LastTransitionTime.Unix(), "a status that holds keeps its transition time")
	require.Equal(t, int64(3), r.ObservedGeneration)

	// No ancestors: only theirs remains.
	require.Equal(t, []gatewayv1.PolicyAncestorStatus{theirs}, policyAncestors(got, nil, accepted, us, 3, t1))

	// At most 16 entries, theirs counted.
	var many []namespacedName
	for i := range 20 {
		many = append(many, namespacedName{"ns", fmt.Sprintf("g%02d", i)})
	}
	require.Len(t, policyAncestors([]gatewayv1.PolicyAncestorStatus{theirs}, many, accepted, us, 1, t0), 16)
}

// Another controller that keeps its entries after ours: our entries stay where they are, so
// neither controller rewrites the order every round; a new entry of ours goes last.
func TestPolicyAncestorsKeepOurEntriesInPlace(t *testing.T) {
	const us = "konghq.com/kic-gateway-controller"
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	accepted := gatewayapi.BackendTLSPolicyVerdict{
		Accepted:     metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		ResolvedRefs: metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
	}
	theirs := gatewayv1.PolicyAncestorStatus{AncestorRef: gatewayv1.ParentReference{Name: "kong"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Conflicted"}}}
	ours := policyAncestors(nil, []namespacedName{{"ns", "a"}}, accepted, us, 2, t0)
	have := append(ours, theirs)

	require.Equal(t, have, policyAncestors(have, []namespacedName{{"ns", "a"}}, accepted, us, 2, t1), "no write")

	got := policyAncestors(have, []namespacedName{{"ns", "a"}, {"ns", "b"}}, accepted, us, 2, t1)
	require.Len(t, got, 3)
	require.Equal(t, have[0], got[0])
	require.Equal(t, theirs, got[1])
	require.Equal(t, gatewayv1.ObjectName("b"), got[2].AncestorRef.Name, "a new entry of ours goes last")
}

// A policy whose target Service does not exist is Accepted False TargetNotFound (the spec's
// reason) on the Gateways of the routes that name the Service, although those routes cannot
// resolve it (KIC takes ancestors only from resolved routes and writes nothing); a policy
// whose Service exists and whose route resolves is Accepted.
func TestBackendTLSPolicyTargetNotFound(t *testing.T) {
	ctx := context.Background()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	backend := func(route *gatewayv1.HTTPRoute, svc string) *gatewayv1.HTTPRoute {
		route.Spec.Rules = []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc)}}}}}}
		return route
	}
	toMissing := backend(testRoute("default", "to-missing", nil, parentRef("kong", "")), "missing")
	toEcho := backend(testRoute("default", "to-echo", nil, parentRef("kong", "")), "echo")
	echo := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"}}
	policy := func(name, svc string) *gatewayv1.BackendTLSPolicy {
		return &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 4},
			Spec: gatewayv1.BackendTLSPolicySpec{
				TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{
					Group: "", Kind: "Service", Name: gatewayv1.ObjectName(svc)}}},
				Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "echo.example.com",
					WellKnownCACertificates: nil, CACertificateRefs: []gatewayv1.LocalObjectReference{{Group: "", Kind: "ConfigMap", Name: "ca"}}},
			}}
	}
	ca := caConfigMap(t)
	onMissing, onEcho := policy("on-missing", "missing"), policy("on-echo", "echo")
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, gw, toMissing, toEcho, echo, ca, onMissing, onEcho).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}, &gatewayv1.BackendTLSPolicy{}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.GatewayAlpha = true
	a := attach(gw, toMissing, toEcho)
	a.Route(gatewayapi.KindHTTPRoute, toMissing).AddRefProblem(gatewayv1.RouteReasonBackendNotFound, "Service default/missing not found")
	u.Report(ctx, dataplane.Round{GatewayAPI: a})
	require.NoError(t, u.Update(ctx))

	var got gatewayv1.BackendTLSPolicy
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(onMissing), &got))
	require.Len(t, got.Status.Ancestors, 1)
	require.Equal(t, "kong", string(got.Status.Ancestors[0].AncestorRef.Name))
	require.Equal(t, "False/TargetNotFound", condition(got.Status.Ancestors[0].Conditions, "Accepted"))
	require.Contains(t, meta.FindStatusCondition(got.Status.Ancestors[0].Conditions, "Accepted").Message, "default/missing")
	require.EqualValues(t, 4, got.Status.Ancestors[0].Conditions[0].ObservedGeneration)

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(onEcho), &got))
	require.Len(t, got.Status.Ancestors, 1)
	require.Equal(t, "True/Accepted", condition(got.Status.Ancestors[0].Conditions, "Accepted"))
}

// A BackendTLSPolicy whose status another controller writes between our read and our write
// (a conflict: the patch carries the resourceVersion) is read again and written in the same
// pass, with the other controller's entry kept, instead of staying stale until the next pass.
func TestBackendTLSPolicyStatusRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	f := newBackendTLSFixture(t)
	theirs := gatewayv1.PolicyAncestorStatus{
		AncestorRef:    gatewayv1.ParentReference{Name: "elsewhere"},
		ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
			LastTransitionTime: metav1.NewTime(time.Unix(1, 0))}},
	}
	conflicts := 0
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(f.objects()...).
		WithStatusSubresource(f.statusKinds()...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if bp, ok := obj.(*gatewayv1.BackendTLSPolicy); ok && conflicts == 0 {
				// Another controller writes its entry just before ours lands.
				var cur gatewayv1.BackendTLSPolicy
				require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(bp), &cur))
				cur.Status.Ancestors = append(cur.Status.Ancestors, theirs)
				require.NoError(t, cl.Status().Update(ctx, &cur))
				conflicts++
				return apierrors.NewConflict(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "backendtlspolicies"}, bp.Name, fmt.Errorf("the object has been modified"))
			}
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.GatewayAlpha = true
	u.Report(ctx, dataplane.Round{GatewayAPI: attach(f.gw, f.route)})
	require.NoError(t, u.Update(ctx), "a conflict is retried, not a failed pass")
	require.Equal(t, 1, conflicts)

	var got gatewayv1.BackendTLSPolicy
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(f.policy), &got))
	require.Len(t, got.Status.Ancestors, 2, "theirs and ours")
	require.Equal(t, "example.com/other", string(got.Status.Ancestors[0].ControllerName), "theirs stays, first")
	require.Equal(t, "kong", string(got.Status.Ancestors[1].AncestorRef.Name))
	require.Equal(t, "True/Accepted", condition(got.Status.Ancestors[1].Conditions, "Accepted"))
}

// A policy's CA ConfigMap cached without its data (named by the policy after it was cached) is
// judged by the sync loop's loaded copy, as translation judges it: a loaded copy without a
// certificate makes the policy NoValidCACertificate, where the cache's empty copy alone
// counts as existing.
func TestBackendTLSPolicyCAFromLoadedCopy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		payloads loadedCopies
		want     string
	}{
		{"loaded without a certificate", loadedCopies{"ca": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca"},
			Data: map[string]string{"ca.crt": "not a certificate"}}}, "False/NoValidCACertificate"},
		{"loaded with a certificate", loadedCopies{"ca": caConfigMap(t)}, "True/Accepted"},
		{"not loaded", nil, "True/Accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBackendTLSFixture(t)
			f.ca = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca",
				Annotations: map[string]string{store.PayloadNotCachedAnnotation: "true"}}}
			c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(f.objects()...).WithStatusSubresource(f.statusKinds()...).Build()
			u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
			u.GatewayAlpha = true
			if tc.payloads != nil {
				u.Payloads = tc.payloads
			}
			u.Report(ctx, dataplane.Round{GatewayAPI: attach(f.gw, f.route)})
			require.NoError(t, u.Update(ctx))
			var got gatewayv1.BackendTLSPolicy
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(f.policy), &got))
			require.Len(t, got.Status.Ancestors, 1)
			require.Equal(t, tc.want, condition(got.Status.Ancestors[0].Conditions, "Accepted"))
		})
	}
}

// backendTLSFixture is a Gateway of ours with an HTTPRoute to the Service echo, which a valid
// BackendTLSPolicy targets (its CA a labelled ConfigMap): the policy gets one ancestor entry.
type backendTLSFixture struct {
	class  *gatewayv1.GatewayClass
	gw     *gatewayv1.Gateway
	route  *gatewayv1.HTTPRoute
	echo   *corev1.Service
	ca     *corev1.ConfigMap
	policy *gatewayv1.BackendTLSPolicy
}

// caConfigMap is the CA ConfigMap default/ca, holding a certificate: a policy's reference
// resolves only to one that does (gatewayapi.CAObjects).
func caConfigMap(t testing.TB) *corev1.ConfigMap {
	cert, _ := testcert.SelfSigned(t, "ca")
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca", Labels: map[string]string{"konghq.com/ca-cert": "true"}},
		Data: map[string]string{"ca.crt": string(cert)}}
}

func newBackendTLSFixture(t testing.TB) backendTLSFixture {
	route := testRoute("default", "web", nil, parentRef("kong", ""))
	route.Spec.Rules = []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo"}}}}}}
	return backendTLSFixture{
		class: &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}},
		gw:    testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, "")),
		route: route,
		echo:  &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"}},
		ca:    caConfigMap(t),
		policy: &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tls", Generation: 1},
			Spec: gatewayv1.BackendTLSPolicySpec{
				TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{
					Kind: "Service", Name: "echo"}}},
				Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "echo.example.com",
					CACertificateRefs: []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}},
			}},
	}
}

func (f backendTLSFixture) objects() []client.Object {
	return []client.Object{f.class, f.gw, f.route, f.echo, f.ca, f.policy}
}

// statusKinds are the kinds whose status the Gateway API updater writes.
func (f backendTLSFixture) statusKinds() []client.Object {
	return []client.Object{&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}, &gatewayv1.BackendTLSPolicy{}}
}
