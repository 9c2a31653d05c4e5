package gatewayapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestIntersection(t *testing.T) {
	for _, c := range []struct{ listener, route, want string }{
		{"example.com", "example.com", "example.com"},
		{"*.example.com", "foo.example.com", "foo.example.com"},
		{"foo.example.com", "*.example.com", "foo.example.com"},
		{"*.example.com", "*.foo.example.com", "*.foo.example.com"},
		{"*.foo.example.com", "*.example.com", "*.foo.example.com"},
		{"*.example.com", "example.com", ""},
		{"example.com", "example.org", ""},
		{"*.example.com", "foo.example.org", ""},
	} {
		require.Equal(t, c.want, Intersection(c.listener, c.route), "%s ∩ %s", c.listener, c.route)
	}
}

func ptr[T any](v T) *T { return &v }

// Which parents accept a route, with which reason, and how many routes each listener counts.
func TestAttach(t *testing.T) {
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: DefaultControllerName}}
	other := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/x"}}
	all := gatewayv1.NamespacesFromAll
	selector := gatewayv1.NamespacesFromSelector
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "kong"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong",
		Listeners: []gatewayv1.Listener{
			{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: ptr(gatewayv1.Hostname("*.example.com"))},
			{Name: "all", Protocol: gatewayv1.HTTPProtocolType, Port: 8080, AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}},
			{Name: "team", Protocol: gatewayv1.HTTPProtocolType, Port: 8081, AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &selector,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}}},
			{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 9000},
		}}}
	otherGW := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "other"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "other"}}
	route := func(ns, name string, hostnames []gatewayv1.Hostname, refs ...gatewayv1.ParentReference) Route {
		return Route{Kind: KindHTTPRoute, Object: &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, ParentRefs: refs, Hostnames: hostnames}
	}
	parent := func(section string, port int32) gatewayv1.ParentReference {
		r := gatewayv1.ParentReference{Name: "kong", Namespace: ptr(gatewayv1.Namespace("gw"))}
		if section != "" {
			r.SectionName = ptr(gatewayv1.SectionName(section))
		}
		if port != 0 {
			r.Port = ptr(gatewayv1.PortNumber(port))
		}
		return r
	}
	a := Attach(Input{
		GatewayClasses:  []*gatewayv1.GatewayClass{class, other},
		Gateways:        []*gatewayv1.Gateway{gw, otherGW},
		NamespaceLabels: map[string]map[string]string{"team-a": {"team": "a"}, "team-b": {"team": "b"}},
		Routes: []Route{
			route("gw", "same", []gatewayv1.Hostname{"api.example.com", "x.org"}, parent("http", 0)),
			route("gw", "no-host", []gatewayv1.Hostname{"x.org"}, parent("http", 0)),
			route("other", "not-same", nil, parent("http", 0)),
			route("other", "all", nil, parent("", 8080)),
			route("team-a", "selected", nil, parent("team", 0)),
			route("team-b", "unselected", nil, parent("team", 0)),
			route("gw", "no-section", nil, parent("nope", 0)),
			route("gw", "tcp-listener", nil, parent("tcp", 0)),
			route("gw", "whole-gateway", nil, parent("", 0), parent("http", 0)),
			route("gw", "not-ours", nil, gatewayv1.ParentReference{Name: "other"}),
			// A parentRef's port (HTTPRouteParentRefPort): a port no listener has, a section
			// whose port is another (the suite's HTTPRouteInvalidParentRefNotMatchingListenerPort
			// and ...SectionNameNotMatchingPort), a section and its own port.
			route("other", "port-81", nil, parent("", 81)),
			route("other", "section-not-port", nil, parent("all", 81)),
			route("other", "section-and-port", nil, parent("all", 8080)),
		},
	})
	require.Len(t, a.Gateways, 1)
	want := map[string]gatewayv1.RouteConditionReason{
		"same": "Accepted", "no-host": "NoMatchingListenerHostname", "not-same": "NotAllowedByListeners",
		"all": "Accepted", "selected": "Accepted", "unselected": "NotAllowedByListeners", "no-section": "NoMatchingParent",
		"tcp-listener": "NotAllowedByListeners", "whole-gateway": "Accepted",
		"port-81": "NoMatchingParent", "section-not-port": "NoMatchingParent", "section-and-port": "Accepted",
	}
	for _, r := range []string{"same", "no-host", "not-same", "all", "selected", "unselected", "no-section", "tcp-listener", "whole-gateway",
		"port-81", "section-not-port", "section-and-port"} {
		ns := map[string]string{"not-same": "other", "all": "other", "selected": "team-a", "unselected": "team-b",
			"port-81": "other", "section-not-port": "other", "section-and-port": "other"}[r]
		if ns == "" {
			ns = "gw"
		}
		ra := a.Route(KindHTTPRoute, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r}})
		require.NotNil(t, ra, r)
		require.Equal(t, want[r], ra.Parents[0].Reason, r)
	}
	require.Nil(t, a.Route(KindHTTPRoute, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "not-ours"}}))
	require.Equal(t, []string{"api.example.com"}, a.Route(KindHTTPRoute, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "same"}}).Hostnames)

	counts := map[string]int32{}
	for _, l := range a.Gateways[0].Listeners {
		counts[string(l.Listener.Name)] = l.AttachedRoutes
	}
	// http: same, whole-gateway (counted once though named twice); all: all, whole-gateway;
	// team: selected, whole-gateway? no: whole-gateway is in gw, which the selector does not
	// select (no labels known for gw).
	// all: section-and-port too; the routes whose port matches no listener count nowhere.
	require.Equal(t, map[string]int32{"http": 2, "all": 3, "team": 1, "tcp": 0}, counts)
}
