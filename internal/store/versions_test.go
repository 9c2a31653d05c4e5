package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

// Every field of each older version, as the API server would serve it (status included),
// so that a conversion that dropped or renamed one would show in the JSON.
const (
	alphaRouteSpec = `"parentRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","namespace":"ns","name":"gw","sectionName":"tcp","port":9000}],` +
		`"useDefaultGateways":"All",` +
		`"rules":[{"name":"first","backendRefs":[{"group":"","kind":"Service","namespace":"ns","name":"svc","port":8080,"weight":3}]},` +
		`{"name":"second","backendRefs":[{"name":"svc2","port":81}]}]`
	routeStatus = `"status":{"parents":[{"parentRef":{"name":"gw","sectionName":"tcp"},"controllerName":"konghq.com/kic-gateway-controller",` +
		`"conditions":[{"type":"Accepted","status":"True","observedGeneration":2,"lastTransitionTime":"2025-01-02T03:04:05Z","reason":"Accepted","message":"ok"}]}]}`
	objectMeta = `"metadata":{"name":"r","namespace":"ns","uid":"u-1","resourceVersion":"42","generation":2,"labels":{"a":"b"},"annotations":{"konghq.com/plugins":"p"}}`
)

var olderSamples = map[string]struct {
	json   string
	object func() client.Object
}{
	"TCPRoute": {`{"apiVersion":"gateway.networking.k8s.io/v1alpha2","kind":"TCPRoute",` + objectMeta + `,"spec":{` + alphaRouteSpec + `},` + routeStatus + `}`,
		func() client.Object { return &gatewayv1alpha2.TCPRoute{} }},
	"UDPRoute": {`{"apiVersion":"gateway.networking.k8s.io/v1alpha2","kind":"UDPRoute",` + objectMeta + `,"spec":{` + alphaRouteSpec + `},` + routeStatus + `}`,
		func() client.Object { return &gatewayv1alpha2.UDPRoute{} }},
	"TLSRoute": {`{"apiVersion":"gateway.networking.k8s.io/v1alpha2","kind":"TLSRoute",` + objectMeta + `,"spec":{"hostnames":["a.example.com","*.b.example.com"],` + alphaRouteSpec + `},` + routeStatus + `}`,
		func() client.Object { return &gatewayv1alpha2.TLSRoute{} }},
	"BackendTLSPolicy": {`{"apiVersion":"gateway.networking.k8s.io/v1alpha3","kind":"BackendTLSPolicy",` + objectMeta + `,"spec":{` +
		`"targetRefs":[{"group":"","kind":"Service","name":"svc","sectionName":"https"},{"group":"","kind":"Service","name":"svc2"}],` +
		`"validation":{"caCertificateRefs":[{"group":"","kind":"ConfigMap","name":"ca"}],"wellKnownCACertificates":"System","hostname":"svc.example.com",` +
		`"subjectAltNames":[{"type":"Hostname","hostname":"alt.example.com"},{"type":"URI","uri":"spiffe://cluster.local/ns/ns/sa/svc"}]},` +
		`"options":{"example.com/opt":"v"}},` +
		`"status":{"ancestors":[{"ancestorRef":{"name":"gw","namespace":"ns"},"controllerName":"konghq.com/kic-gateway-controller",` +
		`"conditions":[{"type":"Accepted","status":"True","observedGeneration":2,"lastTransitionTime":"2025-01-02T03:04:05Z","reason":"Accepted","message":"ok"}]}]}}`,
		func() client.Object { return &gatewayv1alpha3.BackendTLSPolicy{} }},
}

// asMap is obj's JSON as a map, without apiVersion (the one thing a conversion changes).
func asMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "apiVersion")
	return m
}

// An object of an older version converts to v1 field for field (the same JSON but for
// apiVersion, every field of the version filled in) and back to the object it was.
func TestOlderVersionsConvertFaithfullyAndRoundTrip(t *testing.T) {
	for kind, sample := range olderSamples {
		t.Run(kind, func(t *testing.T) {
			in := sample.object()
			require.NoError(t, json.Unmarshal([]byte(sample.json), in))
			var want map[string]any
			require.NoError(t, json.Unmarshal([]byte(sample.json), &want))
			delete(want, "apiVersion")
			require.Equal(t, want, asMap(t, in), "the sample holds only fields of the version")

			v1, ok := ToInternal(in)
			require.True(t, ok)
			gvk, err := gvkOf(v1)
			require.NoError(t, err)
			require.Equal(t, gatewayv1.SchemeGroupVersion.WithKind(kind), gvk, "the v1 type")
			require.Equal(t, want, asMap(t, v1), "same fields, same values")
			require.Equal(t, in.GetObjectKind().GroupVersionKind().GroupVersion(), v1.GetObjectKind().GroupVersionKind().GroupVersion(),
				"the version read is kept in TypeMeta (AsRead)")

			back, ok := AsRead(v1)
			require.True(t, ok)
			in.GetObjectKind().SetGroupVersionKind(back.GetObjectKind().GroupVersionKind())
			require.True(t, equality.Semantic.DeepEqual(in, back), "round trip: %#v", back)
		})
	}
}

// v1 → older → v1 keeps everything, including the v1 object's TypeMeta marker; a v1 object
// read at v1 (no TypeMeta, or v1's) is not converted for writing.
func TestV1RoundTripAndNotConvertedWhenReadAtV1(t *testing.T) {
	for kind, sample := range olderSamples {
		in := sample.object()
		require.NoError(t, json.Unmarshal([]byte(sample.json), in))
		v1, _ := ToInternal(in)
		older, ok := AsRead(v1)
		require.True(t, ok, kind)
		again, ok := ToInternal(older)
		require.True(t, ok, kind)
		require.True(t, equality.Semantic.DeepEqual(v1, again), kind)

		plain := v1.DeepCopyObject().(client.Object)
		plain.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		_, ok = AsRead(plain)
		require.False(t, ok, "%s without TypeMeta: read at v1", kind)
		plain.GetObjectKind().SetGroupVersionKind(gatewayv1.SchemeGroupVersion.WithKind(kind))
		_, ok = AsRead(plain)
		require.False(t, ok, "%s read at v1", kind)
	}
	_, ok := AsRead(&gatewayv1.HTTPRoute{TypeMeta: metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1alpha2", Kind: "HTTPRoute"}})
	require.False(t, ok, "no older version of HTTPRoute is read")
}

func gvkOf(obj client.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := Scheme().ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gvks[0], nil
}

// A store told that the cluster serves TCPRoute only at v1alpha2 (and so on) reads them at
// that version and hands translation the v1 type; the watched namespaces still apply.
func TestStoreReadsOlderVersionsAsV1(t *testing.T) {
	var objs []client.Object
	for _, sample := range olderSamples {
		obj := sample.object()
		require.NoError(t, json.Unmarshal([]byte(sample.json), obj))
		obj.SetResourceVersion("")
		objs = append(objs, obj)
	}
	other := &gatewayv1alpha2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "r"}}
	objs = append(objs, other)
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).Build()
	kinds := NewKindSet(KindTCPRoute, KindUDPRoute, KindTLSRoute, KindBackendTLSPolicy)
	versions := Versions{KindTCPRoute: "v1alpha2", KindUDPRoute: "v1alpha2", KindTLSRoute: "v1alpha2", KindBackendTLSPolicy: "v1alpha3"}
	snap, err := New(c, Options{Kinds: kinds, Versions: versions, Namespaces: []string{"ns"}}).Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.TCPRoutes, 1, "the one in a watched namespace")
	require.Len(t, snap.UDPRoutes, 1)
	require.Len(t, snap.TLSRoutes, 1)
	require.Len(t, snap.BackendTLSPolicies, 1)
	require.Equal(t, "ns", snap.TCPRoutes[0].Namespace)
	require.Len(t, snap.TCPRoutes[0].Spec.Rules, 2, "an alpha route's rules, all of them")
	require.Equal(t, gatewayv1.PortNumber(8080), *snap.TCPRoutes[0].Spec.Rules[0].BackendRefs[0].Port)
	require.Equal(t, []gatewayv1.Hostname{"a.example.com", "*.b.example.com"}, snap.TLSRoutes[0].Spec.Hostnames)
	require.Equal(t, gatewayv1.PreciseHostname("svc.example.com"), snap.BackendTLSPolicies[0].Spec.Validation.Hostname)
	require.Len(t, snap.BackendTLSPolicies[0].Spec.Validation.SubjectAltNames, 2)

	// Read at v1 (no Versions), the same store sees none: the cluster (the fake) holds
	// none at v1.
	snap, err = New(c, Options{Kinds: kinds}).Snapshot(context.Background())
	require.NoError(t, err)
	require.Empty(t, snap.TCPRoutes)

	// LiveKinds carries the versions with the set.
	live := NewLiveKindsAt(kinds, versions)
	snap, err = New(c, Options{Live: live}).Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.TCPRoutes, 2)
	require.Equal(t, "v1alpha2", live.Version(KindTCPRoute))
	live.AddAt(KindTCPRoute, "v1")
	require.Equal(t, "v1", live.Version(KindTCPRoute), "moved to v1")
	snap, err = New(c, Options{Live: live}).Snapshot(context.Background())
	require.NoError(t, err)
	require.Empty(t, snap.TCPRoutes, "read at v1 now")
	require.Len(t, snap.UDPRoutes, 1, "the other kinds stay at theirs")
}

// The same cached object converts to the same v1 object in every snapshot (the incremental
// translator tells a change by the pointer); a new version of it to a new one, and one
// gone is forgotten.
func TestConversionsAreRememberedPerCachedObject(t *testing.T) {
	var c conversions
	a := &gatewayv1alpha2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	b := &gatewayv1alpha2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	first := c.convert(KindTCPRoute, []client.Object{a, b})
	second := c.convert(KindTCPRoute, []client.Object{a, b})
	require.Same(t, first[0], second[0])
	require.Same(t, first[1], second[1])
	a2 := a.DeepCopy()
	third := c.convert(KindTCPRoute, []client.Object{a2})
	require.NotSame(t, first[0], third[0], "a new version of a is a new object")
	require.Len(t, c.byKind[KindTCPRoute], 1, "b is forgotten")
}

// A status write of a converted object goes back in the version read: AsRead gives the
// older object, PatchAsRead the patch computed on the v1 objects, and a conflict's read
// again (GetAsRead) reads that version and converts it.
func TestStatusWrittenBackInTheVersionRead(t *testing.T) {
	ctx := context.Background()
	route := &gatewayv1alpha2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: gatewayv1alpha2.TCPRouteSpec{Rules: []gatewayv1alpha2.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "svc"}}}}}}}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(route).WithStatusSubresource(&gatewayv1alpha2.TCPRoute{}).Build()
	snap, err := New(c, Options{Kinds: NewKindSet(KindTCPRoute), Versions: Versions{KindTCPRoute: "v1alpha2"}}).Snapshot(ctx)
	require.NoError(t, err)
	current := snap.TCPRoutes[0]

	updated := current.DeepCopy()
	updated.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "konghq.com/kic-gateway-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	read, ok := AsRead(updated)
	require.True(t, ok)
	require.IsType(t, &gatewayv1alpha2.TCPRoute{}, read)
	patch := PatchAsRead(client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{}), updated)
	data, err := patch.Data(read)
	require.NoError(t, err)
	require.NotContains(t, string(data), "spec", "only the status (and the lock's resourceVersion)")
	require.NoError(t, c.Status().Patch(ctx, read, patch))

	var stored gatewayv1alpha2.TCPRoute
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "r"}, &stored))
	require.Len(t, stored.Status.Parents, 1)
	require.Equal(t, gatewayv1.GatewayController("konghq.com/kic-gateway-controller"), stored.Status.Parents[0].ControllerName)

	fresh := &gatewayv1.TCPRoute{}
	require.NoError(t, GetAsRead(ctx, c, current, fresh))
	require.Len(t, fresh.Status.Parents, 1, "read again at v1alpha2, converted")
	_, ok = AsRead(fresh)
	require.True(t, ok, "and still marked as read at v1alpha2")

	// The same route read at v1 (its type's own) is read as it is.
	require.Error(t, GetAsRead(ctx, c, &gatewayv1.TCPRoute{ObjectMeta: current.ObjectMeta}, &gatewayv1.TCPRoute{}),
		"the fake holds no v1 TCPRoute")
}

// Only the four kinds have older versions, each its own and KIC 3.5's.
func TestKindVersions(t *testing.T) {
	require.Equal(t, []string{"v1", "v1alpha2"}, KindTCPRoute.Versions())
	require.Equal(t, []string{"v1", "v1alpha2"}, KindUDPRoute.Versions())
	require.Equal(t, []string{"v1", "v1alpha2"}, KindTLSRoute.Versions())
	require.Equal(t, []string{"v1", "v1alpha3"}, KindBackendTLSPolicy.Versions())
	require.Equal(t, []string{"v1"}, KindHTTPRoute.Versions())
	require.Equal(t, schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1alpha3", Kind: "BackendTLSPolicy"},
		Versions{KindBackendTLSPolicy: "v1alpha3"}.GroupVersionKind(KindBackendTLSPolicy))
	require.IsType(t, &gatewayv1alpha2.UDPRoute{}, Versions{KindUDPRoute: "v1alpha2"}.NewObject(KindUDPRoute))
	require.IsType(t, &gatewayv1.UDPRoute{}, Versions{KindUDPRoute: "v1"}.NewObject(KindUDPRoute))
	require.IsType(t, &gatewayv1.UDPRoute{}, Versions(nil).NewObject(KindUDPRoute))
}
