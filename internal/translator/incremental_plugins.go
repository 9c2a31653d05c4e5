package translator

import (
	"github.com/kong/go-database-reconciler/pkg/file"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// pluginIndexes are an Incremental round's KongPlugins and KongClusterPlugins (a
// KongClusterPlugin by name, its namespace empty).
type pluginIndexes struct {
	namespaced objectIndex[*kongv1.KongPlugin]
	cluster    objectIndex[*kongv1.KongClusterPlugin]
}

// exists reports whether the plugin n (a KongPlugin or KongClusterPlugin node) is in the
// indexed snapshot.
func (ix pluginIndexes) exists(n objgraph.Node) bool {
	k := nsName{n.Namespace(), n.Name()}
	if n.IsKind(gvkKongClusterPlugin.Group, gvkKongClusterPlugin.Kind) {
		return ix.cluster.get(k) != nil
	}
	return ix.namespaced.get(k) != nil
}

func newPluginIndexes(snap *store.Snapshot) pluginIndexes {
	return pluginIndexes{namespaced: newObjectIndex(snap.KongPlugins), cluster: newObjectIndex(snap.KongClusterPlugins)}
}

// pluginChanges are the previous versions of the plugins that changed (nil: created).
type pluginChanges struct {
	namespaced map[nsName]*kongv1.KongPlugin
	cluster    map[nsName]*kongv1.KongClusterPlugin
}

func (c pluginChanges) empty() bool { return len(c.namespaced) == 0 && len(c.cluster) == 0 }

// update makes ix hold snap's plugins (those changes says changed, when it follows them)
// and returns what changed; ok is false when a name is listed twice.
func (ix *pluginIndexes) update(snap *store.Snapshot, changes *store.Changes) (c pluginChanges, ok bool) {
	if c.namespaced, ok = ix.namespaced.updateFrom(snap.KongPlugins, changes, store.KindKongPlugin); !ok {
		return c, false
	}
	c.cluster, ok = ix.cluster.updateFrom(snap.KongClusterPlugins, changes, store.KindKongClusterPlugin)
	return c, ok
}

func isPluginKind(r kongstate.ObjectRef) bool {
	return r.Group == gvkKongPlugin.Group && (r.Kind == gvkKongPlugin.Kind || r.Kind == gvkKongClusterPlugin.Kind)
}

// changedPlugin is a plugin object of a splicePlugins change: its previous and its new
// version (nil: absent).
type changedPlugin struct {
	gvk      schema.GroupVersionKind
	key      nsName
	old, new pluginObject
}

// pluginObject is a KongPlugin or a KongClusterPlugin: what splicePlugins compares of them.
type pluginObject interface {
	pluginName() string
	global() bool
	GetUID() types.UID
}

type kongPluginObject struct{ *kongv1.KongPlugin }

func (p kongPluginObject) pluginName() string { return p.PluginName }
func (p kongPluginObject) global() bool       { return false }

type clusterPluginObject struct{ *kongv1.KongClusterPlugin }

func (p clusterPluginObject) pluginName() string { return p.PluginName }
func (p clusterPluginObject) global() bool       { return p.Labels[labelGlobal] == "true" }

// splicePlugins is Incremental's splice of KongPlugin and KongClusterPlugin changes, and of
// the Secrets only they read (issue #13 item 2: a rate limit, a CORS origin, a rotated
// configFrom Secret): the plugin entities of each changed plugin are made again from its new
// version, where a full Build puts them (the same ID, attachment and place in State.Plugins),
// and its references (the Secrets it reads) replaced in the graph; every other entity is res's,
// the same pointer, so that a Renderer reuses its bytes. It is taken only where the change
// alters no plugin entity's existence; anything else is a full Build (why says why):
//   - a plugin created or deleted: nothing referred to it, to the KongClusterPlugin of its
//     name (a KongPlugin created shadows it), nor translated it, and no version of a
//     KongClusterPlugin is global (who refers to it would then resolve otherwise);
//   - a plugin changed that translation did not build (pluginParts.read) changes nothing but
//     its global label, or its plugin name while global (global plugins are grouped by it),
//     which is a full Build;
//   - a plugin translation built resolved before (no problem of its configuration), resolves
//     after, without a problem, and keeps its UID, its plugin name and its global label: which
//     entities exist, their IDs and the duplicates left out (plugin name and attachment)
//     are then the same, and so are the problems about it and its referrers;
//   - a changed Secret is read by plugins only (takeSecretsReadOnlyBy), and is no CA
//     certificate's: its plugins are made again, as changed ones.
//
// res is the round's result so far (with the other splices done); prev the previous round,
// whose Secret index holds the new snapshot's already.
func splicePlugins(prev *incrementalRound, opts Options, res Result, changes pluginChanges, secrets map[nsName]bool) (Result, string) {
	remake, why := pluginsToRemake(res, changedPlugins(prev, changes))
	if why != "" {
		return Result{}, why
	}
	if why := pluginsReadingSecrets(prev, res, secrets, remake); why != "" {
		return Result{}, why
	}
	if len(remake) == 0 {
		return res, ""
	}
	b, sources, why := remadePluginSources(prev, opts, remake)
	if why != "" {
		return Result{}, why
	}
	return remakePluginEntities(res, b, sources, remake), ""
}

// changedPlugins are the KongPlugins and KongClusterPlugins of the change, old and new.
func changedPlugins(prev *incrementalRound, changes pluginChanges) []changedPlugin {
	var changed []changedPlugin
	for k, old := range changes.namespaced {
		c := changedPlugin{gvk: gvkKongPlugin, key: k}
		if old != nil {
			c.old = kongPluginObject{old}
		}
		if n := prev.plugins.namespaced.get(k); n != nil {
			c.new = kongPluginObject{n}
		}
		changed = append(changed, c)
	}
	for k, old := range changes.cluster {
		c := changedPlugin{gvk: gvkKongClusterPlugin, key: k}
		if old != nil {
			c.old = clusterPluginObject{old}
		}
		if n := prev.plugins.cluster.get(k); n != nil {
			c.new = clusterPluginObject{n}
		}
		changed = append(changed, c)
	}
	return changed
}

// pluginsToRemake are the changed plugins whose entities are made again; a reason when a
// change cannot be spliced (one created, deleted or renamed that something reads, ...).
func pluginsToRemake(res Result, changed []changedPlugin) (map[objgraph.Node]changedPlugin, string) {
	read, g := res.parts.plugins.read, res.Graph
	referred := func(gvk schema.GroupVersionKind, ns, name string) bool {
		return g.RdepsOf(objgraph.NodeOf(ref(gvk, ns, name))).Len() > 0
	}
	remake := map[objgraph.Node]changedPlugin{} // the plugins whose entities are made again
	for _, c := range changed {
		n := objgraph.NodeOf(ref(c.gvk, c.key.ns, c.key.name))
		resolved, wasRead := read[n]
		if c.old == nil || c.new == nil {
			switch {
			case wasRead || referred(c.gvk, c.key.ns, c.key.name):
				return nil, "a plugin referred to was created or deleted"
			case c.gvk == gvkKongPlugin && referred(gvkKongClusterPlugin, "", c.key.name):
				return nil, "a KongPlugin of a KongClusterPlugin's name was created or deleted"
			case (c.old != nil && c.old.global()) || (c.new != nil && c.new.global()):
				return nil, "a global KongClusterPlugin was created or deleted"
			}
			continue
		}
		if c.old.global() != c.new.global() {
			return nil, "a KongClusterPlugin's global label changed"
		}
		if c.old.pluginName() != c.new.pluginName() && (wasRead || c.new.global()) {
			return nil, "a plugin's plugin name changed"
		}
		if !wasRead {
			continue // nothing looked it up, and nothing will
		}
		if !resolved {
			return nil, "a plugin of the change was left out before"
		}
		if c.old.GetUID() != c.new.GetUID() {
			// Deleted and created again: the problems about it (a duplicate left out)
			// name it with its UID.
			return nil, "a plugin of the change was created again"
		}
		remake[n] = c
	}
	return remake, ""
}

// pluginsReadingSecrets adds to remake the plugins that read a Secret of the change.
func pluginsReadingSecrets(prev *incrementalRound, res Result, secrets map[nsName]bool, remake map[objgraph.Node]changedPlugin) string {
	read, g := res.parts.plugins.read, res.Graph
	for k, caCert := range secrets {
		if caCert {
			return "a CA certificate's Secret changed"
		}
		for _, from := range g.ReferredBy(ref(gvkSecret, k.ns, k.name)) {
			n := objgraph.NodeOf(from)
			if _, ok := remake[n]; ok {
				continue
			}
			c := changedPlugin{key: nsName{from.Namespace, from.Name}}
			if from.Kind == gvkKongPlugin.Kind {
				c.gvk = gvkKongPlugin
				if p := prev.plugins.namespaced.get(c.key); p != nil {
					c.new = kongPluginObject{p}
				}
			} else {
				c.gvk = gvkKongClusterPlugin
				if p := prev.plugins.cluster.get(c.key); p != nil {
					c.new = clusterPluginObject{p}
				}
			}
			if resolved, wasRead := read[n]; !wasRead || !resolved || c.new == nil {
				return "a Secret of the change is read by a plugin left out"
			}
			remake[n] = c
		}
	}
	return ""
}

// remadePluginSources are the new versions' configurations, built by a builder of their own
// with the Secrets they read.
func remadePluginSources(prev *incrementalRound, opts Options, remake map[objgraph.Node]changedPlugin) (*builder, map[objgraph.Node]*pluginSource, string) {
	sub := &store.Snapshot{}
	for _, c := range remake {
		for _, s := range pluginSecretsOf(c.new) {
			if secret := prev.secrets.get(s); secret != nil {
				sub.Secrets = append(sub.Secrets, secret)
			}
		}
	}
	b := newBuilder(sub, opts, nil)
	sources := make(map[objgraph.Node]*pluginSource, len(remake))
	for n, c := range remake {
		var p *pluginSource
		switch o := c.new.(type) {
		case kongPluginObject:
			p = b.pluginFromKongPlugin(o.KongPlugin)
		case clusterPluginObject:
			p = b.pluginFromClusterPlugin(o.KongClusterPlugin)
		}
		if p == nil || len(b.problems) > 0 {
			return nil, nil, "a plugin of the change is left out now"
		}
		sources[n] = p
	}

	return b, sources, ""
}

// remakePluginEntities makes each entity of a remade plugin again, in place, with a fresh
// record of instance names per pluginSource.
func remakePluginEntities(res Result, b *builder, sources map[objgraph.Node]*pluginSource, remake map[objgraph.Node]changedPlugin) Result {
	plugins := make([]*file.FPlugin, len(res.State.Plugins))
	copy(plugins, res.State.Plugins)
	type instance struct {
		obj    objgraph.Node
		source string
	}
	instances := map[instance]*pluginSource{}
	for i, o := range res.parts.plugins.origins {
		p := sources[o.obj]
		if p == nil {
			continue
		}
		if o.global {
			plugins[i] = b.globalPluginEntity(p)
			continue
		}
		inst := instances[instance{o.obj, o.source}]
		if inst == nil {
			fresh := *p
			fresh.usedInstanceNames = map[string]bool{}
			inst = &fresh
			instances[instance{o.obj, o.source}] = inst
		}
		plugins[i] = b.pluginEntity(inst, relationOf(plugins[i]))
	}
	state := *res.State
	state.Plugins = plugins
	if len(plugins) == 0 {
		state.Plugins = nil // as Build leaves it (a plugin read only by objects left out)
	}
	res.State = &state
	from := make(map[objgraph.Node]struct{}, len(remake))
	for n := range remake {
		from[n] = struct{}{}
	}
	res.Graph = res.Graph.ReplaceEdgesFrom(from, b.graph)
	return res
}

// relationOf is the attachment pluginEntity made fp with.
func relationOf(fp *file.FPlugin) pluginRelation {
	var rel pluginRelation
	if fp.Service != nil {
		rel.service = str(fp.Service.ID)
	}
	if fp.Route != nil {
		rel.route = str(fp.Route.ID)
	}
	if fp.Consumer != nil {
		rel.consumer, rel.consumerRef = refIdent(fp.Consumer), fp.Consumer
	}
	if fp.ConsumerGroup != nil {
		rel.consumerGroup = str(fp.ConsumerGroup.ID)
	}
	return rel
}

// pluginSecretsOf are the Secrets a plugin's configuration reads (configFrom, configPatches).
func pluginSecretsOf(p pluginObject) []nsName {
	var out []nsName
	switch o := p.(type) {
	case kongPluginObject:
		if o.ConfigFrom != nil {
			out = append(out, nsName{o.Namespace, o.ConfigFrom.SecretValue.Secret})
		}
		for _, cp := range o.ConfigPatches {
			out = append(out, nsName{o.Namespace, cp.ValueFrom.SecretValue.Secret})
		}
	case clusterPluginObject:
		if o.ConfigFrom != nil {
			out = append(out, nsName{o.ConfigFrom.SecretValue.Namespace, o.ConfigFrom.SecretValue.Secret})
		}
		for _, cp := range o.ConfigPatches {
			out = append(out, nsName{cp.ValueFrom.SecretValue.Namespace, cp.ValueFrom.SecretValue.Secret})
		}
	}
	return out
}
