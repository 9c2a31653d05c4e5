package status

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

const ours = gatewayapi.DefaultControllerName

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testGateway(listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kong", Generation: 3},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "kong", Listeners: listeners},
	}
}

func listener(name string, proto gatewayv1.ProtocolType, port int32, host string) gatewayv1.Listener {
	l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: proto, Port: gatewayv1.PortNumber(port)}
	if host != "" {
		h := gatewayv1.Hostname(host)
		l.Hostname = &h
	}
	return l
}

func testRoute(ns, name string, hosts []string, refs ...gatewayv1.ParentReference) *gatewayv1.HTTPRoute {
	hr := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 7}}
	hr.Spec.ParentRefs = refs
	for _, h := range hosts {
		hr.Spec.Hostnames = append(hr.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	return hr
}

func parentRef(name, section string) gatewayv1.ParentReference {
	r := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
	if section != "" {
		s := gatewayv1.SectionName(section)
		r.SectionName = &s
	}
	return r
}

func inNamespace(r gatewayv1.ParentReference, ns string) gatewayv1.ParentReference {
	n := gatewayv1.Namespace(ns)
	r.Namespace = &n
	return r
}

func onPort(r gatewayv1.ParentReference, port gatewayv1.PortNumber) gatewayv1.ParentReference {
	r.Port = &port
	return r
}

func attach(gw *gatewayv1.Gateway, routes ...*gatewayv1.HTTPRoute) *gatewayapi.Attachment {
	in := gatewayapi.Input{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}},
		Gateways:       []*gatewayv1.Gateway{gw},
	}
	for _, r := range routes {
		in.Routes = append(in.Routes, gatewayapi.Route{Kind: gatewayapi.KindHTTPRoute, Object: r, ParentRefs: r.Spec.ParentRefs, Hostnames: r.Spec.Hostnames})
	}
	return gatewayapi.Attach(in)
}

// condition is a condition's status and reason, "True/Accepted".
func condition(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func TestRouteParents(t *testing.T) {
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com"), listener("tls", gatewayv1.TLSProtocolType, 443, ""))
	otherEntry := gatewayv1.RouteParentStatus{
		ParentRef: parentRef("theirs", ""), ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Theirs", LastTransitionTime: metav1.NewTime(t0)}},
	}
	for _, tc := range []struct {
		name        string
		route       *gatewayv1.HTTPRoute
		refProblems []gatewayapi.RefProblem
		have        []gatewayv1.RouteParentStatus
		// want is, per entry, controllerName, Accepted and ResolvedRefs.
		want [][3]string
	}{
		{name: "accepted", route: testRoute("default", "r", []string{"a.example.com"}, parentRef("kong", "")),
			want: [][3]string{{ours, "True/Accepted", "True/ResolvedRefs"}}},
		{name: "other namespace, Same", route: testRoute("team", "r", nil, inNamespace(parentRef("kong", ""), "default")),
			want: [][3]string{{ours, "False/NotAllowedByListeners", "True/ResolvedRefs"}}},
		{name: "hostname", route: testRoute("default", "r", []string{"a.example.org"}, parentRef("kong", "http")),
			want: [][3]string{{ours, "False/NoMatchingListenerHostname", "True/ResolvedRefs"}}},
		{name: "no such section", route: testRoute("default", "r", nil, parentRef("kong", "nope")),
			want: [][3]string{{ours, "False/NoMatchingParent", "True/ResolvedRefs"}}},
		// HTTPRouteInvalidParentRefNotMatchingListenerPort, ...SectionNameNotMatchingPort.
		{name: "no listener on the port", route: testRoute("default", "r", nil, onPort(parentRef("kong", ""), 81)),
			want: [][3]string{{ours, "False/NoMatchingParent", "True/ResolvedRefs"}}},
		{name: "section on another port", route: testRoute("default", "r", nil, onPort(parentRef("kong", "http"), 81)),
			want: [][3]string{{ours, "False/NoMatchingParent", "True/ResolvedRefs"}}},
		{name: "section on its port", route: testRoute("default", "r", []string{"a.example.com"}, onPort(parentRef("kong", "http"), 80)),
			want: [][3]string{{ours, "True/Accepted", "True/ResolvedRefs"}}},
		{name: "kind the listener does not carry", route: testRoute("default", "r", nil, parentRef("kong", "tls")),
			want: [][3]string{{ours, "False/NotAllowedByListeners", "True/ResolvedRefs"}}},
		{name: "backend problems: the first reason, every message", route: testRoute("default", "r", nil, parentRef("kong", "")),
			refProblems: []gatewayapi.RefProblem{{Reason: gatewayv1.RouteReasonRefNotPermitted, Message: "a"}, {Reason: gatewayv1.RouteReasonBackendNotFound, Message: "b"}},
			want:        [][3]string{{ours, "True/Accepted", "False/RefNotPermitted"}}},
		{name: "another controller's entry kept in place", route: testRoute("default", "r", nil, parentRef("kong", "")),
			have: []gatewayv1.RouteParentStatus{otherEntry},
			want: [][3]string{{"example.com/other", "False/Theirs", ""}, {ours, "True/Accepted", "True/ResolvedRefs"}}},
		{name: "our entry for a parentRef the route no longer names is removed", route: testRoute("default", "r", nil, parentRef("kong", "http")),
			have: []gatewayv1.RouteParentStatus{{ParentRef: parentRef("kong", "tls"), ControllerName: ours}, otherEntry},
			want: [][3]string{{"example.com/other", "False/Theirs", ""}, {ours, "True/Accepted", "True/ResolvedRefs"}}},
		{name: "route naming none of our Gateways: our entries go, theirs stay", route: testRoute("default", "r", nil, parentRef("elsewhere", "")),
			have: []gatewayv1.RouteParentStatus{{ParentRef: parentRef("kong", ""), ControllerName: ours}, otherEntry},
			want: [][3]string{{"example.com/other", "False/Theirs", ""}}},
		{name: "one entry per distinct parentRef", route: testRoute("default", "r", nil, parentRef("kong", "http"), parentRef("kong", "http"), parentRef("kong", "tls")),
			want: [][3]string{{ours, "True/Accepted", "True/ResolvedRefs"}, {ours, "False/NotAllowedByListeners", "True/ResolvedRefs"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := attach(gw, tc.route)
			ra := a.Route(gatewayapi.KindHTTPRoute, tc.route)
			for _, p := range tc.refProblems {
				ra.AddRefProblem(p.Reason, p.Message)
			}
			have := make([]gatewayv1.RouteParentStatus, len(tc.have))
			for i := range tc.have {
				have[i] = *tc.have[i].DeepCopy()
			}
			got := routeParents(have, ra, ours, t0)
			var entries [][3]string
			for _, p := range got {
				entries = append(entries, [3]string{string(p.ControllerName), condition(p.Conditions, "Accepted"), condition(p.Conditions, "ResolvedRefs")})
				if string(p.ControllerName) == ours {
					for _, c := range p.Conditions {
						require.Equal(t, int64(7), c.ObservedGeneration, "observedGeneration is the route's")
					}
				} else {
					require.Equal(t, otherEntry, p, "another controller's entry is not changed")
				}
			}
			require.Equal(t, tc.want, entries)
			if len(tc.refProblems) > 0 {
				require.Equal(t, "a; b", meta.FindStatusCondition(got[0].Conditions, "ResolvedRefs").Message)
			}
			require.True(t, equality.Semantic.DeepEqual(tc.have, have), "the status read is not modified")

			// Computed again from what it wrote, nothing differs: no write.
			again := routeParents(got, ra, ours, t0.Add(time.Hour))
			require.True(t, equality.Semantic.DeepEqual(got, again), "a second pass changes nothing")
		})
	}
}

func TestGatewayStatus(t *testing.T) {
	gw := testGateway(
		listener("http", gatewayv1.HTTPProtocolType, 80, ""),
		listener("http-b", gatewayv1.HTTPProtocolType, 8080, "b.example.com"),
		listener("clash", gatewayv1.HTTPSProtocolType, 8080, ""),
		listener("sctp", gatewayv1.ProtocolType("SCTP"), 9000, ""),
		listener("plain", gatewayv1.HTTPProtocolType, 81, ""),
	)
	kinds := gatewayv1.Kind("TCPRoute")
	gw.Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}, {Kind: kinds}}}
	a := attach(gw,
		testRoute("default", "one", nil, parentRef("kong", "http")),
		testRoute("default", "two", nil, parentRef("kong", "http"), parentRef("kong", "http-b")),
	)

	got := gatewayStatus(gatewayv1.GatewayStatus{}, a.Gateways[0], nil, []string{"192.0.2.1", "kong.example.com"}, nil, "", false, t0)
	require.Equal(t, "True/ListenersNotValid", condition(got.Conditions, "Accepted"), "some listeners are invalid")
	require.Equal(t, "False/Pending", condition(got.Conditions, "Programmed"), "no gateway took it yet")
	require.Len(t, got.Addresses, 2)
	require.Equal(t, gatewayv1.IPAddressType, *got.Addresses[0].Type)
	require.Equal(t, gatewayv1.HostnameAddressType, *got.Addresses[1].Type)
	require.Equal(t, "kong.example.com", got.Addresses[1].Value)

	type row struct {
		name                                       string
		attached                                   int32
		kinds                                      []string
		accepted, resolved, conflicted, programmed string
	}
	var rows []row
	for _, l := range got.Listeners {
		r := row{name: string(l.Name), attached: l.AttachedRoutes,
			accepted: condition(l.Conditions, "Accepted"), resolved: condition(l.Conditions, "ResolvedRefs"),
			conflicted: condition(l.Conditions, "Conflicted"), programmed: condition(l.Conditions, "Programmed")}
		for _, k := range l.SupportedKinds {
			r.kinds = append(r.kinds, string(k.Kind))
		}
		for _, c := range l.Conditions {
			require.Equal(t, int64(3), c.ObservedGeneration)
		}
		rows = append(rows, r)
	}
	require.Equal(t, []row{
		// Attachment counts on an invalid listener too (the spec: it measures the blast
		// radius of a change to the listener); each route once.
		{"http", 2, []string{"HTTPRoute"}, "True/Accepted", "False/InvalidRouteKinds", "False/NoConflicts", "False/Invalid"},
		{"http-b", 1, []string{"HTTPRoute", "GRPCRoute"}, "True/Accepted", "True/ResolvedRefs", "True/ProtocolConflict", "False/Invalid"},
		{"clash", 0, []string{"HTTPRoute", "GRPCRoute"}, "True/Accepted", "True/ResolvedRefs", "True/ProtocolConflict", "False/Invalid"},
		{"sctp", 0, nil, "False/UnsupportedProtocol", "True/ResolvedRefs", "False/NoConflicts", "False/Invalid"},
		{"plain", 0, []string{"HTTPRoute", "GRPCRoute"}, "True/Accepted", "True/ResolvedRefs", "False/NoConflicts", "False/Pending"},
	}, rows)

	valid := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	va := attach(valid, testRoute("default", "one", nil, parentRef("kong", "")))
	programmed := gatewayStatus(got, va.Gateways[0], nil, nil, nil, "", true, t0.Add(time.Minute))
	require.Equal(t, "True/Accepted", condition(programmed.Conditions, "Accepted"))
	require.Equal(t, "True/Programmed", condition(programmed.Conditions, "Programmed"))
	require.Empty(t, programmed.Addresses)
	require.Len(t, programmed.Listeners, 1, "listeners no longer in the spec go")
	require.Equal(t, "True/Programmed", condition(programmed.Listeners[0].Conditions, "Programmed"))
	require.Equal(t, t0, meta.FindStatusCondition(programmed.Listeners[0].Conditions, "Accepted").LastTransitionTime.Time,
		"a condition whose status did not change keeps its transition time")
	require.True(t, equality.Semantic.DeepEqual(programmed, gatewayStatus(programmed, va.Gateways[0], nil, nil, nil, "", true, t0.Add(time.Hour))),
		"a second pass changes nothing")

	none := testGateway(listener("sctp", gatewayv1.ProtocolType("SCTP"), 9000, ""))
	require.Equal(t, "False/ListenersNotValid", condition(gatewayStatus(gatewayv1.GatewayStatus{}, attach(none).Gateways[0], nil, nil, nil, "", true, t0).Conditions, "Accepted"))
}

func TestGatewayClassStatus(t *testing.T) {
	got := gatewayClassStatus(gatewayv1.GatewayClassStatus{Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionUnknown, Reason: "Pending"}}}, 2, t0, nil)
	require.Len(t, got.Conditions, 1)
	require.Equal(t, "True/Accepted", condition(got.Conditions, "Accepted"))
	require.Equal(t, int64(2), got.Conditions[0].ObservedGeneration)

	// The supported features replace whatever the class held (a flavor change drops some).
	held := gatewayv1.GatewayClassStatus{SupportedFeatures: []gatewayv1.SupportedFeature{{Name: "HTTPRouteQueryParamMatching"}, {Name: "Mesh"}}}
	features := gatewayapi.SupportedFeatures(gatewayapi.Router{})
	got = gatewayClassStatus(held, 1, t0, features)
	require.Equal(t, features, got.SupportedFeatures)
	require.NotContains(t, got.SupportedFeatures, gatewayv1.SupportedFeature{Name: "Mesh"})
}

func TestListenerConflicts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		listeners []gatewayv1.Listener
		want      []gatewayv1.ListenerConditionReason
	}{
		{"HTTP listeners told apart by hostname",
			[]gatewayv1.Listener{listener("a", gatewayv1.HTTPProtocolType, 80, "a.example.com"), listener("b", gatewayv1.HTTPProtocolType, 80, "")},
			[]gatewayv1.ListenerConditionReason{"", ""}},
		{"HTTP and HTTPS on one port: every listener of the port",
			[]gatewayv1.Listener{listener("a", gatewayv1.HTTPProtocolType, 80, ""), listener("b", gatewayv1.HTTPSProtocolType, 80, "b.example.com"), listener("c", gatewayv1.HTTPProtocolType, 80, "c.example.com")},
			[]gatewayv1.ListenerConditionReason{gatewayv1.ListenerReasonProtocolConflict, gatewayv1.ListenerReasonProtocolConflict, gatewayv1.ListenerReasonProtocolConflict}},
		{"HTTPS and TLS share a port by hostname",
			[]gatewayv1.Listener{listener("a", gatewayv1.HTTPSProtocolType, 443, "a.example.com"), listener("b", gatewayv1.TLSProtocolType, 443, "b.example.com")},
			[]gatewayv1.ListenerConditionReason{"", ""}},
		{"HTTPS and TLS with one hostname",
			[]gatewayv1.Listener{listener("a", gatewayv1.HTTPSProtocolType, 443, "a.example.com"), listener("b", gatewayv1.TLSProtocolType, 443, "a.example.com"), listener("c", gatewayv1.HTTPSProtocolType, 443, "")},
			[]gatewayv1.ListenerConditionReason{gatewayv1.ListenerReasonHostnameConflict, gatewayv1.ListenerReasonHostnameConflict, ""}},
		{"TCP and UDP share a port number",
			[]gatewayv1.Listener{listener("a", gatewayv1.TCPProtocolType, 53, ""), listener("b", gatewayv1.UDPProtocolType, 53, "")},
			[]gatewayv1.ListenerConditionReason{"", ""}},
		{"TCP owns its port",
			[]gatewayv1.Listener{listener("a", gatewayv1.TCPProtocolType, 9000, ""), listener("b", gatewayv1.TLSProtocolType, 9000, "b.example.com")},
			[]gatewayv1.ListenerConditionReason{gatewayv1.ListenerReasonProtocolConflict, gatewayv1.ListenerReasonProtocolConflict}},
		{"different ports never conflict",
			[]gatewayv1.Listener{listener("a", gatewayv1.TCPProtocolType, 9000, ""), listener("b", gatewayv1.HTTPProtocolType, 9001, "")},
			[]gatewayv1.ListenerConditionReason{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []gatewayv1.ListenerConditionReason
			for _, v := range listenerVerdicts(attach(testGateway(tc.listeners...)).Gateways[0], nil, nil) {
				got = append(got, v.conflict)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// A listener whose certificate does not resolve: ResolvedRefs False with the reason,
// Programmed False/Invalid, still Accepted (KIC's and the spec's).
func TestGatewayStatusCertificateRefs(t *testing.T) {
	gw := testGateway(listener("https", gatewayv1.HTTPSProtocolType, 443, ""))
	certRefs := func(*gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string) {
		return gatewayv1.ListenerReasonRefNotPermitted, "no grant"
	}
	got := gatewayStatus(gatewayv1.GatewayStatus{}, attach(gw).Gateways[0], certRefs, nil, nil, "", true, t0)
	l := got.Listeners[0]
	require.Equal(t, "False/RefNotPermitted", condition(l.Conditions, "ResolvedRefs"))
	require.Equal(t, "no grant", meta.FindStatusCondition(l.Conditions, "ResolvedRefs").Message)
	require.Equal(t, "True/Accepted", condition(l.Conditions, "Accepted"))
	require.Equal(t, "False/Invalid", condition(l.Conditions, "Programmed"))
	require.Equal(t, "False/ListenersNotValid", condition(got.Conditions, "Accepted"))
}
