package translator

import (
	"slices"

	"github.com/kong/go-database-reconciler/pkg/file"
	netv1 "k8s.io/api/networking/v1"

	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// closurePlugins are the KongPlugins and KongClusterPlugins the konghq.com/plugins annotations
// of ings may look up (lookupPlugin: KongPlugin ns/name, else KongClusterPlugin name), with the
// Secrets they read, added to sub, the snapshot a closure is translated as; ok is false when
// one of those KongClusterPlugins is global (translated on its own, whoever names it).
func closurePlugins(prev *incrementalRound, ings []*netv1.Ingress, sub *store.Snapshot) (ok bool) {
	namespaced := map[nsName]bool{}
	cluster := map[string]bool{}
	for _, ing := range ings {
		for entry := range pluginEntries(ing.Namespace, ing.Annotations[annPlugins]) {
			ns, name := entry.ns, entry.name
			if kp := prev.plugins.namespaced.get(nsName{ns, name}); kp != nil && !namespaced[nsName{ns, name}] {
				namespaced[nsName{ns, name}] = true
				sub.KongPlugins = append(sub.KongPlugins, kp)
				addPluginSecrets(prev, kongPluginObject{kp}, sub)
			}
			if kcp := prev.plugins.cluster.get(nsName{"", name}); kcp != nil && !cluster[name] {
				if kcp.Labels[labelGlobal] == "true" {
					return false
				}
				cluster[name] = true
				sub.KongClusterPlugins = append(sub.KongClusterPlugins, kcp)
				addPluginSecrets(prev, clusterPluginObject{kcp}, sub)
			}
		}
	}
	return true
}

func addPluginSecrets(prev *incrementalRound, p pluginObject, sub *store.Snapshot) {
	for _, s := range pluginSecretsOf(p) {
		if secret := prev.secrets.get(s); secret != nil && !slices.Contains(sub.Secrets, secret) {
			sub.Secrets = append(sub.Secrets, secret)
		}
	}
}

// pluginBlock is the entities of one plugin source (one "ns:name" a plugin was looked up by),
// contiguous in State.Plugins, with their origins; rank is its place among the blocks (what
// orders those first met outside the Ingresses' phase).
type pluginBlock struct {
	plugins []*file.FPlugin
	origins []pluginOrigin
	rank    int
}

// blocksOf cuts plugins into their sources' blocks.
func blocksOf(plugins []*file.FPlugin, origins []pluginOrigin) []pluginBlock {
	var out []pluginBlock
	for i := 0; i < len(plugins); {
		j := i + 1
		for j < len(plugins) && origins[j].obj == origins[i].obj && origins[j].source == origins[i].source && origins[j].global == origins[i].global {
			j++
		}
		out = append(out, pluginBlock{plugins: plugins[i:j:j], origins: origins[i:j:j], rank: len(out)})
		i = j
	}
	return out
}

// spliceIngressPlugins is Incremental's splice of the plugin entities of a closure of
// Ingresses with konghq.com/plugins (issue #13 item 2: adding, changing or removing the
// annotation on an Ingress is one of the commonest edits). part is the closure translated
// with the plugins its Ingresses may look up; res the round's result with its Kong services
// spliced, its plugins still the previous round's. Each plugin a closure Ingress (old or new
// version) refers to is affected; the entities of the affected plugins that are attached to
// routes of closure Ingresses are replaced by part's, where a full Build puts them, and
// every other entity is res's, the same pointer. It is taken where that is provably what a
// full Build makes; anything else is a full Build (why says why):
//   - only Ingresses refer to an affected plugin (its entities are then one per route of
//     those Ingresses, in the Ingresses' order; a Service, a consumer, a route or a custom
//     entity naming it would combine with them or read them), no KongClusterPlugin an
//     Ingress of the closure may look up is global, and no problem is about an affected
//     plugin, before or in part (a plugin left out, or one of two of a name);
//   - no entity of an affected plugin was left out as a duplicate, nor one of another for
//     it, before or in part (which of two plugins of a name wins on a route depends on the
//     order of their sources; the others' keep theirs);
//   - the instance names of an affected plugin's entities are the short ones, each its
//     own (a clash gives the later entity the long one, which depends on their order).
//
// The blocks of plugin sources are in the order their sources were first referred to
// (pluginFirst): an affected block's first referrer is the Ingress of its first entity (each
// reference of an Ingress with routes makes an entity, as nothing is left out), and within
// one Ingress the order its annotation lists them, which part's order (an Ingress of the
// closure) or res's (another) keeps.
func spliceIngressPlugins(prev *incrementalRound, res, part Result, closure map[nsName]struct{}) (Result, string) {
	affected := affectedIngressPlugins(prev, part, closure)
	if len(affected) == 0 && len(part.State.Plugins) == 0 {
		return res, ""
	}
	old := prev.res.parts.plugins
	if why := ingressPluginsLocal(prev, part, affected); why != "" {
		return Result{}, why
	}
	m := &pluginMerge{closure: closure, affected: affected, sources: map[pluginSourceKey]*pluginSourceMerge{}}
	if why := m.takeBlocks(res, part, old); why != "" {
		return Result{}, why
	}
	blocks, read, why := m.mergedBlocks(prev, res, part, old)
	if why != "" {
		return Result{}, why
	}
	sortPluginBlocks(blocks)
	n := 0
	for _, b := range blocks {
		n += len(b.plugins)
	}
	var plugins []*file.FPlugin
	var origins []pluginOrigin
	if n > 0 {
		plugins, origins = make([]*file.FPlugin, 0, n), make([]pluginOrigin, 0, n)
	}
	for _, b := range blocks {
		plugins, origins = append(plugins, b.plugins...), append(origins, b.origins...)
	}

	// The edges out of a plugin no longer read go (part's replaced those of the plugins it
	// read, with the same or, newly read, new ones).
	gone := map[objgraph.Node]struct{}{}
	for n := range affected {
		if old.read[n] && !read[n] {
			gone[n] = struct{}{}
		}
	}
	if len(gone) > 0 {
		res.Graph = res.Graph.ReplaceEdgesFrom(gone, objgraph.New())
	}
	state := *res.State
	state.Plugins = plugins
	parts := *res.parts
	parts.plugins = pluginParts{origins: origins, read: read, dups: old.dups}
	res.State, res.parts = &state, &parts
	return res, ""
}

// affectedIngressPlugins are the plugins the closure's Ingresses referred to before or refer
// to now.
func affectedIngressPlugins(prev *incrementalRound, part Result, closure map[nsName]struct{}) map[objgraph.Node]struct{} {
	affected := map[objgraph.Node]struct{}{}
	for k := range closure {
		for _, to := range prev.res.Graph.References(ref(gvkIngress, k.ns, k.name)) {
			if isPluginKind(to) {
				affected[objgraph.NodeOf(to)] = struct{}{}
			}
		}
		for to := range part.Graph.DepsOf(objgraph.NodeOf(ref(gvkIngress, k.ns, k.name))).All() {
			if isPluginNode(to) {
				affected[to] = struct{}{}
			}
		}
	}
	return affected
}

// ingressPluginsLocal says why the affected plugins' entities may depend on more than the
// Ingresses ("" when they do not): a duplicate left out, another kind naming one, a global
// one, a problem about one.
func ingressPluginsLocal(prev *incrementalRound, part Result, affected map[objgraph.Node]struct{}) string {
	old := prev.res.parts.plugins
	if len(part.parts.plugins.dups) > 0 {
		return "a plugin entity of the closure was left out as another's duplicate"
	}
	for n := range affected {
		if _, dup := old.dups[n]; dup {
			return "a plugin entity of the change was left out as another's duplicate"
		}
		for _, from := range prev.res.Graph.ReferredBy(n.Ref()) {
			if from.Kind != gvkIngress.Kind || from.Group != gvkIngress.Group {
				return "a plugin of the change is named by a " + from.Kind
			}
		}
		if r := n.Ref(); r.Kind == gvkKongClusterPlugin.Kind {
			if kcp := prev.plugins.cluster.get(nsName{"", r.Name}); kcp != nil && kcp.Labels[labelGlobal] == "true" {
				return "a plugin of the change is global"
			}
		}
	}
	for _, p := range prev.res.Problems {
		if _, in := affected[objgraph.NodeOf(p.Object)]; in {
			return "a plugin of the change has a problem"
		}
	}
	return ""
}

// pluginMerge merges the affected sources' blocks: res's entities of other Ingresses with
// part's, by the Ingresses' age (each Ingress's entities are contiguous in a block, in the
// order of its routes).
type pluginMerge struct {
	closure     map[nsName]struct{}
	affected    map[objgraph.Node]struct{}
	kept        []pluginBlock // the blocks of other sources, as they were
	sources     map[pluginSourceKey]*pluginSourceMerge
	sourceOrder []pluginSourceKey
}

type pluginSourceKey struct {
	obj    objgraph.Node
	source string
}

type pluginSourceMerge struct {
	plugins []*file.FPlugin
	origins []pluginOrigin
}

func (m *pluginMerge) inClosure(ing *netv1.Ingress) bool {
	if ing == nil {
		return false
	}
	_, in := m.closure[keyOf(ing)]
	return in
}

func (m *pluginMerge) sourceOf(o pluginOrigin) *pluginSourceMerge {
	k := pluginSourceKey{o.obj, o.source}
	sm := m.sources[k]
	if sm == nil {
		sm = &pluginSourceMerge{}
		m.sources[k] = sm
		m.sourceOrder = append(m.sourceOrder, k)
	}
	return sm
}

// takeBlocks takes res's blocks (the affected sources' entities of other Ingresses) and
// merges part's into them.
func (m *pluginMerge) takeBlocks(res, part Result, old pluginParts) string {
	for _, b := range blocksOf(res.State.Plugins, old.origins) {
		if _, in := m.affected[b.origins[0].obj]; !in || b.origins[0].global {
			m.kept = append(m.kept, b)
			continue
		}
		sm := m.sourceOf(b.origins[0])
		for i, o := range b.origins {
			if b.plugins[i].Route == nil || o.by == nil {
				return "a plugin of the change is attached to other than routes of Ingresses"
			}
			if !m.inClosure(o.by) {
				sm.plugins, sm.origins = append(sm.plugins, b.plugins[i]), append(sm.origins, o)
			}
		}
	}
	for _, b := range blocksOf(part.State.Plugins, part.parts.plugins.origins) {
		o0 := b.origins[0]
		if _, in := m.affected[o0.obj]; !in || o0.global {
			return "the closure makes a plugin it does not refer to"
		}
		sm := m.sourceOf(o0)
		var plugins []*file.FPlugin
		var origins []pluginOrigin
		i := 0
		for j, o := range b.origins {
			if b.plugins[j].Route == nil || !m.inClosure(o.by) {
				return "a plugin of the closure is attached to other than its routes"
			}
			for ; i < len(sm.origins) && olderThan(sm.origins[i].by, o.by); i++ {
				plugins, origins = append(plugins, sm.plugins[i]), append(origins, sm.origins[i])
			}
			plugins, origins = append(plugins, b.plugins[j]), append(origins, o)
		}
		sm.plugins, sm.origins = append(plugins, sm.plugins[i:]...), append(origins, sm.origins[i:]...)
	}
	return ""
}

// mergedBlocks are the blocks of the result, unsorted, and which plugins it reads. Each merged
// block: its instance names short and distinct, its first referrer its first entity's Ingress.
func (m *pluginMerge) mergedBlocks(prev *incrementalRound, res, part Result, old pluginParts) ([]pluginBlock, map[objgraph.Node]bool, string) {
	read := make(map[objgraph.Node]bool, len(old.read)+len(m.affected))
	for n, ok := range old.read {
		if _, in := m.affected[n]; !in {
			read[n] = ok
		}
	}
	blocks := m.kept
	for _, k := range m.sourceOrder {
		sm := m.sources[k]
		if len(sm.plugins) == 0 {
			continue
		}
		if why := shortInstanceNames(prev, sm.origins[0].obj, sm.plugins); why != "" {
			return nil, nil, why
		}
		first := sm.origins[0].by
		origins := make([]pluginOrigin, len(sm.origins))
		for i, o := range sm.origins {
			o.first = pluginFirst{phase: phaseIngresses, ingress: first}
			origins[i] = o
		}
		blocks = append(blocks, pluginBlock{plugins: sm.plugins, origins: origins})
		read[sm.origins[0].obj] = true
	}
	// What a full Build keeps of a plugin that only objects left out for their plugins look
	// up (kong_plugins_failclosed.go: its reads and edges) is not spliced.
	for n := range m.affected {
		if _, read := read[n]; read || !prev.plugins.exists(n) {
			continue // read by others, or a plugin that does not exist, which nothing reads
		}
		for _, g := range []*objgraph.Graph{prev.res.Graph, part.Graph} {
			for from := range g.RdepsOf(n).All() {
				if _, out := res.parts.leftOut[from]; out {
					return nil, nil, "a plugin of the change is named only by objects left out for their plugins"
				}
			}
		}
	}
	return blocks, read, ""
}

// sortPluginBlocks puts blocks in the order of their sources' first referrers (pluginFirst).
func sortPluginBlocks(blocks []pluginBlock) {
	slices.SortStableFunc(blocks, func(a, b pluginBlock) int {
		fa, fb := a.origins[0].first, b.origins[0].first
		if fa.phase != fb.phase {
			return int(fa.phase) - int(fb.phase)
		}
		if fa.phase == phaseIngresses {
			if fa.ingress != fb.ingress && keyOf(fa.ingress) != keyOf(fb.ingress) {
				if olderThan(fa.ingress, fb.ingress) {
					return -1
				}
				return 1
			}
			// Met first on the same Ingress: in the order its annotation names them.
			return annotationRank(fa.ingress, a.origins[0].source) - annotationRank(fb.ingress, b.origins[0].source)
		}
		return a.rank - b.rank
	})
}

// annotationRank is the place in ing's konghq.com/plugins of the first entry looked up as
// source (lookupPlugin's key).
func annotationRank(ing *netv1.Ingress, source string) int {
	i := 0
	for entry := range pluginEntries(ing.Namespace, ing.Annotations[annPlugins]) {
		if entry.key() == source {
			return i
		}
		i++
	}
	return -1
}

// shortInstanceNames says why the instance names of plugins, the entities of one source of
// plugin obj, may be other than a full Build's ("" when they are not): each must be the
// instance name and 9 hex digits of its attachment's hash, none twice.
func shortInstanceNames(prev *incrementalRound, obj objgraph.Node, plugins []*file.FPlugin) string {
	r := obj.Ref()
	var base string
	switch r.Kind {
	case gvkKongPlugin.Kind:
		if kp := prev.plugins.namespaced.get(nsName{r.Namespace, r.Name}); kp != nil {
			base = kp.InstanceName
		}
	case gvkKongClusterPlugin.Kind:
		if kcp := prev.plugins.cluster.get(nsName{"", r.Name}); kcp != nil {
			base = kcp.InstanceName
		}
	}
	if base == "" {
		return ""
	}
	seen := make(map[string]bool, len(plugins))
	for _, p := range plugins {
		name := str(p.InstanceName)
		if len(name) != len(base)+1+9 || seen[name] {
			return "a plugin of the change has instance names that clash"
		}
		seen[name] = true
	}
	return ""
}
