package translator

import (
	"slices"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// closureSnapshot makes the closure a snapshot of its own, with the Services its routes read,
// every ReferenceGrant (they decide which backendRefs resolve, and a refusal leaves no edge in
// the graph) and every BackendTLSPolicy (one that targets a Service of the snapshot leaves an
// edge out of the Service, which spliceable refuses); and the problem subjects its
// translation replaces.
func (r *spliceRound) closureSnapshot() string {
	prev, snap := r.prev, r.snap
	sub := &store.Snapshot{IngressClass: snap.IngressClass, IngressClassIsDefault: snap.IngressClassIsDefault,
		IngressClassParameters: snap.IngressClassParameters, ReferenceGrants: snap.ReferenceGrants, BackendTLSPolicies: snap.BackendTLSPolicies}
	for k := range r.closure {
		if ing := prev.ingresses.get(k); ing != nil {
			sub.Ingresses = append(sub.Ingresses, ing)
		}
	}
	for k := range r.routeClosure {
		if rt := r.routeNow(k); rt != nil {
			appendRoute(sub, rt)
		}
	}
	if r.withPlugins {
		if why := r.ingressPluginsRefused(); why != "" {
			return why
		}
		if !closurePlugins(prev, sub.Ingresses, sub) {
			return "an Ingress of the change may name a global plugin"
		}
	}
	for _, set := range []map[nsName]struct{}{r.services, r.readOnly} {
		for s := range set {
			if svc := prev.services.get(s); svc != nil {
				sub.Services = append(sub.Services, svc)
			}
			for k := range prev.byService.slicesOf(s).All() {
				sub.EndpointSlices = append(sub.EndpointSlices, prev.slices.get(k))
			}
		}
	}
	r.sub = sub
	return r.problemSubjects()
}

// problemSubjects are the objects whose problems the closure's translation replaces: the
// closure's Ingresses, routes and Services and the EndpointSlices of those Services, old and
// new. The Services only read are not: the partial result must say nothing about them
// (spliceable), as the previous one did not.
func (r *spliceRound) problemSubjects() string {
	prev := r.prev
	subjects := r.closureNodes()
	for s := range r.services {
		for k := range prev.byService.slicesOf(s).All() {
			subjects[objgraph.NodeOf(ref(gvkEndpointSlice, k.ns, k.name))] = struct{}{}
		}
	}
	for k := range r.sliceChanges {
		if from := prev.res.Graph.ReferredBy(ref(gvkEndpointSlice, k.ns, k.name)); len(from) > 0 {
			return "an EndpointSlice of the change is referred to by a " + from[0].Kind
		}
	}
	for k, old := range r.sliceChanges {
		if old != nil {
			if s, ok := serviceOf(old); ok {
				if _, in := r.services[s]; in {
					subjects[objgraph.NodeOf(ref(gvkEndpointSlice, k.ns, k.name))] = struct{}{}
				}
			}
		}
	}
	r.subjects = subjects
	return ""
}

// closureNodes are the graph nodes of the closure's Ingresses, routes and Services.
func (r *spliceRound) closureNodes() map[objgraph.Node]struct{} {
	nodes := make(map[objgraph.Node]struct{}, len(r.closure)+len(r.routeClosure)+len(r.services))
	for k := range r.closure {
		nodes[objgraph.NodeOf(ref(gvkIngress, k.ns, k.name))] = struct{}{}
	}
	for k := range r.routeClosure {
		nodes[objgraph.NodeOf(routeRef(k))] = struct{}{}
	}
	for s := range r.services {
		nodes[objgraph.NodeOf(ref(gvkService, s.ns, s.name))] = struct{}{}
	}
	return nodes
}

// translateClosure translates the closure. The Gateway API attachment: with routes in the
// closure, that of the new snapshot (which routes attach where, the listeners'
// attachedRoutes), made from the previous one (or anew when a route moved to other
// listeners); the closure's routes are translated with a view of it, so that their
// unresolved backendRefs land in it; the other routes' are the previous result's.
func (r *spliceRound) translateClosure() string {
	prev := r.prev
	r.gw, r.reattached = prev.res.Gateway, true
	if len(r.routeClosure) > 0 {
		keys := make([]gatewayapi.RouteKey, 0, len(r.routeClosure))
		in := gatewayapi.Input{NamespaceLabels: r.snap.NamespaceLabels}
		for k := range r.routeClosure {
			keys = append(keys, k)
			if rt := r.routeNow(k); rt != nil {
				in.Routes = append(in.Routes, routeInput(rt))
			}
		}
		if r.gw, r.reattached = prev.res.Gateway.Reattach(in, keys); !r.reattached {
			r.gw = gatewayapi.Attach(GatewayInput(r.snap, r.opts))
		}
		r.view = r.gw.RoutesOnly(keys)
	}
	if why := closureLeftOut(prev.res.parts.leftOut, r.routeClosure, r.services, r.readOnly); why != "" {
		return why
	}
	r.part = build(r.sub, r.opts, r.view)
	var why string
	if r.leftOut, why = spliceLeftOut(prev.res.parts.leftOut, r.part.parts.leftOut, r.closure); why != "" {
		return why
	}
	return r.t.spliceable(r.part, r.subjects, r.withPlugins)
}

// spliceServices replaces the closure's Kong services in the previous result by the
// partial one's. Nothing of prev is modified before this point. The Kong services of
// prev.parts (sorted by name) are found by binary search, not by a look-up of each name: at
// 10,000 Ingresses hashing every name was a third of the splice.
func (r *spliceRound) spliceServices() string {
	if why := r.dropReplaced(); why != "" {
		return why
	}
	if why := r.mergeParts(); why != "" {
		return why
	}
	prev, part := r.prev, r.part
	state := withServices(prev.res.State, r.merged)
	problems := make([]Problem, 0, len(prev.res.Problems)+len(part.Problems))
	for _, p := range prev.res.Problems {
		if _, in := r.subjects[objgraph.NodeOf(p.Object)]; !in {
			problems = append(problems, p)
		}
	}
	problems = sortProblems(append(problems, part.Problems...))

	outEdges := r.closureNodes() // their edges are the partial translation's
	if !r.reattached {
		r.gw.TakeRefProblems(prev.res.Gateway, func(k gatewayapi.RouteKey) bool {
			_, in := r.routeClosure[k]
			return in
		})
	}
	res := prev.res
	res.State, res.Problems, res.Gateway = state, problems, r.gw
	res.Graph = prev.res.Graph.ReplaceEdgesFrom(outEdges, part.Graph)
	res.parts = &resultParts{services: r.merged, readClock: prev.res.parts.readClock,
		readRustRegexes: prev.res.parts.readRustRegexes || part.parts.readRustRegexes, consumers: prev.res.parts.consumers,
		plugins: prev.res.parts.plugins, certificates: prev.res.parts.certificates, leftOut: r.leftOut}
	r.res = res
	return ""
}

// dropReplaced finds the previous Kong services the closure's translation replaces, and
// checks that they hold nothing but the closure's routes and that the new ones take no name
// another holds.
func (r *spliceRound) dropReplaced() string {
	prev := r.prev
	r.replaced = map[string]bool{}
	for k := range r.closure {
		for _, n := range prev.kongServicesOf[k] {
			r.replaced[n] = true
		}
	}
	for k := range r.routeClosure {
		for _, n := range prev.kongServicesOfRoute[k] {
			r.replaced[n] = true
		}
	}
	r.drop = make([]int, 0, len(r.replaced)) // positions in prev.parts of the replaced ones
	for n := range r.replaced {
		for i := partIndex(prev.parts, n); i < len(prev.parts) && prev.parts[i].name == n; i++ {
			r.drop = append(r.drop, i)
		}
	}
	slices.Sort(r.drop)
	for _, i := range r.drop {
		p := prev.parts[i]
		if p.foreign() {
			return "a Kong service of the closure holds other routes"
		}
		for _, o := range p.owners {
			if _, in := r.closure[keyOf(o)]; !in {
				return "a Kong service of the closure holds routes of another Ingress"
			}
		}
		for _, k := range p.routes() {
			if _, in := r.routeClosure[k]; !in {
				return "a Kong service of the closure holds routes of another " + k.Kind
			}
		}
	}
	for _, p := range r.part.parts.services {
		if p.foreign() {
			return "a new Kong service holds other routes"
		}
		for _, rt := range p.svc.Routes {
			if owner, taken := prev.routeOwner[str(rt.Name)]; taken && !r.replaced[owner] {
				return "a route name is taken"
			}
		}
	}
	return ""
}

// mergeParts is prev.parts without the dropped ones and with the partial translation's, in
// name order, in the Incremental's spare array (never prev.parts' own).
func (r *spliceRound) mergeParts() string {
	prev := r.prev
	merged := slices.Grow(r.t.spareParts[:0], len(prev.parts)-len(r.drop)+len(r.part.parts.services))
	i, d := 0, 0
	keepUpTo := func(end int) { // prev.parts[i:end] but the dropped ones
		for i < end {
			for d < len(r.drop) && r.drop[d] < i {
				d++
			}
			stop := end
			if d < len(r.drop) && r.drop[d] < end {
				stop = r.drop[d]
			}
			merged = append(merged, prev.parts[i:stop]...)
			i = stop
			if i < end {
				i++ // dropped
			}
		}
	}
	for _, np := range r.part.parts.services {
		at := partIndex(prev.parts, np.name)
		if at < i {
			return "the new Kong services are out of order"
		}
		if at < len(prev.parts) && prev.parts[at].name == np.name && !r.replaced[np.name] {
			return "a Kong service name is taken"
		}
		keepUpTo(at)
		merged = append(merged, np)
	}
	keepUpTo(len(prev.parts))
	r.merged = merged
	return ""
}

// keepIndexes updates the indexes for the next round (in place) and makes this round the
// previous one.
func (r *spliceRound) keepIndexes() string {
	prev := r.prev
	next := prev // its indexes are updated in place
	for _, i := range r.drop {
		for _, rt := range prev.parts[i].svc.Routes {
			delete(next.routeOwner, str(rt.Name))
		}
	}
	for k := range r.closure {
		delete(next.kongServicesOf, k)
		if old, changed := r.ingChanges[k]; changed {
			if old != nil {
				next.removeNaming(old)
			}
			if ing := prev.ingresses.get(k); ing != nil {
				next.addNaming(ing)
			}
		}
	}
	for k := range r.routeClosure {
		delete(next.kongServicesOfRoute, k)
	}
	for _, p := range r.part.parts.services {
		next.addPart(p)
	}
	// The previous parts' array is spare once this round is the previous one: cleared, so
	// that it keeps no entity of a Kong service replaced since alive.
	old := prev.parts
	next.snap, next.opts, next.res, next.parts = r.snap, r.opts, r.res, r.merged
	clear(old)
	r.t.prev, r.t.spareParts = next, old[:0]
	if len(r.routeClosure) > 0 {
		r.t.Stats.PartialRoutes++
	}
	return ""
}
