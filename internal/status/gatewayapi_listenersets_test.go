package status

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
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
