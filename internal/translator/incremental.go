package translator

import (
	"maps"
	"reflect"
	"runtime"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// Incremental translates snapshot after snapshot and re-translates only what a change can
// affect (issue #13): when, since the previous snapshot, only Ingresses, Services,
// EndpointSlices and Gateway API routes (HTTPRoutes, GRPCRoutes, TCPRoutes, UDPRoutes,
// TLSRoutes) changed, it translates the changed objects together with everything that
// shares a Kong service or a Service with them (the closure: every Ingress and route that
// names one of the Services of a changed or closure Ingress, of a changed Service or of a
// changed EndpointSlice, and those Services and their EndpointSlices) as a snapshot of their
// own, with the same Build, and splices that result into the previous one: their Kong
// services and upstreams, the graph edges out of them and the problems about them are
// replaced; every other entity is the previous one, the same pointer, so that a Renderer
// reuses its bytes. A route's rules have Kong services (and upstreams, and stream route
// names) of their own, so the unchanged Services a closure route names are only read
// (given to the partial translation) and do not pull in the other objects naming them, when
// the previous result holds nothing about them (readOnlyService, incremental_routes.go).
// TCPRoutes, UDPRoutes and TLSRoutes are translated only with GatewayAlpha; without, their
// changes change nothing and are not translated.
//
// The splice runs as the ordered phases of splicePhases (splice_round.go: what changed, found
// once; splice_closure.go: the closure; splice_services.go: its translation and the splice of
// its Kong services; then each family's splice). It is only taken where translation is
// provably local to the closure, and every condition is checked on the objects' old and new
// versions and on the partial result (the phases, spliceable); anything else is a full Build:
//   - only Ingresses, Services, EndpointSlices and Gateway API routes changed, and
//     KongConsumers and the Secrets they read (spliceConsumers' conditions then apply), and
//     KongPlugins, KongClusterPlugins and the Secrets only they read (splicePlugins'
//     conditions then apply; not together with consumers) (every other field of the
//     Snapshot, whatever kinds are added to it later, compares equal: a Gateway,
//     GatewayClass, ReferenceGrant, BackendTLSPolicy or Namespace label changed is a full
//     Build), with the same Options (Now aside, unless the previous
//     result read the clock; RustRegexes aside, unless Rust's verdict on one of its regexes
//     differed from the result);
//   - the closure's Ingresses refer, in the object graph, to nothing but IngressClasses,
//     Services and plugins (spliceIngressPlugins' conditions then apply), its routes to
//     nothing but Services, their parent Gateways and ReferenceGrants; nothing but Ingresses
//     and routes refers to its Services and nothing to its Ingresses, routes and
//     EndpointSlices: a reference to a Secret, a KongIngress, a facade, from a route to a
//     plugin, or from a TCPIngress or UDPIngress, is a full Build;
//   - no closure Ingress has a default backend (the oldest one wins cluster-wide), and its
//     konghq.com/plugins are spliceIngressPlugins' (below), no closure route has
//     konghq.com/plugins, no closure HTTPRoute an ExtensionRef filter (a GRPCRoute's filters
//     are only reported as ignored), no closure route names a Service a BackendTLSPolicy
//     targets (with GatewayAlpha), no closure Service, nor one a closure route reads,
//     has konghq.com/plugins (a plugin of another namespace needs a
//     ReferenceGrant, and one refused leaves no edge in the graph), and no HTTPRoute or
//     GRPCRoute is in the closure under the expressions router (priorities are assigned
//     across all their routes; an L4 route's expression is its own, at priority 1), nor
//     with CombinedServicesFromDifferentHTTPRoutes (a Kong service holds rules of several
//     HTTPRoutes);
//   - the partial result has nothing but services and upstreams (and the closure
//     Ingresses' plugin entities), problems only about the
//     closure, no route name or Kong service name that another object has, and neither
//     result refused a route for a taken name (the winner depends on every route).
//
// A closure Ingress may have or have had konghq.com/plugins (adding it, changing it and
// removing it are among the commonest edits): the closure is translated with the plugins its
// Ingresses may look up, and the entities of the plugins they refer to (old or new) that are
// attached to the closure's routes are replaced by the partial result's, each plugin's
// entities of other Ingresses merged with them by the Ingresses' age, and each plugin's
// entities where their first referrer puts them; every other entity is the previous pointer
// (spliceIngressPlugins, incremental_ingressplugins.go, says when: a plugin also named by
// other than Ingresses, a global one, one with a problem, left out as a duplicate or with
// clashing instance names is a full Build, and so are plugins, Secrets or consumers changed
// in the same round).
//
// KongConsumers and the Secrets only they read (their credentials) may change too: those
// changes are spliced after, on their own (spliceConsumers, incremental_consumers.go, says
// when). So may KongPlugins and KongClusterPlugins and the Secrets only they read
// (configFrom, configPatches) when no plugin entity comes or goes: the changed plugins'
// entities are made again in place, last (splicePlugins, incremental_plugins.go, says when).
//
// So may TLS Secrets that only Ingresses' and TCPIngresses' spec.tls read (cert-manager's
// rotations, a new Certificate's Secret): the certificate each makes is made again from its
// new version (or dropped), where its place among the Secrets tls reads puts it, with the
// hosts it won, and the problems about it made again (spliceCertificates,
// incremental_certificates.go, says when: a certificate several Secrets of one pair share,
// or a Secret a Gateway listener, a Service's client certificate annotation, a plugin or a
// KongConsumer reads, or a CA certificate's, is a full Build).
//
// With routes in the closure, the Result's Gateway API attachment (what the status
// writers read: which routes attach to which listeners, the attachedRoutes counts, each
// route's parents and unresolved backendRefs) is that of the whole new snapshot, made from
// the previous one (gatewayapi.Attachment.Reattach: only the closure's routes attached
// again; anew when one of them moved to other listeners); the unresolved backendRefs, which
// translation adds, are the partial translation's for the closure's routes and the previous
// result's for the others (their backendRefs resolve as before: what they name did not
// change, or they are in the closure). The closure's routes are translated with a view of
// it that holds only them (RoutesOnly): a GRPCRoute's hosts and protocol and an L4 route's
// ports and TLS mode come from its parent listeners, read through its attachment
// (parentListeners). Without routes in the closure, it is the previous one.
//
// A full Build gives the same Result, byte for byte once rendered, with the same problems,
// graph, attachment and parts (TestIncrementalMatchesBuild,
// TestIncrementalMatchesBuildWithHTTPRoutes, TestIncrementalMatchesBuildWithGatewayRoutes,
// TestIncrementalMatchesBuildWithConsumers, TestIncrementalMatchesBuildWithPlugins,
// TestIncrementalMatchesBuildWithIngressPlugins,
// TestIncrementalMatchesBuildWithCertificates).
// An Incremental is used by one goroutine (the sync loop's); its Results are read-only and
// may be read by others.
type Incremental struct {
	prev *incrementalRound
	// settling is the last full translation while its indexes are not built (Settle): prev
	// is then nil.
	settling *settlingRound
	// spareParts is the array of the Kong services' parts of the round before the last
	// (cleared), which the next splice merges its parts into (mergeParts) instead of
	// allocating a cluster-sized array each round (issue #45). Only the Result of that round
	// still refers to it, through its parts, which nothing outside this package reads, and
	// the Incremental reads only its last round's.
	spareParts []servicePart
	// noSizeLimit lets a closure of any size be spliced (tests of small snapshots).
	noSizeLimit bool
	// Stats counts full and partial translations, for tests and benchmarks.
	Stats IncrementalStats
}

// IncrementalStats counts what an Incremental did.
type IncrementalStats struct {
	Full, Partial int
	// LastReason is why the last full Build was not a partial one.
	LastReason string
	// LastClosure and LastClosureRoutes are the numbers of Ingresses and Gateway API routes
	// the last partial translation translated.
	LastClosure, LastClosureRoutes int
	// PartialRoutes counts the partial translations that translated Gateway API routes.
	PartialRoutes int
	// PartialConsumers counts the partial translations that translated KongConsumers
	// (spliceConsumers).
	PartialConsumers int
	// PartialPlugins counts the partial translations that made plugin entities again
	// (splicePlugins).
	PartialPlugins int
	// PartialIngressPlugins counts the partial translations that made plugin entities of
	// closure Ingresses and merged them into the previous result's (spliceIngressPlugins);
	// not those whose closure attaches no plugin (its Ingresses name none, or only missing
	// or refused ones), whose splice only drops the closure's old entities.
	PartialIngressPlugins int
	// PartialCertificates counts the partial translations that re-derived certificates of
	// TLS Secrets (spliceCertificates).
	PartialCertificates int
}

// incrementalRound is the previous translation and the indexes a splice needs.
type incrementalRound struct {
	snap *store.Snapshot
	opts Options
	res  Result

	// The objects of the snapshot, updated in place by the next round (which replaces the
	// whole round when it cannot splice), and the EndpointSlices of each Service and the
	// Ingresses naming it (old and new versions of a changed Ingress are both in the closure,
	// so this index of the previous snapshot is enough).
	ingresses objectIndex[*netv1.Ingress]
	services  objectIndex[*corev1.Service]
	slices    objectIndex[*discoveryv1.EndpointSlice]
	byService byService
	routes    []routeIndex // of each route kind (newRouteIndexes)
	consumers objectIndex[*kongv1.KongConsumer]
	secrets   objectIndex[*corev1.Secret]
	plugins   pluginIndexes
	// credentialHolders is which consumer holds each unique credential value of the result
	// (credentialKeys), made by the first consumer splice (nil before).
	credentialHolders map[string]nsName

	parts []servicePart // by name
	resultIndexes
}

// leftOutReason is why a round whose partial translation left out other objects than the
// closure's Ingresses is translated in full: a left-out Service takes every Ingress and route
// naming it, a KongConsumerGroup its consumers (failclosed.go).
const leftOutReason = "the change leaves objects out for plugins they name"

// spliceLeftOut is the objects left out after the splice: the previous result's, but the
// closure's Ingresses (translated again), and the partial translation's; why says why not
// ("" when it can), when the partial translation left out anything but closure Ingresses
// (nothing refers to an Ingress, so leaving one out takes nothing else with it).
func spliceLeftOut(prev, part map[objgraph.Node]struct{}, closure map[nsName]struct{}) (map[objgraph.Node]struct{}, string) {
	for n := range part {
		if _, in := closure[nsName{n.Namespace(), n.Name()}]; !in || !n.IsKind(gvkIngress.Group, gvkIngress.Kind) {
			return nil, leftOutReason
		}
	}
	if len(prev) == 0 {
		return part, ""
	}
	out := make(map[objgraph.Node]struct{}, len(prev)+len(part))
	for n := range prev {
		if _, in := closure[nsName{n.Namespace(), n.Name()}]; in && n.IsKind(gvkIngress.Group, gvkIngress.Kind) {
			continue
		}
		out[n] = struct{}{}
	}
	for n := range part {
		out[n] = struct{}{}
	}
	if len(out) == 0 {
		return nil, ""
	}
	return out, ""
}

// secretsOfLeftOut says why changed Secrets cannot be spliced ("" when they can): an object
// left out for its plugins reads one (its problems about it are kept as they were).
func secretsOfLeftOut(prev Result, changed map[nsName]bool) string {
	if len(prev.parts.leftOut) == 0 {
		return ""
	}
	for k := range changed {
		for from := range prev.Graph.RdepsOf(objgraph.NodeOf(ref(gvkSecret, k.ns, k.name))).All() {
			if _, out := prev.parts.leftOut[from]; out {
				return "a Secret of the change is read by an object left out for its plugins"
			}
		}
	}
	return ""
}

// closureLeftOut says why a closure cannot be spliced while the previous result left objects
// out ("" when it can): a route or Service left out is in it. (A closure Ingress left out is
// translated again: spliceLeftOut.) The objects left out stay out, with their problems and
// graph edges, only while the change does not reach them (and the plugins, ReferenceGrants
// and Secrets that decide it do not change: those are full Builds or splices that keep
// every plugin's verdict).
func closureLeftOut(leftOut map[objgraph.Node]struct{}, routes map[gatewayapi.RouteKey]struct{}, services ...map[nsName]struct{}) string {
	if len(leftOut) == 0 {
		return ""
	}
	in := func(n objgraph.Node) bool { _, ok := leftOut[n]; return ok }
	for k := range routes {
		if in(objgraph.NodeOf(routeRef(k))) {
			return "the change reaches an object left out for its plugins"
		}
	}
	for _, set := range services {
		for s := range set {
			if in(objgraph.NodeOf(ref(gvkService, s.ns, s.name))) {
				return "the change reaches an object left out for its plugins"
			}
		}
	}
	return ""
}

// maxClosureShare: a closure above this share of the Ingresses is translated in full.
const maxClosureShare = 4

// Build translates snap like Build, re-using the previous result where it can.
func (t *Incremental) Build(snap *store.Snapshot, opts Options) Result {
	if snap == nil {
		snap = &store.Snapshot{}
	}
	t.Settle()
	if opts.HostOwnership || opts.ConsumerScope != "" {
		// Who owns a host, which routes a consumer may use, is decided over the whole
		// snapshot (tenancy.go): no splice.
		t.prev, t.settling = nil, nil
		t.Stats.Full++
		t.Stats.LastReason = "--host-ownership and --consumer-scope translate every round whole"
		return Build(snap, opts)
	}
	if t.prev != nil {
		if res, ok, reason := t.partial(snap, opts); ok {
			t.Stats.Partial++
			return res
		} else {
			t.Stats.LastReason = reason
		}
	} else {
		t.Stats.LastReason = "first translation"
	}
	// A large translation is spread over the cores (buildParallel). The indexes the next
	// round splices with are built later (Settle): a full translation is the start's first
	// round (issue #13), and they are not needed for its push. Built beside the translation,
	// they took a core from it for 15-20 ms.
	var hint *objgraph.Graph
	if t.prev != nil {
		hint = t.prev.res.Graph
	}
	res, _ := buildParallel(snap, opts, runtime.GOMAXPROCS(0), hint)
	t.Stats.Full++
	t.prev, t.settling = nil, &settlingRound{snap: snap, opts: opts, res: res}
	return res
}

// settlingRound is a full translation whose indexes are not built yet.
type settlingRound struct {
	snap *store.Snapshot
	opts Options
	res  Result
}

// Settle builds the indexes of the last full translation that the next round splices with,
// when they are not built yet; Build calls it first. The caller calls it once the CPU is free,
// after the translation's configuration was sent (the controller: after the sync), so that
// neither the first push nor the next round waits for it. Not safe for concurrent use with
// Build (one caller at a time, as for Build).
func (t *Incremental) Settle() {
	s := t.settling
	if s == nil {
		return
	}
	t.settling = nil
	// The snapshot's indexes do not depend on the result: built on another core meanwhile.
	indexed := make(chan *incrementalRound, 1)
	go func() { indexed <- indexSnapshot(s.snap) }()
	parts := resultIndexesOf(s.res)
	t.prev = (<-indexed).withResult(s.opts, s.res, parts)
}

// indexSnapshot is a round's indexes of snap's objects, without its result (withResult).
func indexSnapshot(snap *store.Snapshot) *incrementalRound {
	r := &incrementalRound{snap: snap,
		ingresses: newObjectIndex(snap.Ingresses), services: newObjectIndex(snap.Services),
		slices: newObjectIndex(snap.EndpointSlices), byService: make(byService, len(snap.Services)),
		routes: newRouteIndexes(snap), consumers: newObjectIndex(snap.KongConsumers),
		secrets: newObjectIndex(snap.Secrets), plugins: newPluginIndexes(snap),
	}
	for _, ing := range r.ingresses.m {
		r.addNaming(ing)
	}
	for _, es := range r.slices.m {
		r.byService.addSlice(es)
	}
	return r
}

// resultIndexes are the indexes of a round made of its result's Kong services (addPart).
type resultIndexes struct {
	routeOwner map[string]string // route name -> Kong service name
	// kongServicesOf are the Kong services each Ingress has routes in, kongServicesOfRoute
	// those each Gateway API route has routes in.
	kongServicesOf      map[nsName][]string
	kongServicesOfRoute map[gatewayapi.RouteKey][]string
}

// resultIndexesOf indexes res's Kong services.
func resultIndexesOf(res Result) resultIndexes {
	idx := resultIndexes{routeOwner: map[string]string{}, kongServicesOf: map[nsName][]string{}, kongServicesOfRoute: map[gatewayapi.RouteKey][]string{}}
	for _, p := range res.parts.services {
		idx.addPart(p)
	}
	return idx
}

// withResult completes r with the translation of its snapshot and that translation's indexes.
func (r *incrementalRound) withResult(opts Options, res Result, idx resultIndexes) *incrementalRound {
	r.opts, r.res, r.parts, r.resultIndexes = opts, res, res.parts.services, idx
	return r
}

func (r *resultIndexes) addPart(p servicePart) {
	for _, rt := range p.svc.Routes {
		r.routeOwner[str(rt.Name)] = p.name
	}
	for _, ing := range p.owners {
		k := keyOf(ing)
		r.kongServicesOf[k] = append(r.kongServicesOf[k], p.name)
	}
	for _, k := range p.routes() {
		r.kongServicesOfRoute[k] = append(r.kongServicesOfRoute[k], p.name)
	}
}

func (r *incrementalRound) addNaming(ing *netv1.Ingress) {
	var buf [4]nsName
	k := keyOf(ing)
	for _, s := range appendServicesNamed(buf[:0], ing) {
		r.byService.edges(s).namedBy.Add(k)
	}
}

func (r *incrementalRound) removeNaming(ing *netv1.Ingress) {
	for _, s := range servicesNamed(ing) {
		if e := r.byService[s]; e != nil {
			e.namedBy.Remove(keyOf(ing))
			r.byService.release(s)
		}
	}
}

// servicesNamed are the Services an Ingress's spec names as backends.
func servicesNamed(ing *netv1.Ingress) []nsName { return appendServicesNamed(nil, ing) }

// appendServicesNamed appends servicesNamed(ing) to out: a caller's array on the stack holds
// them when they are few (an Incremental's first round indexes every Ingress).
func appendServicesNamed(out []nsName, ing *netv1.Ingress) []nsName {
	if db := ing.Spec.DefaultBackend; db != nil && db.Service != nil {
		out = append(out, nsName{ing.Namespace, db.Service.Name})
	}
	for at := range ingressPaths(ing) {
		if be := at.path.Backend.Service; be != nil {
			out = append(out, nsName{ing.Namespace, be.Name})
		}
	}
	return out
}

// unchanged reports whether new is old for translation: the same object version, or the
// same object with nothing translation reads changed (a status write: sameContent).
func unchanged(old, new client.Object) bool {
	if old == new {
		return true
	}
	if old.GetUID() != new.GetUID() || old.GetName() != new.GetName() || old.GetNamespace() != new.GetNamespace() {
		return false
	}
	if rv := old.GetResourceVersion(); rv != "" && rv == new.GetResourceVersion() {
		return true
	}
	ot, nt := old.GetCreationTimestamp(), new.GetCreationTimestamp()
	if !ot.Equal(&nt) {
		return false
	}
	same, _ := sameContent(old, new)
	return same
}

// objectIndex holds one kind's objects of the latest snapshot by namespace and name, and by
// object: a snapshot lists, in no stable order, the cache's own objects, and an object that
// did not change is the same pointer as in the previous snapshot, found in byObj without
// reading the object (its name and namespace are scattered in memory: reading them for every
// object was most of the cost of finding what changed). Both maps hold their values in their
// slots: an allocation per object, shared by the two, was 16 bytes of every Ingress, Service,
// EndpointSlice and Secret kept between rounds.
type objectIndex[T interface {
	comparable
	client.Object
}] struct {
	m     map[nsName]T
	byObj map[T]uint64 // the last update that listed each object of m
	round uint64
}

func newObjectIndex[T interface {
	comparable
	client.Object
}](objs []T) objectIndex[T] {
	ix := objectIndex[T]{m: make(map[nsName]T, len(objs)), byObj: make(map[T]uint64, len(objs))}
	ix.update(objs)
	return ix
}

func (ix *objectIndex[T]) get(k nsName) T { return ix.m[k] }

// update makes ix hold objs, and returns the previous version of every object added (the
// zero T), removed or changed (unchanged). ok is false when a key appears twice (the index
// is then not usable).
func (ix *objectIndex[T]) update(objs []T) (changed map[nsName]T, ok bool) {
	ix.round++
	changed = map[nsName]T{}
	var zero T
	listed := 0
	for _, o := range objs {
		if o == zero {
			continue
		}
		if round, known := ix.byObj[o]; known {
			if round == ix.round {
				return nil, false
			}
			ix.byObj[o] = ix.round
			listed++
			continue
		}
		k := keyOf(o)
		old, had := ix.m[k]
		switch {
		case !had:
			changed[k] = zero
		case ix.byObj[old] == ix.round:
			return nil, false
		default:
			if !unchanged(old, o) {
				changed[k] = old
			}
			delete(ix.byObj, old)
		}
		ix.m[k] = o
		ix.byObj[o] = ix.round
		listed++
	}
	if len(ix.m) != listed {
		for k, o := range ix.m {
			if ix.byObj[o] != ix.round {
				changed[k] = o
				delete(ix.m, k)
				delete(ix.byObj, o)
			}
		}
	}
	return changed, true
}

// updateFrom is update(objs), or, when changes follow kind, the update of only the keys
// changes lists (objs being the previous snapshot's with those replaced, nil for gone:
// store.Changes).
func (ix *objectIndex[T]) updateFrom(objs []T, changes *store.Changes, kind store.Kind) (changed map[nsName]T, ok bool) {
	if !changes.Followed(kind) {
		return ix.update(objs)
	}
	followed := changes.Of(kind)
	changed = make(map[nsName]T, len(followed))
	var zero T
	for key, obj := range followed {
		k := nsName{key.Namespace, key.Name}
		o := zero
		if obj != nil {
			if o, ok = obj.(T); !ok {
				return nil, false
			}
		}
		old, had := ix.m[k]
		switch {
		case !had && o == zero:
		case !had:
			changed[k] = zero
			ix.m[k] = o
			ix.byObj[o] = ix.round
		case o == zero:
			changed[k] = old
			delete(ix.m, k)
			delete(ix.byObj, old)
		case old != o:
			if !unchanged(old, o) {
				changed[k] = old
			}
			delete(ix.byObj, old)
			ix.m[k] = o
			ix.byObj[o] = ix.round
		}
	}
	return changed, true
}

// serviceOf is the Service an EndpointSlice belongs to.
func serviceOf(es *discoveryv1.EndpointSlice) (nsName, bool) {
	s := es.Labels[discoveryv1.LabelServiceName]
	return nsName{es.Namespace, s}, s != ""
}

// byService holds, of each Service, its EndpointSlices and the Ingresses whose spec names it
// (serviceEdges): one map of both, where a map of each held a slot and a set for nearly
// every Service (the two are most of the translator's indexes between rounds).
type byService map[nsName]*serviceEdges

// serviceEdges are a Service's EndpointSlices and the Ingresses that name it.
type serviceEdges struct {
	slices, namedBy objgraph.SmallSet[nsName]
}

// edges are s's, added when there are none.
func (m byService) edges(s nsName) *serviceEdges {
	e := m[s]
	if e == nil {
		e = &serviceEdges{}
		m[s] = e
	}
	return e
}

// slicesOf are the EndpointSlices of s (nil: none).
func (m byService) slicesOf(s nsName) *objgraph.SmallSet[nsName] {
	if e := m[s]; e != nil {
		return &e.slices
	}
	return nil
}

// namedBy are the Ingresses that name s (nil: none).
func (m byService) namedBy(s nsName) *objgraph.SmallSet[nsName] {
	if e := m[s]; e != nil {
		return &e.namedBy
	}
	return nil
}

// release forgets s when nothing is left of it.
func (m byService) release(s nsName) {
	if e := m[s]; e != nil && e.slices.Len() == 0 && e.namedBy.Len() == 0 {
		delete(m, s)
	}
}

func (m byService) addSlice(es *discoveryv1.EndpointSlice) {
	if s, ok := serviceOf(es); ok {
		m.edges(s).slices.Add(keyOf(es))
	}
}

func (m byService) removeSlice(es *discoveryv1.EndpointSlice) {
	if s, ok := serviceOf(es); ok && m[s] != nil {
		m[s].slices.Remove(keyOf(es))
		m.release(s)
	}
}

// changesSince is the change set of snap when it follows prev (store.Follower: snap lists
// what changed since prev), nil otherwise: every kind is then compared, list against list.
func changesSince(prev, snap *store.Snapshot) *store.Changes {
	if c := snap.Changes; c != nil && c.Since != 0 && c.Since == prev.Seq {
		return c
	}
	return nil
}

// othersUnchanged reports whether the fields of b that no index of the round follows hold
// what a's do, for translation: every field but Ingresses, Services, EndpointSlices, the
// Gateway API routes, KongConsumers, Secrets, KongPlugins and KongClusterPlugins. Objects
// compare with unchanged, in any order (those of a kind changes follows, only where it says
// they changed), and a change counts only when rule says it matters (relevanceRule, the wake
// filter's: a KongIngress nothing refers to, a Namespace created whose labels no Gateway
// selects by, is no reason for a full translation). SecretsPending and ConfigMapsPending are not compared:
// translation never reads a Secret or ConfigMap cached without its data (the manager loads those the
// result refers to and translates again, those kinds then changed).
// TestOthersUnchangedComparesEveryOtherField fails when a field is added to store.Snapshot
// and compared neither here nor by an index.
func othersUnchanged(a, b *store.Snapshot, changes *store.Changes, rule relevanceRule) bool {
	m := rule.matters
	return a.IngressClass == b.IngressClass && a.IngressClassIsDefault == b.IngressClassIsDefault &&
		sameObject(a.IngressClassParameters, b.IngressClassParameters) &&
		sameKind(a.ConfigMaps, b.ConfigMaps, changes, store.KindConfigMap, m) &&
		sameKind(a.KongConsumerGroups, b.KongConsumerGroups, changes, store.KindKongConsumerGroup, m) &&
		sameKind(a.KongUpstreamPolicies, b.KongUpstreamPolicies, changes, store.KindKongUpstreamPolicy, m) &&
		sameKind(a.KongIngresses, b.KongIngresses, changes, store.KindKongIngress, m) &&
		sameKind(a.TCPIngresses, b.TCPIngresses, changes, store.KindTCPIngress, m) &&
		sameKind(a.UDPIngresses, b.UDPIngresses, changes, store.KindUDPIngress, m) &&
		sameKind(a.KongVaults, b.KongVaults, changes, store.KindKongVault, m) &&
		sameKind(a.ReferenceGrants, b.ReferenceGrants, changes, store.KindReferenceGrant, m) &&
		sameKind(a.KongServiceFacades, b.KongServiceFacades, changes, store.KindKongServiceFacade, m) &&
		sameKind(a.KongCustomEntities, b.KongCustomEntities, changes, store.KindKongCustomEntity, m) &&
		sameKind(a.KongLicenses, b.KongLicenses, changes, store.KindKongLicense, m) &&
		sameKind(a.GatewayClasses, b.GatewayClasses, changes, store.KindGatewayClass, m) &&
		sameKind(a.Gateways, b.Gateways, changes, store.KindGateway, m) &&
		sameKind(a.BackendTLSPolicies, b.BackendTLSPolicies, changes, store.KindBackendTLSPolicy, m) &&
		sameKind(a.ListenerSets, b.ListenerSets, changes, store.KindListenerSet, m) &&
		sameNamespaceLabels(a.NamespaceLabels, b.NamespaceLabels, m)
}

// sameKind reports whether no object of a kind changed in a way that matters from a to b:
// where changes follow the kind, among those it says changed (b being a with those
// replaced); otherwise, list against list.
func sameKind[T interface {
	comparable
	client.Object
}](a, b []T, changes *store.Changes, kind store.Kind, matters func(old, new client.Object) bool) bool {
	if !changes.Followed(kind) {
		return sameObjects(a, b, matters)
	}
	changed := changes.Of(kind)
	if len(changed) == 0 {
		return true
	}
	var none T
	old := make(map[nsName]T, len(a))
	for _, o := range a {
		if o != none {
			old[keyOf(o)] = o
		}
	}
	for key, now := range changed {
		var was client.Object
		if o, had := old[nsName{key.Namespace, key.Name}]; had {
			was = o
		}
		if now != nil {
			if _, isT := now.(T); !isT {
				return false
			}
		}
		if (was == nil && now == nil) || (was != nil && now != nil && unchanged(was, now)) {
			continue
		}
		if matters(was, now) {
			return false
		}
	}
	return true
}

// sameObjects reports whether no object changed in a way that matters from a to b, each
// object of b being compared with a's of its namespace and name (unchanged), in any order.
// A nil entry, or two of one namespace and name, never compares equal.
func sameObjects[T interface {
	comparable
	client.Object
}](a, b []T, matters func(old, new client.Object) bool) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	var none T
	index := make(map[nsName]T, len(a))
	for _, o := range a {
		if o == none {
			return false
		}
		index[keyOf(o)] = o
	}
	if len(index) != len(a) {
		return false
	}
	listed := make(map[nsName]struct{}, len(b))
	kept := 0 // objects of b that a lists
	for _, n := range b {
		if n == none {
			return false
		}
		k := keyOf(n)
		if _, twice := listed[k]; twice {
			return false
		}
		listed[k] = struct{}{}
		o, had := index[k]
		if had {
			kept++
		}
		switch {
		case !had:
			if matters(nil, n) {
				return false
			}
		case !unchanged(o, n) && matters(o, n):
			return false
		}
	}
	if kept < len(index) { // some are gone
		for k, o := range index {
			if _, still := listed[k]; !still && matters(o, nil) {
				return false
			}
		}
	}
	return true
}

// sameObject reports whether a and b are both nil, or the same object unchanged.
func sameObject[T interface {
	comparable
	client.Object
}](a, b T) bool {
	var none T
	if a == none || b == none {
		return a == b
	}
	return unchanged(a, b)
}

// sameNamespaceLabels reports whether no Namespace's labels changed from a to b (a Namespace
// created or deleted among them) in a way that matters, each Namespace as the store reads it
// (metadata).
func sameNamespaceLabels(a, b map[string]map[string]string, matters func(old, new client.Object) bool) bool {
	if maps.EqualFunc(a, b, maps.Equal) {
		return true
	}
	namespace := func(name string, labels map[string]string, exists bool) client.Object {
		if !exists {
			return nil
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	for name, was := range a {
		now, exists := b[name]
		if (!exists || !maps.Equal(was, now)) && matters(namespace(name, was, true), namespace(name, now, exists)) {
			return false
		}
	}
	for name, now := range b {
		if _, existed := a[name]; !existed && matters(nil, namespace(name, now, true)) {
			return false
		}
	}
	return true
}

// takeSecretsReadOnlyBy takes out of changed (changedSecrets') the Secrets that, in g, some
// object reads and every object reading them is one reads accepts, and returns them. A CA
// certificate's Secret (labelled, before or after) stays: it is read by label, not by
// reference.
func takeSecretsReadOnlyBy(g *objgraph.Graph, changed map[nsName]bool, reads func(kongstate.ObjectRef) bool) map[nsName]bool {
	var taken map[nsName]bool
	for k, caCert := range changed {
		if caCert {
			continue
		}
		readers := g.ReferredBy(ref(gvkSecret, k.ns, k.name))
		if len(readers) == 0 || slices.ContainsFunc(readers, func(r kongstate.ObjectRef) bool { return !reads(r) }) {
			continue
		}
		if taken == nil {
			taken = map[nsName]bool{}
		}
		taken[k] = false
		delete(changed, k)
	}
	return taken
}

// changedSecrets updates r's index of Secrets to objs (those changes says changed, when it
// follows them) and returns those that changed for
// translation, each with whether it is a CA certificate's (labelled, before or after); ok is
// false when a name is listed twice. A Secret changed where translation does not look is not
// one of them: translation reads a Secret by reference (an edge in the graph of r's result,
// to missing ones too) or, for CA certificates, by label, so a Secret nothing referred to,
// without that label before or after, changes nothing (a Helm release's Secret, a token).
// previous holds the previous version of each changed one (nil: added).
func (r *incrementalRound) changedSecrets(objs []*corev1.Secret, changes *store.Changes) (changed map[nsName]bool, previous map[nsName]*corev1.Secret, ok bool) {
	updated, ok := r.secrets.updateFrom(objs, changes, store.KindSecret)
	if !ok {
		return nil, nil, false
	}
	caCert := func(s *corev1.Secret) bool { return s != nil && s.Labels[store.CACertLabel] == "true" }
	read := func(s *corev1.Secret) bool {
		return s != nil && (caCert(s) || r.res.Graph.RdepsOf(objgraph.NodeOf(ref(gvkSecret, s.Namespace, s.Name))).Len() > 0)
	}
	for k, old := range updated {
		if n := r.secrets.get(k); read(n) || read(old) {
			if changed == nil {
				changed = map[nsName]bool{}
			}
			changed[k] = caCert(n) || caCert(old)
		}
	}
	return changed, updated, true
}

func sameOptions(a, b Options, clockRead, rustRegexesRead bool) bool {
	if clockRead && !a.Now.Equal(b.Now) {
		return false
	}
	a.Now, b.Now = time.Time{}, time.Time{}
	if !rustRegexesRead {
		// A gateway's router flavor learnt after the first round (Kong 3's
		// traditional_compatible) changes nothing when no regex was checked.
		a.RustRegexes, b.RustRegexes = false, false
	}
	return reflect.DeepEqual(a, b)
}

// localIngress says why an Ingress's translation may depend on other objects than those the
// closure holds ("" when it does not).
func localIngress(ing *netv1.Ingress) string { return ingressLocality(ing, false) }

// ingressLocality is localIngress, but for konghq.com/plugins when plugins is set (the
// plugins it names are then the caller's: spliceIngressPlugins).
func ingressLocality(ing *netv1.Ingress, plugins bool) string {
	if ing.Spec.DefaultBackend != nil {
		return "an Ingress of the change has a default backend"
	}
	if _, ok := ing.Annotations[annPlugins]; ok && !plugins {
		return "an Ingress of the change has plugins"
	}
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			if p.Backend.Service == nil {
				return "an Ingress of the change has a backend that is not a Service"
			}
		}
	}
	if len(ing.Spec.TLS) > 0 {
		return "an Ingress of the change has TLS"
	}
	return ""
}

// spliceable says why the partial result cannot replace its part of the previous one.
func (t *Incremental) spliceable(part Result, subjects map[objgraph.Node]struct{}, plugins bool) string {
	if part.parts.readClock && !t.prev.res.parts.readClock {
		return "the translation read the clock"
	}
	return localResult(part, func(n objgraph.Node) bool { _, in := subjects[n]; return in }, nil, plugins)
}

// otherEntities names a field of st other than Services and Upstreams (or the fields named
// by only, when given) that holds something ("" when none does): a partial translation that
// makes more than Kong services and upstreams cannot be spliced into, or assembled with, the
// rest's.
func otherEntities(st *kongstate.State, only ...string) string {
	if len(only) == 0 {
		only = []string{"Services", "Upstreams"}
	}
	v := reflect.ValueOf(st).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if slices.Contains(only, name) || name == "LicensesKnown" {
			// LicensesKnown follows from the options, the same in every part (sameOptions).
			continue
		}
		if f := v.Field(i); (f.Kind() != reflect.Slice && f.Kind() != reflect.Map) || f.Len() != 0 {
			return v.Type().Field(i).Name
		}
	}
	return ""
}
