package translator

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// parallelMinIngresses: a full translation of fewer Ingresses stays on one goroutine (the
// partition and the assembly cost more than they spread).
const parallelMinIngresses = 1024

// buildParallel is Build spread over procs goroutines (issue #13: the first full translation
// of the start was about half the first round's CPU, all on one core). The cluster's
// Ingresses are cut into groups that share no Service (the same locality the Incremental
// splice relies on, incremental.go): each group, with its Services and EndpointSlices, is
// translated as a snapshot of its own on its own goroutine, and everything else (the rest of
// the snapshot: every other kind, and the Ingresses that are not local) by one Build. The
// results are then assembled as the splice assembles them: Kong services and upstreams in
// name order, problems sorted (sortProblems orders them totally), the graphs' edges united.
//
// The assembly checks, on the results, every condition under which the parts could differ
// from the whole; when one fails, the snapshot is translated again by one Build. So the
// Result is Build's, byte for byte once rendered (TestParallelBuildMatchesBuild). notSpread
// says why Build did it alone ("" when it was spread): a small cluster, nothing to spread, or
// a check that failed.
//
// hint, when not nil, is the object graph of an earlier translation of the cluster: an
// Ingress or Service that other kinds referred to there (an HTTPRoute's backend, a facade's
// Service, a TCPIngress's) is kept in the rest from the start, so that a cluster where they
// meet is not translated twice at every full translation.
func buildParallel(snap *store.Snapshot, opts Options, procs int, hint *objgraph.Graph) (res Result, notSpread string) {
	return buildSpread(snap, opts, procs, parallelMinIngresses, hint)
}

// buildSpread is buildParallel with its threshold: snapshots of at least minIngresses
// Ingresses are spread (tests spread small ones).
func buildSpread(snap *store.Snapshot, opts Options, procs, minIngresses int, hint *objgraph.Graph) (res Result, notSpread string) {
	if procs < 2 || len(snap.Ingresses) < minIngresses {
		return Build(snap, opts), "small"
	}
	if opts.HostOwnership || opts.ConsumerScope != "" {
		return Build(snap, opts), "host ownership and consumer scope are decided over the whole snapshot"
	}
	plan, why := planParallel(snap, procs, minIngresses, hint)
	if why != "" {
		return Build(snap, opts), why
	}
	// Each part is checked where it was translated, while the others are still translating:
	// the assembly that is left after the last one ends runs on one core.
	// The caller translates the first group itself: it is running already, where a new
	// goroutine may wait for its thread to be woken (milliseconds on a loaded machine); the
	// rest, usually small, goes to a goroutine of its own.
	parts := make([]Result, len(plan.groups))
	partWhy := make([]string, len(plan.groups))
	build := func(i int) {
		parts[i] = Build(plan.groups[i], opts)
		partWhy[i] = groupLocal(parts[i], i, plan)
	}
	var rest Result
	var restWhy string
	var wg sync.WaitGroup
	for i := 1; i < len(plan.groups); i++ {
		wg.Go(func() { build(i) })
	}
	wg.Go(func() {
		rest = Build(plan.rest, opts)
		restWhy = restApart(rest, plan)
	})
	build(0)
	wg.Wait()
	for _, w := range partWhy {
		if restWhy == "" {
			restWhy = w
		}
	}
	if restWhy != "" {
		return Build(snap, opts), restWhy
	}
	res, why = assembleParallel(rest, parts, plan)
	if why != "" {
		return Build(snap, opts), why
	}
	return res, ""
}

// parallelPlan is a snapshot cut into groups translated on their own and the rest, with the
// group of each object a group translates or may speak about: its Ingresses, the Services
// they name (existing or not) and those Services' EndpointSlices.
type parallelPlan struct {
	groups []*store.Snapshot
	rest   *store.Snapshot

	ingressAt map[nsName]int // Ingress -> its position in the snapshot
	groupAt   []int          // position -> group, -1 for the rest
	// namedBy is, for each Service an Ingress names, the position of the first that names
	// it: every Ingress that names it is of that one's group (a Service joins them), so this
	// is the Service's group too, without a map of its own.
	namedBy    map[nsName]int
	sliceGroup map[nsName]int
}

// serviceGroup is the group of the Service k, ok false when the rest translates it.
func (p *parallelPlan) serviceGroup(k nsName) (group int, ok bool) {
	if i, named := p.namedBy[k]; named && p.groupAt[i] >= 0 {
		return p.groupAt[i], true
	}
	return 0, false
}

// groupOf is the group that translates n (a graph node), ok false when the rest does.
func (p *parallelPlan) groupOf(n kongstate.ObjectRef) (group int, ok bool) {
	k := nsName{n.Namespace, n.Name}
	switch {
	case n.Kind == gvkService.Kind && n.Group == gvkService.Group:
		group, ok = p.serviceGroup(k)
	case n.Kind == gvkEndpointSlice.Kind && n.Group == gvkEndpointSlice.Group:
		group, ok = p.sliceGroup[k]
	case n.Kind == gvkIngress.Kind && n.Group == gvkIngress.Group:
		if i, listed := p.ingressAt[k]; listed && p.groupAt[i] >= 0 {
			group, ok = p.groupAt[i], true
		}
	}
	return group, ok
}

// planParallel cuts snap into at most procs groups of Ingresses, each Ingress with every
// other that names one of its Services, and the rest. It says why not ("" when it did) when
// there is not enough to spread, or when the snapshot lists an object twice (Build then
// decides which one wins).
func planParallel(snap *store.Snapshot, procs, minIngresses int, hint *objgraph.Graph) (*parallelPlan, string) {
	services := make(map[nsName]*corev1.Service, len(snap.Services))
	for _, s := range snap.Services {
		if s == nil {
			continue
		}
		if _, dup := services[keyOf(s)]; dup {
			return nil, "a Service twice"
		}
		services[keyOf(s)] = s
	}
	n := len(snap.Ingresses)
	plan := &parallelPlan{ingressAt: make(map[nsName]int, n), groupAt: make([]int, n)}
	u, why := joinIngresses(snap, services, hint, plan)
	if why != "" {
		return nil, why
	}
	filled, why := u.assignGroups(snap, procs, minIngresses, plan)
	if why != "" {
		return nil, why
	}
	plan.fill(snap, u, services, filled)
	return plan, ""
}

// ingressUnion is the components of Ingresses joined by the Services they name: a union-find
// over the Ingresses' positions in the snapshot.
type ingressUnion struct {
	parent []int
	// The Services each Ingress names: named(i) in one array (an allocation per Ingress was
	// a quarter of the plan's CPU, which runs on one core before the groups start).
	namedAll []nsName
	namedEnd []int
	owner    map[nsName]int // Service -> an Ingress that names it
	tainted  []bool         // by component root: holds an Ingress not local
}

func (u *ingressUnion) find(i int) int {
	for u.parent[i] != i {
		u.parent[i] = u.parent[u.parent[i]]
		i = u.parent[i]
	}
	return i
}

func (u *ingressUnion) named(i int) []nsName {
	if i == 0 {
		return u.namedAll[:u.namedEnd[0]]
	}
	return u.namedAll[u.namedEnd[i-1]:u.namedEnd[i]]
}

// joinIngresses makes the components; a component with a non-local Ingress, or a Service
// whose translation reads other objects without a trace in the graph, is tainted: it stays in
// the rest.
func joinIngresses(snap *store.Snapshot, services map[nsName]*corev1.Service, hint *objgraph.Graph, plan *parallelPlan) (*ingressUnion, string) {
	n := len(snap.Ingresses)
	u := &ingressUnion{parent: make([]int, n), namedAll: make([]nsName, 0, n), namedEnd: make([]int, n), owner: make(map[nsName]int, n)}
	local := make([]bool, n)
	for i, ing := range snap.Ingresses {
		u.parent[i] = i
		if ing == nil {
			if i > 0 {
				u.namedEnd[i] = u.namedEnd[i-1]
			}
			continue
		}
		if _, dup := plan.ingressAt[keyOf(ing)]; dup {
			return nil, "an Ingress twice"
		}
		plan.ingressAt[keyOf(ing)] = i
		local[i] = localIngress(ing) == "" && !referredByOthers(hint, ref(gvkIngress, ing.Namespace, ing.Name))
		u.namedAll = appendServicesNamed(u.namedAll, ing)
		u.namedEnd[i] = len(u.namedAll)
		for _, s := range u.named(i) {
			if svc := services[s]; svc != nil && !localService(svc) || referredByOthers(hint, ref(gvkService, s.ns, s.name)) {
				local[i] = false
			}
			if j, ok := u.owner[s]; ok {
				u.parent[u.find(i)] = u.find(j)
			} else {
				u.owner[s] = i
			}
		}
	}
	u.tainted = make([]bool, n)
	for i, ing := range snap.Ingresses {
		if ing != nil && !local[i] {
			u.tainted[u.find(i)] = true
		}
	}
	return u, ""
}

// assignGroups puts the components in groups, in the snapshot's order, each group about an
// equal share; filled is each group's number of Ingresses.
func (u *ingressUnion) assignGroups(snap *store.Snapshot, procs, minIngresses int, plan *parallelPlan) (filled []int, why string) {
	n := len(snap.Ingresses)
	size := make([]int, n) // by component root
	spread := 0
	for i, ing := range snap.Ingresses {
		if ing != nil && !u.tainted[u.find(i)] {
			size[u.find(i)]++
			spread++
		}
	}
	if spread < minIngresses/2 {
		return nil, "too few local Ingresses"
	}
	share := (spread + procs - 1) / procs
	rootGroup := make([]int, n) // by component root, group + 1 (0: none yet)
	for i, ing := range snap.Ingresses {
		plan.groupAt[i] = -1
		root := u.find(i)
		if ing == nil || u.tainted[root] {
			continue
		}
		if rootGroup[root] == 0 {
			if len(filled) == 0 || filled[len(filled)-1] >= share {
				filled = append(filled, 0)
			}
			rootGroup[root] = len(filled)
			filled[len(filled)-1] += size[root]
		}
		plan.groupAt[i] = rootGroup[root] - 1
	}
	if len(filled) < 2 {
		return nil, "one group"
	}
	return filled, ""
}

// fill makes the groups' snapshots and the rest's: each group's Ingresses with the Services
// they name and those Services' EndpointSlices; everything else in the rest.
func (p *parallelPlan) fill(snap *store.Snapshot, u *ingressUnion, services map[nsName]*corev1.Service, filled []int) {
	p.groups = make([]*store.Snapshot, len(filled))
	for g := range p.groups {
		p.groups[g] = &store.Snapshot{IngressClass: snap.IngressClass, IngressClassIsDefault: snap.IngressClassIsDefault,
			IngressClassParameters: snap.IngressClassParameters, Ingresses: make([]*netv1.Ingress, 0, filled[g])}
	}
	rest := *snap
	rest.Ingresses, rest.Services, rest.EndpointSlices = nil, nil, nil
	p.namedBy = u.owner
	for i, ing := range snap.Ingresses {
		if ing == nil {
			continue
		}
		g := p.groupAt[i]
		if g < 0 {
			rest.Ingresses = append(rest.Ingresses, ing)
			continue
		}
		grp := p.groups[g]
		grp.Ingresses = append(grp.Ingresses, ing)
		for k, s := range u.named(i) {
			if u.owner[s] != i || slices.Contains(u.named(i)[:k], s) {
				continue // listed by an Ingress before it, or by this one already
			}
			if svc := services[s]; svc != nil {
				grp.Services = append(grp.Services, svc)
			}
		}
	}
	for _, s := range snap.Services {
		if s == nil {
			continue
		}
		if _, in := p.serviceGroup(keyOf(s)); !in {
			rest.Services = append(rest.Services, s)
		}
	}
	p.sliceGroup = make(map[nsName]int, len(snap.EndpointSlices))
	for _, es := range snap.EndpointSlices {
		if es == nil {
			continue
		}
		s, ok := serviceOf(es)
		g, in := p.serviceGroup(s)
		if !ok || !in {
			rest.EndpointSlices = append(rest.EndpointSlices, es)
			continue
		}
		p.groups[g].EndpointSlices = append(p.groups[g].EndpointSlices, es)
		p.sliceGroup[keyOf(es)] = g
	}
	p.rest = &rest
}

// referredByOthers reports whether, in the graph g (nil: nothing known), an object other than
// an Ingress refers to n.
func referredByOthers(g *objgraph.Graph, n kongstate.ObjectRef) bool {
	if g == nil {
		return false
	}
	for from := range g.RdepsOf(objgraph.NodeOf(n)).All() {
		if !from.IsKind(gvkIngress.Group, gvkIngress.Kind) {
			return true
		}
	}
	return false
}

// localService reports whether a Service's translation reads no other object, or leaves an
// edge in the graph for each it reads. konghq.com/plugins does not: a plugin of another
// namespace that no ReferenceGrant allows is reported with no edge, so the grants' absence
// from a group's snapshot would go unseen.
func localService(svc *corev1.Service) bool {
	_, plugins := svc.Annotations[annPlugins]
	return !plugins
}

// restApart says why the rest's translation may have depended on the groups' objects, ""
// when it cannot have: it must not have seen them missing (no reference to them or from
// them, no problem about them) nor taken a route name.
func restApart(rest Result, plan *parallelPlan) string {
	if rest.parts.nameTaken {
		return "the rest took a route name"
	}
	for to := range rest.Graph.Referred() {
		if _, in := plan.groupOf(to.Ref()); in {
			return "the rest refers to a group's object"
		}
	}
	for from := range rest.Graph.Edges() {
		if _, in := plan.groupOf(from.Ref()); in {
			return "the rest refers to a group's object"
		}
	}
	for _, p := range rest.Problems {
		if _, in := plan.groupOf(p.Object); in {
			return "the rest reports on a group's object"
		}
	}
	return ""
}

// assembleParallel puts the groups' results and the rest's together as Build would have made
// them; it says why not ("" when it did) when the parts made a name twice. The parts were
// each checked on their own before (groupLocal, restApart).
func assembleParallel(rest Result, parts []Result, plan *parallelPlan) (Result, string) {
	readClock, readRustRegexes := rest.parts.readClock, rest.parts.readRustRegexes
	for _, part := range parts {
		readClock = readClock || part.parts.readClock
		readRustRegexes = readRustRegexes || part.parts.readRustRegexes
	}

	// Kong services by name (each list is sorted by name), no name twice; route names once
	// across every part (Build refuses the second route of a name).
	lists := make([][]servicePart, 0, len(parts)+1)
	lists = append(lists, rest.parts.services)
	routes := 0
	for _, part := range parts {
		lists = append(lists, part.parts.services)
	}
	for _, l := range lists {
		for _, p := range l {
			routes += len(p.svc.Routes)
		}
	}
	routeNames := make(map[string]struct{}, routes)
	for _, l := range lists {
		for _, p := range l {
			for _, rt := range p.svc.Routes {
				if _, taken := routeNames[str(rt.Name)]; taken {
					return Result{}, "a route name twice"
				}
				routeNames[str(rt.Name)] = struct{}{}
			}
		}
	}
	merged, ok := mergeServiceParts(lists)
	if !ok {
		return Result{}, "a Kong service name twice"
	}

	state := withServices(rest.State, merged)
	problems := rest.Problems
	for _, part := range parts {
		problems = append(problems, part.Problems...)
	}
	graphs := make([]*objgraph.Graph, 0, len(parts)+1)
	graphs = append(graphs, rest.Graph)
	for _, part := range parts {
		graphs = append(graphs, part.Graph)
	}
	graph := objgraph.Unite(graphs)
	res := rest
	res.State, res.Problems, res.Graph = state, sortProblems(problems), graph
	res.parts = &resultParts{services: merged, readClock: readClock, readRustRegexes: readRustRegexes, consumers: rest.parts.consumers,
		plugins: rest.parts.plugins, certificates: rest.parts.certificates, leftOut: rest.parts.leftOut}
	return res, ""
}

// groupLocal says why group g's result speaks of objects outside the group, "" when it
// does not (localResult; a Service it refers to must be of the group too).
func groupLocal(part Result, g int, plan *parallelPlan) string {
	if len(part.parts.leftOut) > 0 {
		// A group's objects read no plugin (localIngress, localService); this guards that.
		return leftOutReason
	}
	in := func(n objgraph.Node) bool {
		group, ok := plan.groupOf(n.Ref())
		return ok && group == g
	}
	return localResult(part, in, in, false)
}

// localResult says why part, the translation of some objects only, cannot be assembled with
// (parallel.go) or spliced into (Incremental.spliceable) the translation of the rest, "" when
// it can: it makes Kong services and upstreams only, refuses no route for a taken name, and
// speaks only of its objects: problems about them, references from them, to Services and
// IngressClasses only (and from Gateway API routes to their Gateways and ReferenceGrants). ours says
// whether a node is one of its objects; ourService, whether a Service it refers to is one
// (nil: any Service will do). With plugins, it may also make plugin entities, its Ingresses
// refer to KongPlugins and KongClusterPlugins and those to the Secrets they read
// (spliceIngressPlugins says where those go).
func localResult(part Result, ours, ourService func(objgraph.Node) bool, plugins bool) string {
	if part.parts.nameTaken {
		return "a route name was taken"
	}
	kinds := []string{"Services", "Upstreams"}
	if plugins {
		kinds = append(kinds, "Plugins")
	}
	if other := otherEntities(part.State, kinds...); other != "" {
		return "the translation makes " + other
	}
	for _, p := range part.Problems {
		if !ours(objgraph.NodeOf(p.Object)) {
			return "a problem is reported on " + p.Object.String()
		}
	}
	for from, tos := range part.Graph.Edges() {
		if plugins && isPluginNode(from) {
			// A plugin's configuration read from Secrets.
			for to := range tos.All() {
				if !to.IsKind(gvkSecret.Group, gvkSecret.Kind) {
					return from.String() + " refers to a " + to.Ref().Kind
				}
			}
			continue
		}
		if !ours(from) {
			return from.String() + " gets a reference"
		}
		for to := range tos.All() {
			switch {
			case to.IsKind(gvkIngressClass.Group, gvkIngressClass.Kind):
			case plugins && isPluginNode(to) && from.IsKind(gvkIngress.Group, gvkIngress.Kind):
			case to.IsKind(gvkService.Group, gvkService.Kind):
				if ourService != nil && !ourService(to) {
					return "a reference to " + to.String() + ", another group's Service"
				}
			case isRouteNode(from) && routeMayRefer(to.GroupKind()):
			default:
				return "a reference to a " + to.Ref().Kind
			}
		}
	}
	return ""
}

// isPluginNode reports whether n is a KongPlugin or a KongClusterPlugin: isPluginKind, for a
// graph node.
func isPluginNode(n objgraph.Node) bool { return isPluginKind(n.Ref()) }

// mergeServiceParts merges lists sorted by name into one sorted by name; ok is false when a
// name is in two lists.
func mergeServiceParts(lists [][]servicePart) ([]servicePart, bool) {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]servicePart, 0, n)
	pos := make([]int, len(lists))
	for len(out) < n {
		best := -1
		for i, l := range lists {
			if pos[i] == len(l) {
				continue
			}
			if best < 0 || l[pos[i]].name < lists[best][pos[best]].name {
				best = i
			}
		}
		p := lists[best][pos[best]]
		if len(out) > 0 && out[len(out)-1].name == p.name {
			return nil, false
		}
		out = append(out, p)
		pos[best]++
	}
	return out, true
}
