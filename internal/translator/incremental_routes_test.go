package translator

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// routeCluster is a Gateway API cluster of n HTTPRoutes on one Gateway's HTTP listener, in
// two namespaces: each route with its host name and a Service of its own (with an
// EndpointSlice), every tenth naming instead a Service shared with the others of its ten,
// and every hundredth also a Service of the other namespace, allowed by a ReferenceGrant.
// With shared=true every route names the one Service "echo", as in `make bench-attached`.
func routeCluster(n int, shared bool) *store.Snapshot {
	section := gatewayv1.SectionName("http")
	fromAll := gatewayv1.NamespacesFromAll
	snap := &store.Snapshot{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong", Generation: 1},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayapi.DefaultControllerName}}},
		Gateways: []*gatewayv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kong", Generation: 1},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong", Listeners: []gatewayv1.Listener{{Name: section, Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &fromAll}}}}}}},
		ReferenceGrants: []*gatewayv1beta1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "from-default", Generation: 1},
			Spec: gatewayv1beta1.ReferenceGrantSpec{
				From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayapi.Group, Kind: "HTTPRoute", Namespace: "default"}},
				To:   []gatewayv1beta1.ReferenceGrantTo{{Kind: "Service"}}}}},
	}
	addService := func(ns, name string, i int) { addRouteService(snap, ns, name, i) }
	if shared {
		addService("default", "echo", 0)
	}
	addService("other", "shared", 1)
	for i := range n {
		ns := []string{"default", "other"}[i%2]
		name := fmt.Sprintf("r%05d", i)
		backend := "echo"
		switch {
		case shared:
		case i%10 == 0:
			backend = fmt.Sprintf("group-%d", i/10)
			addService(ns, backend, i)
		default:
			backend = "svc-" + name
			addService(ns, backend, i)
		}
		port := gatewayv1.PortNumber(80)
		gwNS := gatewayv1.Namespace("default")
		refs := []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(backend), Port: &port}}}}
		if shared {
			refs[0].Namespace = &gwNS
		}
		if i%100 == 0 && ns == "default" {
			other := gatewayv1.Namespace("other")
			refs = append(refs, gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "shared", Namespace: &other, Port: &port}}})
		}
		prefix := gatewayv1.PathMatchPathPrefix
		path := "/" + name
		snap.HTTPRoutes = append(snap.HTTPRoutes, &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, ResourceVersion: "1", UID: types.UID("uid-" + ns + name)},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", Namespace: &gwNS, SectionName: &section}}},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
				Rules: []gatewayv1.HTTPRouteRule{{
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}},
					BackendRefs: refs,
				}},
			}})
	}
	return snap
}

// addRouteService adds to snap a Service ns/name with port 80 and an EndpointSlice of one
// ready address (numbered i).
func addRouteService(snap *store.Snapshot, ns, name string, i int) {
	ready := true
	snap.Services = append(snap.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-svc-" + ns + name), ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
	port, proto, pname := int32(8080), corev1.ProtocolTCP, "http"
	snap.EndpointSlices = append(snap.EndpointSlices, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", ResourceVersion: "1", UID: types.UID("uid-es-" + ns + name),
			Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &port, Protocol: &proto}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	})
}

// mixedRouteCluster is routeCluster(0, false) with GRPCRoutes and L4 routes (translated with
// GatewayAlpha): the Gateway gains a TCP, a UDP and a passthrough TLS listener, the
// ReferenceGrant allows every route kind. There are nGRPC GRPCRoutes, as routeCluster's
// HTTPRoutes (a Service of their own, every tenth one shared with its ten, every hundredth
// also other/shared), and nL4 L4 routes: TCPRoutes, UDPRoutes and TLSRoutes in turn, the
// TCPRoute and the UDPRoute of each three naming the same Service (one Service behind a
// TCP and a UDP stream service), every tenth also other/shared; most TCPRoutes and UDPRoutes
// on a listener of their own.
func mixedRouteCluster(nGRPC, nL4 int) *store.Snapshot {
	snap := routeCluster(0, false)
	gw := snap.Gateways[0]
	fromAll := gatewayv1.NamespacesFromAll
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &fromAll}}
	passthrough := gatewayv1.TLSModePassthrough
	gw.Spec.Listeners = append(gw.Spec.Listeners,
		gatewayv1.Listener{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 9000, AllowedRoutes: all},
		gatewayv1.Listener{Name: "udp", Protocol: gatewayv1.UDPProtocolType, Port: 9001, AllowedRoutes: all},
		gatewayv1.Listener{Name: "tls", Protocol: gatewayv1.TLSProtocolType, Port: 9443, AllowedRoutes: all, TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough}})
	grant := snap.ReferenceGrants[0]
	for _, kind := range []string{"GRPCRoute", "TCPRoute", "UDPRoute", "TLSRoute"} {
		grant.Spec.From = append(grant.Spec.From, gatewayv1beta1.ReferenceGrantFrom{Group: gatewayapi.Group, Kind: gatewayv1.Kind(kind), Namespace: "default"})
	}
	gwNS := gatewayv1.Namespace("default")
	port := gatewayv1.PortNumber(80)
	other := gatewayv1.Namespace("other")
	parent := func(section string) gatewayv1.CommonRouteSpec {
		sn := gatewayv1.SectionName(section)
		return gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", Namespace: &gwNS, SectionName: &sn}}}
	}
	backends := func(ns, name string, i int, shared bool) []gatewayv1.BackendRef {
		refs := []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}
		if shared && ns == "default" {
			refs = append(refs, gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "shared", Namespace: &other, Port: &port}})
		}
		return refs
	}
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, ResourceVersion: "1", UID: types.UID("uid-" + ns + name)}
	}
	for i := range nGRPC {
		ns := []string{"default", "other"}[i%2]
		name := fmt.Sprintf("g%05d", i)
		backend := "grpc-" + name
		if i%10 == 0 {
			backend = fmt.Sprintf("grpc-group-%d", i/10)
		}
		addRouteService(snap, ns, backend, 100000+i)
		var refs []gatewayv1.GRPCBackendRef
		for _, r := range backends(ns, backend, i, i%100 == 0) {
			refs = append(refs, gatewayv1.GRPCBackendRef{BackendRef: r})
		}
		svc, method := "pkg."+name, "Get"
		snap.GRPCRoutes = append(snap.GRPCRoutes, &gatewayv1.GRPCRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.GRPCRouteSpec{
			CommonRouteSpec: parent("http"),
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
			Rules: []gatewayv1.GRPCRouteRule{{
				Matches:     []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: &svc, Method: &method}}},
				BackendRefs: refs,
			}},
		}})
	}
	for i := range nL4 {
		ns := []string{"default", "other"}[i/3%2]
		name := fmt.Sprintf("l%05d", i)
		backend := fmt.Sprintf("stream-%d", i/3)
		if i%3 == 0 {
			addRouteService(snap, ns, backend, 200000+i)
		}
		refs := backends(ns, backend, i, i%10 == 0)
		// Most TCPRoutes and UDPRoutes have a listener (a port) of their own: routes sharing
		// one depend on each other (the oldest takes it), so a change of one is not local;
		// every tenth shares "tcp" or "udp", as the edits that move parentRefs may make others.
		own := func(protocol gatewayv1.ProtocolType, section string, port int) string {
			if i%10 == 0 {
				return section
			}
			own := fmt.Sprintf("%s-%d", section, i)
			gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: gatewayv1.SectionName(own), Protocol: protocol,
				Port: gatewayv1.PortNumber(port + i), AllowedRoutes: all})
			return own
		}
		switch i % 3 {
		case 0:
			snap.TCPRoutes = append(snap.TCPRoutes, &gatewayv1.TCPRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.TCPRouteSpec{
				CommonRouteSpec: parent(own(gatewayv1.TCPProtocolType, "tcp", 10000)), Rules: []gatewayv1.TCPRouteRule{{BackendRefs: refs}}}})
		case 1:
			snap.UDPRoutes = append(snap.UDPRoutes, &gatewayv1.UDPRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.UDPRouteSpec{
				CommonRouteSpec: parent(own(gatewayv1.UDPProtocolType, "udp", 20000)), Rules: []gatewayv1.UDPRouteRule{{BackendRefs: refs}}}})
		default:
			snap.TLSRoutes = append(snap.TLSRoutes, &gatewayv1.TLSRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.TLSRouteSpec{
				CommonRouteSpec: parent("tls"), Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
				Rules: []gatewayv1.TLSRouteRule{{BackendRefs: refs}}}})
		}
	}
	return snap
}

// TestIncrementalMatchesBuildWithHTTPRoutes is TestIncrementalMatchesBuild on clusters of
// HTTPRoutes (the golden cases that have some, and routeCluster), with edits mostly of
// HTTPRoutes (every field translation reads, added, deleted, status written) and now and
// then of Gateways, GatewayClasses and ReferenceGrants (full Builds). It fails when the
// HTTPRoute changes are not spliced (the property would then hold trivially).
func TestIncrementalMatchesBuildWithHTTPRoutes(t *testing.T) {
	var starts []translationStart
	for _, s := range goldenStarts(t) {
		if len(s.snap.HTTPRoutes) > 0 {
			starts = append(starts, s)
		}
	}
	starts = append(starts, translationStart{"routes", routeCluster(60, false), Options{}},
		translationStart{"routes sharing one Service", routeCluster(30, true), Options{}},
		translationStart{"routes, GatewayAlpha", routeCluster(30, false), Options{GatewayAlpha: true}},
		// Rules of several HTTPRoutes in one Kong service: a change of one is a full Build,
		// which must still be what Build gives after every kind of edit.
		translationStart{"combined services, routes sharing one Service", routeCluster(20, true), Options{CombinedServicesFromDifferentHTTPRoutes: true}},
		translationStart{"combined services, expressions router", routeCluster(20, true), Options{CombinedServicesFromDifferentHTTPRoutes: true, ExpressionRoutes: true}})
	steps := 150
	if testing.Short() {
		steps = 50
	}
	stats, reasons := matchBuildRounds(t, starts, steps, 30, func(ed *editor) { ed.routesMostly = true })
	// The ratio is over the starts where a splice can happen: under the expressions router or
	// with combined services an HTTPRoute change is a full Build by design (the reasons
	// logged), so how many golden cases use them must not decide the ratio.
	var partialRoutes, full, spliceable int
	for _, s := range starts {
		st := stats[s.name]
		full += st.Full
		if !s.opts.ExpressionRoutes && !s.opts.CombinedServicesFromDifferentHTTPRoutes {
			partialRoutes += st.PartialRoutes
			spliceable += steps
		}
		if strings.HasPrefix(s.name, "routes") && !testing.Short() {
			// (50 short steps are too few for the ratio: the first rounds of a
			// cluster and its occasional Gateway edits are full Builds.)
			// Most edits there are of HTTPRoutes that nothing else shares a Kong
			// service with; about a third are of Gateways, GatewayClasses,
			// ReferenceGrants, plugins or ExtensionRef filters (full Builds), so how
			// far the splices outnumber them depends on the random stream.
			require.Greater(t, st.PartialRoutes, st.Full, "%s: HTTPRoute changes were hardly spliced", s.name)
		}
	}
	t.Logf("%d rounds (%d where a splice can happen): %d partial translations of HTTPRoutes, %d full; full because: %v",
		steps*len(starts), spliceable, partialRoutes, full, reasons)
	require.Greater(t, 5*partialRoutes, spliceable, "HTTPRoute changes were hardly spliced")
}

// editRoutes makes one random change of the Gateway API objects of s: mostly of an
// HTTPRoute (or, with otherRoutesMostly, of a GRPCRoute or L4 route: editOtherRoutes, which
// also makes one edit in ten otherwise), sometimes of a Gateway, GatewayClass or
// ReferenceGrant. It returns "" when s has nothing to edit.
func (e *editor) editRoutes(s *store.Snapshot) string {
	if e.otherRoutesMostly && e.rng.IntN(5) > 0 || e.rng.IntN(10) == 0 {
		if what := e.editOtherRoutes(s); what != "" {
			return what
		}
	}
	if len(s.HTTPRoutes) == 0 {
		return ""
	}
	i := e.rng.IntN(len(s.HTTPRoutes))
	hr := s.HTTPRoutes[i].DeepCopy()
	hr.ResourceVersion = e.version()
	hr.Generation++
	put := func() { s.HTTPRoutes[i] = hr }
	ns := hr.Namespace
	pathType := func() *gatewayv1.PathMatchType {
		return &[]gatewayv1.PathMatchType{gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchExact, gatewayv1.PathMatchRegularExpression}[e.rng.IntN(3)]
	}
	switch e.rng.IntN(20) {
	case 0, 1:
		hr.Spec.Hostnames = [][]gatewayv1.Hostname{nil, {"a.example.com"}, {"*.example.com", "b.example.com"}, {"bad_host"}}[e.rng.IntN(4)]
		put()
		return "HTTPRoute hostnames"
	case 2, 3, 4:
		if len(hr.Spec.Rules) == 0 {
			hr.Spec.Rules = []gatewayv1.HTTPRouteRule{{}}
		}
		rule := &hr.Spec.Rules[e.rng.IntN(len(hr.Spec.Rules))]
		ref := gatewayv1.HTTPBackendRef{BackendRef: e.backendRef(ns)}
		if e.rng.IntN(3) == 0 {
			rule.BackendRefs = append(rule.BackendRefs, ref)
		} else {
			rule.BackendRefs = []gatewayv1.HTTPBackendRef{ref}
		}
		put()
		return "HTTPRoute backendRefs"
	case 5, 6:
		rule := gatewayv1.HTTPRouteRule{}
		if len(hr.Spec.Rules) > 0 {
			rule = *hr.Spec.Rules[0].DeepCopy()
		}
		v := []string{"/x", "/re[", "/", "/y/", "/a.b"}[e.rng.IntN(5)]
		m := gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: pathType(), Value: &v}}
		switch e.rng.IntN(4) {
		case 0:
			m.Headers = []gatewayv1.HTTPHeaderMatch{{Name: "x-version", Value: "2"}}
		case 1:
			get := gatewayv1.HTTPMethodGet
			m.Method = &get
		case 2:
			m.QueryParams = []gatewayv1.HTTPQueryParamMatch{{Name: "q", Value: "1"}}
		}
		rule.Matches = append(rule.Matches, m)
		hr.Spec.Rules = append(hr.Spec.Rules, rule)
		if len(hr.Spec.Rules) > 3 {
			hr.Spec.Rules = hr.Spec.Rules[1:]
		}
		put()
		return "HTTPRoute rule added"
	case 7:
		if len(hr.Spec.Rules) > 0 {
			rule := &hr.Spec.Rules[e.rng.IntN(len(hr.Spec.Rules))]
			replace := "/new"
			filters := []gatewayv1.HTTPRouteFilter{
				{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "x-a", Value: "b"}}}},
				{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: &gatewayv1.HTTPURLRewriteFilter{Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: &replace}}},
				{Type: gatewayv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{}},
				{Type: gatewayv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gatewayv1.LocalObjectReference{Group: "configuration.konghq.com", Kind: "KongPlugin", Name: "rate-limit"}},
			}
			if len(rule.Filters) > 0 && e.rng.IntN(2) == 0 {
				rule.Filters = nil
			} else {
				rule.Filters = append(rule.Filters, filters[e.rng.IntN(len(filters))])
			}
			put()
			return "HTTPRoute filters"
		}
	case 8:
		if hr.Annotations == nil {
			hr.Annotations = map[string]string{}
		}
		anns := []struct{ k, v string }{{"konghq.com/strip-path", "true"}, {"konghq.com/plugins", "rate-limit"}, {"konghq.com/tags", "a,b"},
			{"konghq.com/methods", "GET"}, {"konghq.com/headers.x-a", "b"}}
		a := anns[e.rng.IntN(len(anns))]
		if _, on := hr.Annotations[a.k]; on {
			delete(hr.Annotations, a.k)
		} else {
			hr.Annotations[a.k] = a.v
		}
		put()
		return "HTTPRoute annotation " + a.k
	case 9:
		if len(hr.Spec.ParentRefs) > 0 {
			p := &hr.Spec.ParentRefs[0]
			switch e.rng.IntN(3) {
			case 0:
				sn := gatewayv1.SectionName([]string{"http", "https", "nosuch"}[e.rng.IntN(3)])
				p.SectionName = &sn
			case 1:
				p.SectionName = nil
			default:
				hr.Spec.ParentRefs = nil
			}
		} else {
			gwNS := gatewayv1.Namespace("default")
			hr.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "kong", Namespace: &gwNS}}
		}
		put()
		return "HTTPRoute parentRefs"
	case 10, 11:
		hr.Name = fmt.Sprintf("%s-copy%d", hr.Name, e.rv)
		hr.UID = types.UID(fmt.Sprintf("uid-%d", e.rv))
		s.HTTPRoutes = append(s.HTTPRoutes, hr)
		return "HTTPRoute added"
	case 12:
		s.HTTPRoutes = append(s.HTTPRoutes[:i], s.HTTPRoutes[i+1:]...)
		return "HTTPRoute deleted"
	case 13:
		hr.Generation-- // a status write
		hr.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "kong"}, ControllerName: gatewayapi.DefaultControllerName}}
		put()
		return "HTTPRoute status"
	case 14:
		if j, ok := pick(e, s.Gateways); ok {
			g := s.Gateways[j].DeepCopy()
			g.ResourceVersion = e.version()
			g.Generation++
			if len(g.Spec.Listeners) > 0 {
				h := gatewayv1.Hostname([]string{"*.example.com", "a.example.com"}[e.rng.IntN(2)])
				if g.Spec.Listeners[0].Hostname == nil {
					g.Spec.Listeners[0].Hostname = &h
				} else {
					g.Spec.Listeners[0].Hostname = nil
				}
			}
			s.Gateways[j] = g
			return "Gateway listener hostname"
		}
	case 15:
		if j, ok := pick(e, s.GatewayClasses); ok {
			c := s.GatewayClasses[j].DeepCopy()
			c.ResourceVersion = e.version()
			c.Generation++
			if c.Spec.ControllerName == gatewayapi.DefaultControllerName {
				c.Spec.ControllerName = "example.com/other"
			} else {
				c.Spec.ControllerName = gatewayapi.DefaultControllerName
			}
			s.GatewayClasses[j] = c
			return "GatewayClass controller"
		}
	case 16:
		if j, ok := pick(e, s.ReferenceGrants); ok && e.rng.IntN(2) == 0 {
			s.ReferenceGrants = append(s.ReferenceGrants[:j], s.ReferenceGrants[j+1:]...)
			return "ReferenceGrant deleted"
		}
		s.ReferenceGrants = append(s.ReferenceGrants, &gatewayv1beta1.ReferenceGrant{ObjectMeta: objectMeta("nogrant", fmt.Sprintf("g-%d", e.rv), e.version()),
			Spec: gatewayv1beta1.ReferenceGrantSpec{
				From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayapi.Group, Kind: "HTTPRoute", Namespace: gatewayv1.Namespace(ns)}},
				To:   []gatewayv1beta1.ReferenceGrantTo{{Kind: "Service"}}}})
		return "ReferenceGrant added"
	default:
		if e.changeServiceOf(s, hr) {
			return "Service of an HTTPRoute changed"
		}
	}
	return "nothing to edit"
}

// changeServiceOf changes the port of a Service route names, so that the routes naming it
// are translated again; false when it names none of s.
func (e *editor) changeServiceOf(s *store.Snapshot, route client.Object) bool {
	names := routeServicesNamed(route)
	if len(names) == 0 {
		return false
	}
	k := names[e.rng.IntN(len(names))]
	for j, svc := range s.Services {
		if svc.Namespace == k.ns && svc.Name == k.name {
			c := svc.DeepCopy()
			c.ResourceVersion = e.version()
			c.Spec.Ports[0].Port = []int32{80, 8080}[e.rng.IntN(2)]
			s.Services[j] = c
			return true
		}
	}
	return false
}

// backendRef is a random backendRef of a route in ns: a Service of ns, of another namespace
// (allowed by a grant or not), missing, weighted, or a KongServiceFacade.
func (e *editor) backendRef(ns string) gatewayv1.BackendRef {
	port := gatewayv1.PortNumber([]int32{80, 8080, 443}[e.rng.IntN(3)])
	ref := gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(e.serviceName(ns)), Port: &port}}
	switch e.rng.IntN(6) {
	case 0:
		other := gatewayv1.Namespace([]string{"other", "default", "nogrant"}[e.rng.IntN(3)])
		ref.Namespace = &other
		ref.Name = gatewayv1.ObjectName(e.serviceName(string(other)))
	case 1:
		w := int32(e.rng.IntN(3) * 10)
		ref.Weight = &w
	case 2:
		kind := gatewayv1.Kind("KongServiceFacade")
		ref.Kind = &kind
	}
	return ref
}

// attachmentString describes what the status writers read of a Gateway API attachment:
// classes, Gateways with their listeners' attachedRoutes, and each route's parents,
// hostnames and unresolved references.
func attachmentString(a *gatewayapi.Attachment) string {
	if a == nil {
		return "none"
	}
	var lines []string
	classes := make([]string, 0, len(a.Classes))
	for n := range a.Classes {
		classes = append(classes, n)
	}
	sort.Strings(classes)
	lines = append(lines, "classes "+strings.Join(classes, ","))
	for _, g := range a.Gateways {
		for _, l := range g.Listeners {
			kinds, _ := json.Marshal(l.SupportedKinds)
			lines = append(lines, fmt.Sprintf("gateway %s/%s listener %s attached=%d kinds=%s invalid=%v", g.Gateway.Namespace, g.Gateway.Name,
				l.Listener.Name, l.AttachedRoutes, kinds, l.InvalidKinds))
		}
	}
	for _, ra := range a.RouteAttachments() {
		line := fmt.Sprintf("route %s %s/%s hosts=%v refProblems=%v:", ra.Route.Kind, ra.Route.Object.GetNamespace(), ra.Route.Object.GetName(), ra.Hostnames, ra.RefProblems)
		for _, p := range ra.Parents {
			ref, _ := json.Marshal(p.Ref)
			line += fmt.Sprintf(" [%s %s/%s accepted=%v %s %q", ref, p.Gateway.Gateway.Namespace, p.Gateway.Gateway.Name, p.Accepted, p.Reason, p.Message)
			for _, l := range p.Listeners {
				line += " " + string(l.Listener.Name)
			}
			line += "]"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// An HTTPRoute that attaches to a Gateway without being accepted still makes the Services
// it names HTTPRoute backends, which is what lets a BackendTLSPolicy apply to them (KIC's
// ancestors): the Kong service of an Ingress naming such a Service changes although the
// route itself is not translated and leaves no edge out of the Service. The round is a
// full Build.
func TestIncrementalBackendTLSPolicyFollowsAnUnacceptedRoute(t *testing.T) {
	snap := routeCluster(10, false)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lonely", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	snap.Services = append(snap.Services, svc)
	snap.BackendTLSPolicies = []*gatewayv1.BackendTLSPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: "tls", Generation: 1},
		Spec: gatewayv1.BackendTLSPolicySpec{
			TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: gatewayv1.ObjectName(svc.Name)}}},
			Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "secure.internal", WellKnownCACertificates: ptrTo(gatewayv1.WellKnownCACertificatesSystem)},
		}}}
	prefix := netv1.PathTypePrefix
	snap.Ingresses = []*netv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: "ing", Generation: 1, ResourceVersion: "1"},
		Spec: netv1.IngressSpec{Rules: []netv1.IngressRule{{Host: "ing.example.com", IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
			Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: svc.Name, Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}}}
	opts := Options{GatewayAlpha: true}
	inc := &Incremental{noSizeLimit: true}
	renderer := &kongstate.Renderer{}
	requireSameResult(t, "start", renderer, inc.Build(snap, opts), Build(snap, opts))

	// A route naming the Service on a listener that does not exist: attached, not accepted.
	next := *snap
	port := gatewayv1.PortNumber(80)
	section := gatewayv1.SectionName("nosuch")
	gwNS := gatewayv1.Namespace("default")
	next.HTTPRoutes = append(append([]*gatewayv1.HTTPRoute(nil), snap.HTTPRoutes...), &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: "unaccepted", Generation: 1, ResourceVersion: "1"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", Namespace: &gwNS, SectionName: &section}}},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc.Name), Port: &port}}}}}},
		}})
	requireSameResult(t, "unaccepted route added", renderer, inc.Build(&next, opts), Build(&next, opts))
	require.Equal(t, 2, inc.Stats.Full, "the route's round was spliced")
}
