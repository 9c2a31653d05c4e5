package translator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// TestIncrementalMatchesBuildWithGatewayRoutes is TestIncrementalMatchesBuildWithHTTPRoutes
// for GRPCRoutes, TCPRoutes, UDPRoutes and TLSRoutes: on the golden cases that have some and
// on mixedRouteClusters (with and without GatewayAlpha, without which L4 routes are not
// translated, and with the expressions router), random edits mostly of those routes (created, changed, deleted, parentRefs
// moved between listeners, backends changed, status written, a Service they name changed)
// and now and then of HTTPRoutes, Gateways, GatewayClasses and ReferenceGrants. After each,
// Incremental's result is a full Build's (rendered bytes, problems, graph, attachment). It
// fails when the changes of each kind are not spliced.
func TestIncrementalMatchesBuildWithGatewayRoutes(t *testing.T) {
	var starts []translationStart
	for _, s := range goldenStarts(t) {
		if len(s.snap.GRPCRoutes)+len(s.snap.TCPRoutes)+len(s.snap.UDPRoutes)+len(s.snap.TLSRoutes) > 0 {
			starts = append(starts, s)
		}
	}
	starts = append(starts, translationStart{"mixed routes", mixedRouteCluster(40, 45), Options{GatewayAlpha: true}},
		translationStart{"mixed routes, no GatewayAlpha", mixedRouteCluster(30, 30), Options{}},
		translationStart{"mixed routes, BackendTLSPolicy", withBackendTLSPolicy(mixedRouteCluster(20, 30), "default", "stream-0"), Options{GatewayAlpha: true, Workspace: "ws"}},
		translationStart{"mixed routes, expressions router", mixedRouteCluster(20, 45), Options{GatewayAlpha: true, ExpressionRoutes: true}})
	steps := 150
	if testing.Short() {
		steps = 50
	}
	spliced := map[string]int{}            // partial rounds by the kind edited
	splicedExpressions := map[string]int{} // the same under the expressions router
	stats, reasons := matchBuildRounds(t, starts, steps, 31, func(ed *editor) {
		ed.routesMostly, ed.otherRoutesMostly = true, true
		ed.observe = func(s translationStart, what string, before, after IncrementalStats, _, _ Result) {
			if after.PartialRoutes > before.PartialRoutes {
				kind, _, _ := strings.Cut(what, " ")
				spliced[kind]++
				if s.opts.ExpressionRoutes {
					splicedExpressions[kind]++
				}
			}
		}
	})
	var partialRoutes, full int
	for _, s := range starts {
		st := stats[s.name]
		partialRoutes += st.PartialRoutes
		full += st.Full
		if strings.HasPrefix(s.name, "mixed") && !s.opts.ExpressionRoutes && !testing.Short() {
			require.Greater(t, st.PartialRoutes, 2*st.Full, "%s: route changes were hardly spliced", s.name)
		}
	}
	rounds := steps * len(starts)
	t.Logf("%d rounds: %d partial translations of routes, %d full; spliced by kind edited: %v; full because: %v", rounds, partialRoutes, full, spliced, reasons)
	for _, kind := range []string{gatewayapi.KindGRPCRoute, gatewayapi.KindTCPRoute, gatewayapi.KindUDPRoute, gatewayapi.KindTLSRoute} {
		require.Greater(t, spliced[kind], 5, "%s changes were hardly spliced", kind)
	}
	// Under the expressions router L4 route changes are spliced, GRPCRoute and HTTPRoute
	// changes are not (their priorities are assigned across all routes).
	t.Logf("spliced under the expressions router, by kind edited: %v", splicedExpressions)
	require.Greater(t, splicedExpressions[gatewayapi.KindTCPRoute]+splicedExpressions[gatewayapi.KindUDPRoute]+splicedExpressions[gatewayapi.KindTLSRoute], 5,
		"L4 route changes under the expressions router were hardly spliced")
	require.Zero(t, splicedExpressions[gatewayapi.KindGRPCRoute]+splicedExpressions[gatewayapi.KindHTTPRoute])
}

// withBackendTLSPolicy adds to snap a BackendTLSPolicy targeting Service ns/name.
func withBackendTLSPolicy(snap *store.Snapshot, ns, name string) *store.Snapshot {
	snap.BackendTLSPolicies = append(snap.BackendTLSPolicies, &gatewayv1.BackendTLSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls-" + name, Generation: 1, ResourceVersion: "1"},
		Spec: gatewayv1.BackendTLSPolicySpec{
			TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: gatewayv1.ObjectName(name)}}},
			Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "secure.internal", WellKnownCACertificates: ptrTo(gatewayv1.WellKnownCACertificatesSystem)},
		}})
	return snap
}

// routeCopy is a new version of one GRPCRoute, TCPRoute, UDPRoute or TLSRoute of a
// snapshot, to edit, with what the edits reach of it.
type routeCopy struct {
	kind      string
	obj       client.Object
	common    *gatewayv1.CommonRouteSpec
	hostnames *[]gatewayv1.Hostname // nil: the kind has none
	rules     func() int
	// setBackends replaces (or, with add, extends) the backendRefs of rule i.
	setBackends func(i int, refs []gatewayv1.BackendRef, add bool)
	addRule     func(refs []gatewayv1.BackendRef)
	dropRule    func()
	// put, add and del write the copy in place of the route, as a new route, or delete
	// the route.
	put, add, del func()
}

// listEdits are a route copy's put, add and del on the list holding the route at i.
func listEdits[T client.Object](list *[]T, i int, c T) (put, add, del func()) {
	return func() { (*list)[i] = c }, func() { *list = append(*list, c) }, func() { *list = append((*list)[:i:i], (*list)[i+1:]...) }
}

// setBackendRefs replaces list by refs, or appends them with add.
func setBackendRefs(list *[]gatewayv1.BackendRef, refs []gatewayv1.BackendRef, add bool) {
	if !add {
		*list = nil
	}
	*list = append(*list, refs...)
}

// copyOtherRoute is a copy of a random GRPCRoute, TCPRoute, UDPRoute or TLSRoute of s, false
// when s has none.
func (e *editor) copyOtherRoute(s *store.Snapshot) (routeCopy, bool) {
	var kinds []string
	for kind, n := range map[string]int{gatewayapi.KindGRPCRoute: len(s.GRPCRoutes), gatewayapi.KindTCPRoute: len(s.TCPRoutes),
		gatewayapi.KindUDPRoute: len(s.UDPRoutes), gatewayapi.KindTLSRoute: len(s.TLSRoutes)} {
		if n > 0 {
			kinds = append(kinds, kind)
		}
	}
	if len(kinds) == 0 {
		return routeCopy{}, false
	}
	slices.Sort(kinds)
	c := routeCopy{kind: kinds[e.rng.IntN(len(kinds))]}
	switch c.kind {
	case gatewayapi.KindGRPCRoute:
		i := e.rng.IntN(len(s.GRPCRoutes))
		r := s.GRPCRoutes[i].DeepCopy()
		c.obj, c.common, c.hostnames = r, &r.Spec.CommonRouteSpec, &r.Spec.Hostnames
		c.rules = func() int { return len(r.Spec.Rules) }
		c.setBackends = func(j int, refs []gatewayv1.BackendRef, add bool) {
			if !add {
				r.Spec.Rules[j].BackendRefs = nil
			}
			for _, ref := range refs {
				r.Spec.Rules[j].BackendRefs = append(r.Spec.Rules[j].BackendRefs, gatewayv1.GRPCBackendRef{BackendRef: ref})
			}
		}
		c.addRule = func(refs []gatewayv1.BackendRef) {
			svc, method := []string{"pkg.A", "pkg.B", "re("}[e.rng.IntN(3)], "Get"
			rule := gatewayv1.GRPCRouteRule{Matches: []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: &svc, Method: &method}}}}
			switch e.rng.IntN(4) {
			case 0:
				rule.Matches[0].Headers = []gatewayv1.GRPCHeaderMatch{{Name: "x-version", Value: "2"}}
			case 1:
				rule.Filters = []gatewayv1.GRPCRouteFilter{{Type: gatewayv1.GRPCRouteFilterRequestHeaderModifier,
					RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-a", Value: "1"}}}}}
			case 2:
				rule.Filters = []gatewayv1.GRPCRouteFilter{{Type: gatewayv1.GRPCRouteFilterExtensionRef,
					ExtensionRef: &gatewayv1.LocalObjectReference{Group: "configuration.konghq.com", Kind: "KongPlugin", Name: "rate-limit"}}}
			}
			r.Spec.Rules = append(r.Spec.Rules, rule)
			c.setBackends(len(r.Spec.Rules)-1, refs, false)
		}
		c.dropRule = func() { r.Spec.Rules = r.Spec.Rules[1:] }
		c.put, c.add, c.del = listEdits(&s.GRPCRoutes, i, r)
	case gatewayapi.KindTCPRoute:
		i := e.rng.IntN(len(s.TCPRoutes))
		r := s.TCPRoutes[i].DeepCopy()
		c.obj, c.common = r, &r.Spec.CommonRouteSpec
		c.rules = func() int { return len(r.Spec.Rules) }
		c.setBackends = func(j int, refs []gatewayv1.BackendRef, add bool) {
			setBackendRefs(&r.Spec.Rules[j].BackendRefs, refs, add)
		}
		c.addRule = func(refs []gatewayv1.BackendRef) {
			r.Spec.Rules = append(r.Spec.Rules, gatewayv1.TCPRouteRule{BackendRefs: refs})
		}
		c.dropRule = func() { r.Spec.Rules = r.Spec.Rules[1:] }
		c.put, c.add, c.del = listEdits(&s.TCPRoutes, i, r)
	case gatewayapi.KindUDPRoute:
		i := e.rng.IntN(len(s.UDPRoutes))
		r := s.UDPRoutes[i].DeepCopy()
		c.obj, c.common = r, &r.Spec.CommonRouteSpec
		c.rules = func() int { return len(r.Spec.Rules) }
		c.setBackends = func(j int, refs []gatewayv1.BackendRef, add bool) {
			setBackendRefs(&r.Spec.Rules[j].BackendRefs, refs, add)
		}
		c.addRule = func(refs []gatewayv1.BackendRef) {
			r.Spec.Rules = append(r.Spec.Rules, gatewayv1.UDPRouteRule{BackendRefs: refs})
		}
		c.dropRule = func() { r.Spec.Rules = r.Spec.Rules[1:] }
		c.put, c.add, c.del = listEdits(&s.UDPRoutes, i, r)
	default:
		i := e.rng.IntN(len(s.TLSRoutes))
		r := s.TLSRoutes[i].DeepCopy()
		c.obj, c.common, c.hostnames = r, &r.Spec.CommonRouteSpec, &r.Spec.Hostnames
		c.rules = func() int { return len(r.Spec.Rules) }
		c.setBackends = func(j int, refs []gatewayv1.BackendRef, add bool) {
			setBackendRefs(&r.Spec.Rules[j].BackendRefs, refs, add)
		}
		c.addRule = func(refs []gatewayv1.BackendRef) {
			r.Spec.Rules = append(r.Spec.Rules, gatewayv1.TLSRouteRule{BackendRefs: refs})
		}
		c.dropRule = func() { r.Spec.Rules = r.Spec.Rules[1:] }
		c.put, c.add, c.del = listEdits(&s.TLSRoutes, i, r)
	}
	c.obj.SetResourceVersion(e.version())
	c.obj.SetGeneration(c.obj.GetGeneration() + 1)
	return c, true
}

// editOtherRoutes makes one random change of a GRPCRoute, TCPRoute, UDPRoute or TLSRoute of
// s (or of a Service one names, or the port of a listener), described by a string that
// starts with the route's kind; "" when s has none.
func (e *editor) editOtherRoutes(s *store.Snapshot) string {
	c, ok := e.copyOtherRoute(s)
	if !ok {
		return ""
	}
	ns := c.obj.GetNamespace()
	backend := func() gatewayv1.BackendRef { return e.backendRef(ns) }
	switch e.rng.IntN(16) {
	case 0:
		if c.hostnames != nil {
			*c.hostnames = [][]gatewayv1.Hostname{nil, {"a.example.com"}, {"*.example.com", "b.example.com"}, {"bad_host"}}[e.rng.IntN(4)]
			c.put()
			return c.kind + " hostnames"
		}
	case 1, 2, 3:
		if c.rules() == 0 {
			c.addRule(nil)
		}
		c.setBackends(e.rng.IntN(c.rules()), []gatewayv1.BackendRef{backend()}, e.rng.IntN(3) == 0)
		c.put()
		return c.kind + " backendRefs"
	case 4:
		if c.rules() > 0 && e.rng.IntN(3) == 0 {
			c.dropRule()
		} else {
			var refs []gatewayv1.BackendRef
			if e.rng.IntN(4) > 0 {
				refs = []gatewayv1.BackendRef{backend()}
			}
			c.addRule(refs)
		}
		c.put()
		return c.kind + " rules"
	case 5:
		anns := c.obj.GetAnnotations()
		if anns == nil {
			anns = map[string]string{}
		}
		kv := [][2]string{{"konghq.com/plugins", "rate-limit"}, {"konghq.com/tags", "a,b"}, {"konghq.com/protocols", "grpcs"}, {"konghq.com/strip-path", "true"}}[e.rng.IntN(4)]
		if _, on := anns[kv[0]]; on {
			delete(anns, kv[0])
		} else {
			anns[kv[0]] = kv[1]
		}
		c.obj.SetAnnotations(anns)
		c.put()
		return c.kind + " annotation " + kv[0]
	case 6, 7:
		// parentRefs moved between listeners, to one of another protocol, to none.
		gwNS := gatewayv1.Namespace("default")
		switch e.rng.IntN(4) {
		case 0:
			c.common.ParentRefs = nil
		case 1:
			c.common.ParentRefs = append(c.common.ParentRefs, gatewayv1.ParentReference{Name: "kong", Namespace: &gwNS})
		default:
			sn := gatewayv1.SectionName([]string{"http", "https", "tcp", "udp", "tls", "nosuch"}[e.rng.IntN(6)])
			if len(c.common.ParentRefs) == 0 {
				c.common.ParentRefs = []gatewayv1.ParentReference{{Name: "kong", Namespace: &gwNS}}
			}
			c.common.ParentRefs[0].SectionName = &sn
		}
		c.put()
		return c.kind + " parentRefs"
	case 8, 9:
		c.obj.SetName(fmt.Sprintf("%s-copy%d", c.obj.GetName(), e.rv))
		c.obj.SetUID(types.UID(fmt.Sprintf("uid-%d", e.rv)))
		c.add()
		return c.kind + " added"
	case 10:
		c.del()
		return c.kind + " deleted"
	case 11:
		c.obj.SetGeneration(c.obj.GetGeneration() - 1) // a status write
		c.put()
		return c.kind + " status"
	case 12:
		// A listener's port: the Gateway changed, a full Build.
		if j, ok := pick(e, s.Gateways); ok && len(s.Gateways[j].Spec.Listeners) > 0 {
			g := s.Gateways[j].DeepCopy()
			g.ResourceVersion = e.version()
			g.Generation++
			l := &g.Spec.Listeners[e.rng.IntN(len(g.Spec.Listeners))]
			l.Port = gatewayv1.PortNumber([]int32{9000, 9001, 9002}[e.rng.IntN(3)])
			s.Gateways[j] = g
			return "Gateway listener port"
		}
	default:
		if e.changeServiceOf(s, c.obj) {
			return c.kind + " Service changed"
		}
	}
	return "nothing to edit"
}
