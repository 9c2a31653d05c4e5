package status

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// A ListenerSet's conditions and listener statuses, as the conformance suite's ListenerSet
// tests check them, and the Gateway's attachedListenerSets.
func TestListenerSetStatus(t *testing.T) {
	same := gatewayv1.NamespacesFromSame
	host := func(h string) *gatewayv1.Hostname { v := gatewayv1.Hostname(h); return &v }
	http := func(name, h string) gatewayv1.ListenerEntry {
		return gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: host(h)}
	}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kong", Generation: 2}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong",
		AllowedListeners: &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &same}},
		Listeners:        []gatewayv1.Listener{{Name: "own", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: host("gw.example.com")}}}}
	set := func(ns, name string, listeners ...gatewayv1.ListenerEntry) *gatewayv1.ListenerSet {
		return &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3},
			Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: "kong", Namespace: (*gatewayv1.Namespace)(&gw.Namespace)}, Listeners: listeners}}
	}
	in := gatewayapi.Input{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}},
		Gateways:       []*gatewayv1.Gateway{gw},
		ListenerSets: []*gatewayv1.ListenerSet{
			set("default", "mixed", http("fine", "a.example.com"), http("taken", "gw.example.com"),
				gatewayv1.ListenerEntry{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 80}),
			set("default", "only-taken", http("taken", "gw.example.com")),
			set("default", "secret-elsewhere", gatewayv1.ListenerEntry{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: host("s.example.com"),
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}}),
			set("other", "not-allowed", http("x", "x.example.com")),
		},
	}
	a := gatewayapi.Attach(in)
	t0 := time.Unix(0, 0)
	refused := func(l *gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string) {
		if l.TLS != nil {
			return gatewayv1.ListenerReasonRefNotPermitted, "no grant"
		}
		return "", ""
	}
	got := map[string]gatewayv1.ListenerSetStatus{}
	var attached int32
	for _, ls := range a.Gateway("default", "kong").ListenerSets {
		st, accepted := listenerSetStatus(gatewayv1.ListenerSetStatus{}, ls, true, refused, nil, true, t0)
		got[ls.ListenerSet.Name] = st
		if accepted {
			attached++
		}
		for _, c := range st.Conditions {
			require.Equal(t, int64(3), c.ObservedGeneration, "the set's generation")
		}
	}
	require.Equal(t, int32(1), attached, "only mixed has a valid listener")

	require.Equal(t, "True/ListenersNotValid", condition(got["mixed"].Conditions, "Accepted"))
	require.Equal(t, "True/Programmed", condition(got["mixed"].Conditions, "Programmed"))
	listener := func(set, name string) []metav1.Condition {
		for _, l := range got[set].Listeners {
			if string(l.Name) == name {
				return l.Conditions
			}
		}
		t.Fatalf("no listener %s/%s", set, name)
		return nil
	}
	require.Equal(t, "True/Accepted", condition(listener("mixed", "fine"), "Accepted"))
	require.Equal(t, "True/Programmed", condition(listener("mixed", "fine"), "Programmed"))
	for _, c := range []struct{ name, reason string }{{"taken", "HostnameConflict"}, {"tcp", "ProtocolConflict"}} {
		conds := listener("mixed", c.name)
		require.Equal(t, "False/"+c.reason, condition(conds, "Accepted"), c.name)
		require.Equal(t, "False/"+c.reason, condition(conds, "Programmed"), c.name)
		require.Equal(t, "True/"+c.reason, condition(conds, "Conflicted"), c.name)
	}

	require.Equal(t, "False/ListenersNotValid", condition(got["only-taken"].Conditions, "Accepted"))
	require.Equal(t, "False/ListenersNotValid", condition(got["only-taken"].Conditions, "Programmed"))
	require.Equal(t, "False/ListenersNotValid", condition(got["secret-elsewhere"].Conditions, "Accepted"))
	require.Equal(t, "False/RefNotPermitted", condition(got["secret-elsewhere"].Listeners[0].Conditions, "ResolvedRefs"))
	require.Equal(t, "False/NotAllowed", condition(got["not-allowed"].Conditions, "Accepted"))
	require.Equal(t, "False/NotAllowed", condition(got["not-allowed"].Conditions, "Programmed"))

	notAccepted, _ := listenerSetStatus(gatewayv1.ListenerSetStatus{}, a.Gateway("default", "kong").ListenerSets[0], false, refused, nil, true, t0)
	require.Equal(t, "False/ParentNotAccepted", condition(notAccepted.Conditions, "Accepted"))
	pending, _ := listenerSetStatus(gatewayv1.ListenerSetStatus{}, a.Gateway("default", "kong").ListenerSets[0], true, refused, nil, false, t0)
	require.Equal(t, "False/Pending", condition(pending.Conditions, "Programmed"))

	// attachedListenerSets: written once a Gateway has sets, and back to 0 after.
	g := a.Gateway("default", "kong")
	st := withAttachedListenerSets(gatewayv1.GatewayStatus{}, gatewayv1.GatewayStatus{}, g, attached)
	require.Equal(t, int32(1), *st.AttachedListenerSets)
	none := gatewayapi.Attach(gatewayapi.Input{GatewayClasses: in.GatewayClasses, Gateways: in.Gateways}).Gateways[0]
	require.Nil(t, withAttachedListenerSets(gatewayv1.GatewayStatus{}, gatewayv1.GatewayStatus{}, none, 0).AttachedListenerSets)
	require.Equal(t, int32(0), *withAttachedListenerSets(gatewayv1.GatewayStatus{}, st, none, 0).AttachedListenerSets)
}

// A ListenerSet whose Gateway is no longer ours loses the status konductor wrote: when the
// Gateway's class becomes another controller's, Accepted and Programmed go back to what the
// CRD writes before any controller (Unknown, Pending) and its listeners' statuses (their
// attachedRoutes) go; when the Gateway is deleted, they are False ParentNotAccepted. A status
// another controller wrote is left alone, and the route's entry for the set goes.
func TestListenerSetStatusReleased(t *testing.T) {
	ctx := context.Background()
	all := gatewayv1.NamespacesFromAll
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	theirs := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/other"}}
	gateway := func(name string) *gatewayv1.Gateway {
		gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, "gw.example.com"))
		gw.Name = name
		gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &all}}
		return gw
	}
	moved, deleted := gateway("moved"), gateway("deleted")
	set := func(name, parent string) *gatewayv1.ListenerSet {
		h := gatewayv1.Hostname(name + ".example.com")
		return &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 2},
			Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(parent)},
				Listeners: []gatewayv1.ListenerEntry{{Name: "web", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: &h}}}}
	}
	onMoved, onDeleted, raced := set("on-moved", "moved"), set("on-deleted", "deleted"), set("raced", "moved")
	kind := gatewayv1.Kind(gatewayapi.KindListenerSet)
	setRef := parentRef("on-moved", "web")
	setRef.Kind = &kind
	route := testRoute("default", "web", nil, setRef)

	theirStatus := []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "theirs", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(t0)},
		{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", Message: "theirs", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(t0)},
	}
	var race atomic.Bool // the other controller writes raced's status just before ours lands
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, theirs, moved, deleted, onMoved, onDeleted, raced, route).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.ListenerSet{}, &gatewayv1.HTTPRoute{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if obj.GetName() == raced.Name && race.CompareAndSwap(true, false) {
				var cur gatewayv1.ListenerSet
				require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(obj), &cur))
				cur.Status = gatewayv1.ListenerSetStatus{Conditions: theirStatus}
				require.NoError(t, cl.Status().Update(ctx, &cur))
			}
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.now = func() time.Time { return t0 }
	round := func() error {
		t.Helper()
		snap, err := store.SnapshotOf(ctx, u.source, store.NewKindSet(store.AllKinds()...))
		require.NoError(t, err)
		u.Report(ctx, dataplane.Round{GatewayAPI: u.attach(snap), Gateways: []dataplane.GatewayResult{{URL: "a"}}})
		return u.Update(ctx)
	}
	// theirsKept reports whether status st is theirStatus (times compared as instants).
	theirsKept := func(st gatewayv1.ListenerSetStatus) bool {
		if len(st.Conditions) != len(theirStatus) {
			return false
		}
		for i, c := range st.Conditions {
			w := theirStatus[i]
			if c.Type != w.Type || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message || !c.LastTransitionTime.Equal(&w.LastTransitionTime) {
				return false
			}
		}
		return true
	}
	get := func(ls *gatewayv1.ListenerSet) gatewayv1.ListenerSetStatus {
		t.Helper()
		var got gatewayv1.ListenerSet
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ls), &got))
		return got.Status
	}

	require.NoError(t, round())
	for _, ls := range []*gatewayv1.ListenerSet{onMoved, onDeleted, raced} {
		st := get(ls)
		require.Equal(t, "True/Accepted", condition(st.Conditions, "Accepted"), ls.Name)
		require.Equal(t, "True/Programmed", condition(st.Conditions, "Programmed"), ls.Name)
		require.Len(t, st.Listeners, 1, ls.Name)
	}
	require.EqualValues(t, 1, get(onMoved).Listeners[0].AttachedRoutes)

	// The Gateway moves to another controller's class, the other is deleted.
	var gw gatewayv1.Gateway
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(moved), &gw))
	gw.Spec.GatewayClassName = "theirs"
	require.NoError(t, c.Update(ctx, &gw))
	require.NoError(t, c.Delete(ctx, deleted))
	race.Store(true)
	require.ErrorContains(t, round(), "ListenerSet default/raced", "the write carries the resourceVersion the status was judged at")
	require.True(t, theirsKept(get(raced)), "the status its new controller wrote meanwhile stays")

	st := get(onMoved)
	require.Equal(t, "Unknown/Pending", condition(st.Conditions, "Accepted"), "another controller's Gateway: for it to take up")
	require.Equal(t, "Unknown/Pending", condition(st.Conditions, "Programmed"))
	require.Empty(t, st.Listeners, "konductor serves none of its listeners")
	st = get(onDeleted)
	require.Equal(t, "False/ParentNotAccepted", condition(st.Conditions, "Accepted"))
	require.Equal(t, "False/ParentNotAccepted", condition(st.Conditions, "Programmed"))
	require.Equal(t, "Gateway default/deleted does not exist", meta.FindStatusCondition(st.Conditions, "Accepted").Message)
	require.Equal(t, int64(2), meta.FindStatusCondition(st.Conditions, "Accepted").ObservedGeneration)
	require.Empty(t, st.Listeners)
	var gotRoute gatewayv1.HTTPRoute
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(route), &gotRoute))
	require.Empty(t, gotRoute.Status.Parents, "the route's entry for a set konductor no longer serves goes")

	// The other controller writes the set's status: konductor leaves it, and writes nothing
	// more.
	var ls gatewayv1.ListenerSet
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(onMoved), &ls))
	ls.Status.Conditions = theirStatus
	ls.Status.Listeners = []gatewayv1.ListenerEntryStatus{{Name: "web", AttachedRoutes: 3, Conditions: []metav1.Condition{}}}
	require.NoError(t, c.Status().Update(ctx, &ls))
	deletedBefore := get(onDeleted)
	require.NoError(t, round())
	require.Equal(t, ls.Status, get(onMoved), "another controller's status")
	require.True(t, theirsKept(get(raced)), "another controller's status")
	require.Equal(t, deletedBefore, get(onDeleted), "nothing differs")
}

// A ListenerSet's HTTPS listener with a certificate problem (a missing Secret, one without a
// valid key pair, one in another namespace no ReferenceGrant permits) is judged as a
// Gateway's listener with the same problem, through the updater's real path (the set's own
// grants, the cache's Secrets): ResolvedRefs False with the same reason and message,
// Programmed False Invalid, still Accepted; a route on it attaches and is counted, as on the
// Gateway's; the set, like the Gateway, stays Accepted with ListenersNotValid.
func TestListenerSetCertificateProblemsAsGateway(t *testing.T) {
	ctx := context.Background()
	all := gatewayv1.NamespacesFromAll
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("nope"), corev1.TLSPrivateKeyKey: []byte("nope")}}
	elsewhere := gatewayv1.Namespace("elsewhere")
	problems := map[string]gatewayv1.SecretObjectReference{
		"missing": {Name: "missing"}, "bad": {Name: "bad"}, "ungranted": {Name: "bad", Namespace: &elsewhere},
	}
	https := func(prefix, problem string) gatewayv1.Listener {
		l := listener(prefix+problem, gatewayv1.HTTPSProtocolType, 443, prefix+problem+".example.com")
		l.TLS = &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{problems[problem]}}
		return l
	}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, "gw.example.com"), https("gw-", "missing"), https("gw-", "bad"), https("gw-", "ungranted"))
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &all}}
	ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ls", Generation: 3},
		Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: "kong"}}}
	for _, l := range []gatewayv1.Listener{listener("ls-http", gatewayv1.HTTPProtocolType, 80, "ls.example.com"), https("ls-", "missing"), https("ls-", "bad"), https("ls-", "ungranted")} {
		ls.Spec.Listeners = append(ls.Spec.Listeners, gatewayv1.ListenerEntry(l))
	}
	kind := gatewayv1.Kind(gatewayapi.KindListenerSet)
	objs := []client.Object{class, bad, gw, ls}
	for problem := range problems {
		onSet := parentRef("ls", "ls-"+problem)
		onSet.Kind = &kind
		objs = append(objs, testRoute("default", "gw-"+problem, nil, parentRef("kong", "gw-"+problem)), testRoute("default", "ls-"+problem, nil, onSet))
	}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.ListenerSet{}, &gatewayv1.HTTPRoute{}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.now = func() time.Time { return t0 }
	snap, err := store.SnapshotOf(ctx, u.source, store.NewKindSet(store.AllKinds()...))
	require.NoError(t, err)
	u.Report(ctx, dataplane.Round{GatewayAPI: u.attach(snap), Gateways: []dataplane.GatewayResult{{URL: "a"}}})
	require.NoError(t, u.Update(ctx))

	var gotGW gatewayv1.Gateway
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &gotGW))
	var gotLS gatewayv1.ListenerSet
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ls), &gotLS))
	require.Equal(t, "True/ListenersNotValid", condition(gotGW.Status.Conditions, "Accepted"))
	require.Equal(t, "True/ListenersNotValid", condition(gotLS.Status.Conditions, "Accepted"), "as the Gateway")
	require.Equal(t, "True/Programmed", condition(gotLS.Status.Conditions, "Programmed"), "its valid listener is served")
	// A listener's conditions without their generation (the Gateway's and the set's differ).
	summary := func(conds []metav1.Condition) []string {
		var out []string
		for _, c := range conds {
			out = append(out, fmt.Sprintf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		return out
	}
	wantReason := map[string]string{"missing": "InvalidCertificateRef", "bad": "InvalidCertificateRef", "ungranted": "RefNotPermitted"}
	for problem := range problems {
		gl, sl := gotGW.Status.Listeners[slices.IndexFunc(gotGW.Status.Listeners, func(l gatewayv1.ListenerStatus) bool { return string(l.Name) == "gw-"+problem })],
			gotLS.Status.Listeners[slices.IndexFunc(gotLS.Status.Listeners, func(l gatewayv1.ListenerEntryStatus) bool { return string(l.Name) == "ls-"+problem })]
		require.Equal(t, "False/"+wantReason[problem], condition(gl.Conditions, "ResolvedRefs"), problem)
		require.Equal(t, "False/Invalid", condition(gl.Conditions, "Programmed"), problem)
		require.Equal(t, summary(gl.Conditions), summary(sl.Conditions), "the set's listener is judged as the Gateway's: %s", problem)
		require.EqualValues(t, 1, gl.AttachedRoutes, problem)
		require.Equal(t, gl.AttachedRoutes, sl.AttachedRoutes, problem)
		var onGW, onSet gatewayv1.HTTPRoute
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw-" + problem}, &onGW))
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "ls-" + problem}, &onSet))
		require.Equal(t, "True/Accepted", condition(onGW.Status.Parents[0].Conditions, "Accepted"), problem)
		require.Equal(t, summary(onGW.Status.Parents[0].Conditions), summary(onSet.Status.Parents[0].Conditions), "the route on the set's listener as the one on the Gateway's: %s", problem)
	}
}

// loadedCopies are the Secrets the sync loop loaded (store.SecretPayloads.LoadedCopy), by name.
type loadedCopies map[string]client.Object

func (l loadedCopies) LoadedCopy(obj client.Object) client.Object {
	if s, ok := l[obj.GetName()]; ok {
		return s
	}
	return nil
}

// A certificate Secret the cache keeps without its data (store.PayloadNotCached) is judged by
// the copy the sync loop loaded, on a Gateway's listener and a ListenerSet's alike; without
// one it is what the cache shows (no key pair).
func TestListenerCertificateFromLoadedCopy(t *testing.T) {
	ctx := context.Background()
	all := gatewayv1.NamespacesFromAll
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	cached := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cert", Annotations: map[string]string{store.PayloadNotCachedAnnotation: "true"}}}
	loaded := cached.DeepCopy()
	loaded.Annotations = nil
	loaded.Data = map[string][]byte{corev1.TLSCertKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
	l := listener("https", gatewayv1.HTTPSProtocolType, 443, "gw.example.com")
	l.TLS = &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}
	gw := testGateway(l)
	gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &all}}
	sl := l
	sl.Hostname = ptr.To(gatewayv1.Hostname("set.example.com"))
	ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ls"},
		Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: "kong"}, Listeners: []gatewayv1.ListenerEntry{gatewayv1.ListenerEntry(sl)}}}
	for _, tc := range []struct {
		name     string
		payloads loadedCopies
		want     string
	}{{"loaded", loadedCopies{"cert": loaded}, "True/ResolvedRefs"}, {"not loaded", nil, "False/InvalidCertificateRef"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, cached, gw, ls).
				WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.ListenerSet{}).Build()
			u := NewGatewayAPIUpdater("", IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
			if tc.payloads != nil {
				u.Payloads = tc.payloads
			}
			snap, err := store.SnapshotOf(ctx, u.source, store.NewKindSet(store.AllKinds()...))
			require.NoError(t, err)
			u.Report(ctx, dataplane.Round{GatewayAPI: u.attach(snap)})
			require.NoError(t, u.Update(ctx))
			var gotGW gatewayv1.Gateway
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &gotGW))
			var gotLS gatewayv1.ListenerSet
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ls), &gotLS))
			require.Equal(t, tc.want, condition(gotGW.Status.Listeners[0].Conditions, "ResolvedRefs"))
			require.Equal(t, tc.want, condition(gotLS.Status.Listeners[0].Conditions, "ResolvedRefs"))
		})
	}
}

// Which ListenerSet statuses are konductor's: one whose Accepted message is one konductor
// writes, for any Gateway (the set's parentRef may name another since); not the CRD's
// default, nor another controller's.
func TestOwnsListenerSetStatus(t *testing.T) {
	accepted := func(msg string) gatewayv1.ListenerSetStatus {
		return gatewayv1.ListenerSetStatus{Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowed", Message: msg}}}
	}
	for msg, want := range map[string]bool{
		msgListenerSetAccepted:      true,
		msgListenerSetSomeListeners: true,
		"Gateway other/gw does not allow ListenerSets from this namespace (spec.allowedListeners)": true,
		"Gateway a/b is not accepted":   true,
		"Gateway a/b does not exist":    true,
		"Waiting for controller":        false,
		"Gateway  is not accepted":      false,
		"accepted by example.com/other": false,
	} {
		require.Equal(t, want, ownsListenerSetStatus(accepted(msg)), msg)
	}
	require.False(t, ownsListenerSetStatus(gatewayv1.ListenerSetStatus{}), "no status")
}
