package gatewayapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Which ListenerSets a Gateway allows, the precedence that decides their conflicts, and how
// routes attach to a ListenerSet (and not through the Gateway to its sets' listeners).
func TestAttachListenerSets(t *testing.T) {
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: DefaultControllerName}}
	from := func(f gatewayv1.FromNamespaces, sel *metav1.LabelSelector) *gatewayv1.AllowedListeners {
		return &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &f, Selector: sel}}
	}
	http := func(name, host string) gatewayv1.Listener {
		return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: ptr(gatewayv1.Hostname(host))}
	}
	gateway := func(name string, allowed *gatewayv1.AllowedListeners) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: name}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong",
			AllowedListeners: allowed, Listeners: []gatewayv1.Listener{http("own", "gw.example.com")}}}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	set := func(ns, name, gw string, age int, listeners ...gatewayv1.Listener) *gatewayv1.ListenerSet {
		ls := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(age) * time.Hour))},
			Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gw), Namespace: ptr(gatewayv1.Namespace("gw"))}}}
		for _, l := range listeners {
			ls.Spec.Listeners = append(ls.Spec.Listeners, gatewayv1.ListenerEntry(l))
		}
		return ls
	}
	tcp := gatewayv1.Listener{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 80}
	sets := []*gatewayv1.ListenerSet{
		// Listed newest first: precedence is by age, then namespace/name.
		set("gw", "young", "open", 1, http("a", "a.example.com")),
		set("gw", "b-old", "open", 2, http("b", "b.example.com"), http("also-a", "a.example.com")),
		set("gw", "a-old", "open", 2, http("c", "c.example.com"), http("own-again", "gw.example.com"), tcp),
		set("team", "elsewhere", "same-only", 1, http("t", "t.example.com")),
		set("gw", "here", "same-only", 1, http("h", "h.example.com")),
		set("team", "selected", "selector", 1, http("s", "s.example.com")),
		set("other", "unselected", "selector", 1, http("u", "u.example.com")),
		set("gw", "default", "closed", 1, http("d", "d.example.com")),
		set("gw", "not-ours", "missing", 1, http("m", "m.example.com")),
	}
	route := func(ns, name string, refs ...gatewayv1.ParentReference) Route {
		return Route{Kind: KindHTTPRoute, Object: &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, ParentRefs: refs}
	}
	onSet := func(name, section string) gatewayv1.ParentReference {
		r := gatewayv1.ParentReference{Kind: ptr(gatewayv1.Kind(KindListenerSet)), Name: gatewayv1.ObjectName(name), Namespace: ptr(gatewayv1.Namespace("gw"))}
		if section != "" {
			r.SectionName = ptr(gatewayv1.SectionName(section))
		}
		return r
	}
	onGateway := func(section string) gatewayv1.ParentReference {
		return gatewayv1.ParentReference{Name: "open", Namespace: ptr(gatewayv1.Namespace("gw")), SectionName: ptr(gatewayv1.SectionName(section))}
	}
	a := Attach(Input{
		GatewayClasses: []*gatewayv1.GatewayClass{class},
		Gateways: []*gatewayv1.Gateway{gateway("open", from(gatewayv1.NamespacesFromAll, nil)), gateway("same-only", from(gatewayv1.NamespacesFromSame, nil)),
			gateway("selector", from(gatewayv1.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"sets": "yes"}})),
			gateway("closed", nil)},
		ListenerSets:    sets,
		NamespaceLabels: map[string]map[string]string{"team": {"sets": "yes"}, "other": {}},
		Routes: []Route{
			route("gw", "whole-set", onSet("a-old", "")),
			route("gw", "conflicted-section", onSet("a-old", "own-again")),
			route("gw", "set-section-via-gateway", onGateway("c")),
			route("gw", "on-young", onSet("young", "")),
			route("gw", "on-closed", onSet("default", "")),
		},
	})

	require.Equal(t, []string{"a-old", "b-old", "default", "here", "young", "unselected", "elsewhere", "selected"}, func() []string {
		var out []string
		for _, s := range a.ListenerSets {
			out = append(out, s.ListenerSet.Name)
		}
		return out
	}(), "every set naming one of our Gateways, by namespace and name; not-ours names no Gateway of ours")
	allowed := map[string]bool{}
	for _, s := range a.ListenerSets {
		allowed[s.ListenerSet.Name] = s.Allowed
	}
	require.Equal(t, map[string]bool{"a-old": true, "b-old": true, "young": true, "here": true, "elsewhere": false,
		"selected": true, "unselected": false, "default": false}, allowed)

	open := a.Gateway("gw", "open")
	var order []string
	for _, s := range open.ListenerSets {
		order = append(order, s.ListenerSet.Name)
	}
	require.Equal(t, []string{"a-old", "b-old", "young"}, order, "oldest first, then by namespace/name")

	conflicts := map[string]gatewayv1.ListenerConditionReason{}
	for _, s := range open.ListenerSets {
		for _, l := range s.Listeners {
			conflicts[s.ListenerSet.Name+"/"+string(l.Listener.Name)] = l.Conflict
		}
	}
	require.Equal(t, map[string]gatewayv1.ListenerConditionReason{
		"a-old/c": "", "a-old/own-again": "HostnameConflict", "a-old/tcp": "ProtocolConflict",
		"b-old/b": "", "b-old/also-a": "",
		"young/a": "HostnameConflict", // b-old, older, has a.example.com
	}, conflicts)
	require.False(t, open.ListenerSets[2].Attached(), "young has no usable listener")
	require.True(t, open.ListenerSets[0].Attached())
	require.Len(t, open.AllListeners(), 1+1+2, "the Gateway's own, then the usable listeners of its sets")

	reason := func(name string) gatewayv1.RouteConditionReason {
		return a.Route(KindHTTPRoute, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: name}}).Parents[0].Reason
	}
	require.Equal(t, gatewayv1.RouteReasonAccepted, reason("whole-set"))
	require.Equal(t, []string{"c.example.com"}, a.Route(KindHTTPRoute, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "whole-set"}}).Hostnames,
		"a route on a set serves its usable listeners' hostnames only")
	require.Equal(t, gatewayv1.RouteReasonNoMatchingParent, reason("conflicted-section"))
	require.Equal(t, gatewayv1.RouteReasonNoMatchingParent, reason("set-section-via-gateway"), "a Gateway parentRef does not reach its sets' listeners")
	require.Equal(t, gatewayv1.RouteReasonNoMatchingParent, reason("on-young"))
	require.Equal(t, gatewayv1.RouteReasonNoMatchingParent, reason("on-closed"))
	require.Equal(t, int32(1), open.ListenerSets[0].Listeners[0].AttachedRoutes)
	require.Equal(t, int32(0), open.Listeners[0].AttachedRoutes)
}

// Sets created at the same time are ordered as the Gateway API breaks conflicts: by
// "{namespace}/{name}" as one string, so "team-a/y" comes before "team/x" ('-' sorts below
// '/'), which namespace-then-name would reverse.
func TestListenerSetPrecedenceByNamespacedName(t *testing.T) {
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: DefaultControllerName}}
	all := gatewayv1.NamespacesFromAll
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "open"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong",
		AllowedListeners: &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &all}},
		Listeners:        []gatewayv1.Listener{{Name: "own", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: ptr(gatewayv1.Hostname("gw.example.com"))}}}}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	set := func(ns, name string) *gatewayv1.ListenerSet {
		return &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created},
			Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: "open", Namespace: ptr(gatewayv1.Namespace("gw"))},
				Listeners: []gatewayv1.ListenerEntry{{Name: "shared", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: ptr(gatewayv1.Hostname("shared.example.com"))}}}}
	}
	a := Attach(Input{GatewayClasses: []*gatewayv1.GatewayClass{class}, Gateways: []*gatewayv1.Gateway{gw},
		ListenerSets: []*gatewayv1.ListenerSet{set("team", "x"), set("team-a", "y")}})
	conflicts := map[string]gatewayv1.ListenerConditionReason{}
	for _, s := range a.Gateway("gw", "open").ListenerSets {
		conflicts[s.ListenerSet.Namespace+"/"+s.ListenerSet.Name] = s.Listeners[0].Conflict
	}
	require.Equal(t, map[string]gatewayv1.ListenerConditionReason{"team-a/y": "", "team/x": "HostnameConflict"}, conflicts)
}
