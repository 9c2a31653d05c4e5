package translator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

const (
	annPlugins = "konghq.com/plugins"
	// extensionRefField is where an HTTPRoute names KongPlugins besides its annotation.
	extensionRefField = "spec.rules[].filters[].extensionRef"
	// labelGlobal makes a KongClusterPlugin apply to every request (translation-rules.md §8.4).
	labelGlobal = "global"
)

// pluginSource is a KongPlugin or KongClusterPlugin reduced to what rendering needs.
type pluginSource struct {
	obj          client.Object
	gvk          schema.GroupVersionKind
	name         string // spec.plugin
	instanceName string
	disabled     bool
	runOn        string
	protocols    []string
	ordering     *kong.PluginOrdering
	config       kong.Configuration
	// key is the "ns:name" it was looked up by (lookupPlugin): one pluginSource per key.
	key string
	// usedInstanceNames are the instance names given so far, to detect hash prefix clashes.
	usedInstanceNames map[string]bool
}

// pluginRelation is one attachment: a Kong service, route, consumer or consumer group, by
// name (a consumer by username, else custom_id). One plugin entity has at most a service or
// a route, and at most a consumer or a consumer group.
type pluginRelation struct {
	service, route, consumer, consumerGroup string
	// consumerRef is the consumer the entity points at (consumerRef), when known: made again
	// by Incremental from an entity (relationOf); else pluginEntity looks it up by ident.
	consumerRef *kong.Consumer
}

// pluginRelations are every attachment of one plugin, by kind, in the order found.
type pluginRelations struct {
	services, routes, consumers, consumerGroups []string
}

// combinations is KIC's combination rule (translation-rules.md §8.2): with consumers, one entity per
// consumer and service and per consumer and route (or per consumer when there is neither);
// else the same with consumer groups; else one per service and one per route.
func (r pluginRelations) combinations() []pluginRelation {
	var out []pluginRelation
	pair := func(owners []string, set func(*pluginRelation, string)) {
		for _, o := range owners {
			if len(r.services)+len(r.routes) == 0 {
				rel := pluginRelation{}
				set(&rel, o)
				out = append(out, rel)
				continue
			}
			for _, s := range r.services {
				rel := pluginRelation{service: s}
				set(&rel, o)
				out = append(out, rel)
			}
			for _, rt := range r.routes {
				rel := pluginRelation{route: rt}
				set(&rel, o)
				out = append(out, rel)
			}
		}
	}
	switch {
	case len(r.consumers) > 0:
		pair(r.consumers, func(rel *pluginRelation, c string) { rel.consumer = c })
	case len(r.consumerGroups) > 0:
		pair(r.consumerGroups, func(rel *pluginRelation, g string) { rel.consumerGroup = g })
	default:
		for _, s := range r.services {
			out = append(out, pluginRelation{service: s})
		}
		for _, rt := range r.routes {
			out = append(out, pluginRelation{route: rt})
		}
	}
	return out
}

// describe names the entities of a relation, for problems.
func (r pluginRelation) describe() string {
	var parts []string
	for _, p := range []struct{ kind, name string }{{"service", r.service}, {"route", r.route}, {"consumer", r.consumer}, {"consumer group", r.consumerGroup}} {
		if p.name != "" {
			parts = append(parts, p.kind+" "+p.name)
		}
	}
	return strings.Join(parts, " and ")
}

// routeSource is an object whose routes its konghq.com/plugins annotation applies to.
type routeSource struct {
	obj client.Object
	gvk schema.GroupVersionKind
}

// routesBySource maps each Gateway API route source, and each other source (all of which
// carry konghq.com/plugins), to its Kong routes among the services names, in the order of
// names: one pass over the routes for all of them, where a pass per source made 1,000
// HTTPRoutes sharing a Service a million comparisons per translation. A cluster of plain
// Ingresses has no sources and builds nothing.
func (b *builder) routesBySource(names []string, gatewaySources, others []routeSource) map[client.Object][]*routeEntry {
	out := map[client.Object][]*routeEntry{}
	for _, src := range gatewaySources {
		out[src.obj] = nil
	}
	for _, src := range others {
		out[src.obj] = nil
	}
	if len(out) == 0 {
		return out
	}
	for _, n := range names {
		for _, r := range b.kongServices[n].routes {
			if routes, ok := out[r.src]; ok {
				out[r.src] = append(routes, r)
			}
		}
	}
	return out
}

// plugins attaches KongPlugins and KongClusterPlugins named by the konghq.com/plugins
// annotation of Ingresses (to their routes), Services (to their Kong services), KongConsumers
// and KongConsumerGroups, combines the attachments as KIC does, and adds the global
// KongClusterPlugins (translation-rules.md §8).
func (b *builder) plugins() {
	a := &pluginAttachment{b: b, resolved: map[string]*pluginSource{}, relations: map[*pluginSource]*pluginRelations{},
		firsts: map[*pluginSource]pluginFirst{}, routeIngress: map[string]*netv1.Ingress{}}
	names := b.kongServiceNames()
	a.attachToRoutes(names)
	a.current = pluginFirst{phase: phaseOthers}
	a.attachToServices(names)
	a.attachToConsumers()
	a.entities()
	b.globalPlugins()
}

// pluginAttachment is plugins()'s work: every plugin named, with what it is attached to, in
// the order it was first named.
type pluginAttachment struct {
	b         *builder
	resolved  map[string]*pluginSource // "ns:name" -> plugin, nil when broken
	relations map[*pluginSource]*pluginRelations
	order     []*pluginSource
	// Where each of order was first referred to (the phase of plugins() and, in the
	// Ingresses' phase, the Ingress), and the Ingress each route of an Ingress source is
	// of: what Incremental's splice of Ingresses' plugins orders plugin entities by
	// (spliceIngressPlugins).
	firsts       map[*pluginSource]pluginFirst
	current      pluginFirst
	routeIngress map[string]*netv1.Ingress
}

// attachList attaches the plugins list names (field is where referrer names them).
func (a *pluginAttachment) attachList(referrer client.Object, gvk schema.GroupVersionKind, field, list string, add func(*pluginRelations)) {
	b := a.b
	for _, entry := range splitList(list, ",") {
		if malformedPluginEntry(entry) {
			// It names no plugin, but it was meant to: never served without it.
			b.problem(referrer, gvk, field, "%q names no plugin (ns:name or name)", entry)
			b.refuse(referrer, gvk, field, kongstate.ObjectRef{}, "the entry %q names no plugin", entry)
		}
	}
	for entry := range pluginEntries(referrer.GetNamespace(), list) {
		if p := a.resolve(referrer, gvk, field, entry); p != nil {
			b.refer(referrer, gvk, kongstate.RefFor(p.obj, p.gvk))
			if _, seen := a.relations[p]; !seen {
				a.order = append(a.order, p)
				a.relations[p] = &pluginRelations{}
				a.firsts[p] = a.current
			}
			add(a.relations[p])
		}
	}
}

// resolve is the plugin entry names for referrer; nil, with the problem and the referrer
// refused, when it cannot be used.
func (a *pluginAttachment) resolve(referrer client.Object, gvk schema.GroupVersionKind, field string, entry pluginEntry) *pluginSource {
	b := a.b
	ns, name := entry.ns, entry.name
	if entry.remote && !b.grantAllows(referrer, gvk, ns, name) {
		// The referrer still names the plugin: when a grant comes, or the plugin changes,
		// it is translated again (the graph must know).
		b.refer(referrer, gvk, ref(gvkKongPlugin, ns, name))
		b.problem(referrer, gvk, field, "no grant found to referenced %q plugin in the requested remote KongPlugin bind", ns+"/"+name)
		b.refuse(referrer, gvk, field, kongstate.ObjectRef{}, "no ReferenceGrant in namespace %s lets it use KongPlugin %q", ns, name)
		return nil
	}
	p := b.lookupPlugin(ns, name, a.resolved)
	if p != nil {
		return p
	}
	b.refer(referrer, gvk, ref(gvkKongPlugin, ns, name))
	b.refer(referrer, gvk, ref(gvkKongClusterPlugin, "", name))
	if refused := b.pluginObject(ns, name); refused != nil {
		b.refuse(referrer, gvk, field, kongstate.RefFor(refused, gvkOf(refused)), "%s %q is refused (its own problems say why)", gvkOf(refused).Kind, name)
		return nil
	}
	if _, known := a.resolved[entry.key()]; !known {
		b.problem(referrer, gvk, field, "referenced KongPlugin or KongClusterPlugin %q does not exist", name)
	}
	b.refuse(referrer, gvk, field, kongstate.ObjectRef{}, "KongPlugin or KongClusterPlugin %q does not exist", name)
	return nil
}

// attach attaches the plugins referrer's konghq.com/plugins names.
func (a *pluginAttachment) attach(referrer client.Object, gvk schema.GroupVersionKind, add func(*pluginRelations)) {
	a.attachList(referrer, gvk, annField(annPlugins), referrer.GetAnnotations()[annPlugins], add)
}

// attachToRoutes attaches the routes' plugins: Gateway API routes' (the route object's
// annotation and each Kong route's ExtensionRef filters, per Kong route), then by source in
// KIC's order the Ingresses', TCPIngresses' and UDPIngresses' that carry the annotation (the
// others attach nothing).
func (a *pluginAttachment) attachToRoutes(names []string) {
	b := a.b
	var sources []routeSource
	addSource := func(obj client.Object, gvk schema.GroupVersionKind) {
		if _, ok := obj.GetAnnotations()[annPlugins]; ok {
			sources = append(sources, routeSource{obj, gvk})
		}
	}
	for _, ing := range b.ingresses {
		addSource(ing, gvkIngress)
	}
	for _, ti := range b.tcpIngresses {
		addSource(ti, gvkTCPIngress)
	}
	for _, ui := range b.udpIngresses {
		addSource(ui, gvkUDPIngress)
	}
	gatewaySources := b.gatewayRouteSources()
	routesOf := b.routesBySource(names, gatewaySources, sources)
	a.current = pluginFirst{phase: phaseGatewayRoutes}
	for _, src := range gatewaySources {
		routes := routesOf[src.obj]
		sort.Slice(routes, func(i, j int) bool { return *routes[i].Name < *routes[j].Name })
		for _, r := range routes {
			name := *r.Name
			add := func(rs *pluginRelations) { rs.routes = append(rs.routes, name) }
			a.attachList(src.obj, src.gvk, annField(annPlugins), src.obj.GetAnnotations()[annPlugins], add)
			a.attachList(src.obj, src.gvk, extensionRefField, strings.Join(r.extraPlugins, ","), add)
		}
	}
	for _, src := range sources {
		a.current = pluginFirst{phase: phaseOthers}
		ing, isIngress := src.obj.(*netv1.Ingress)
		if isIngress {
			a.current = pluginFirst{phase: phaseIngresses, ingress: ing}
		}
		var routes []string
		for _, r := range routesOf[src.obj] {
			routes = append(routes, *r.Name)
			if isIngress {
				a.routeIngress[*r.Name] = ing
			}
		}
		sort.Strings(routes)
		for _, r := range routes {
			a.attach(src.obj, src.gvk, func(rs *pluginRelations) { rs.routes = append(rs.routes, r) })
		}
	}
}

// attachToServices attaches the Kong services' plugins, by Kong service name. A facade's
// annotation wins over its Service's; the one that names the plugins is the referrer.
func (a *pluginAttachment) attachToServices(names []string) {
	for _, n := range names {
		ks := a.b.kongServices[n]
		if bk := a.b.backingService(ks); bk != nil {
			referrer, gvk := client.Object(bk.svc), gvkService
			if _, own := bk.owner.GetAnnotations()[annPlugins]; own {
				referrer, gvk = bk.owner, bk.gvk
			}
			if _, ok := bk.svc.Annotations[annPlugins]; ok {
				a.attach(referrer, gvk, func(rs *pluginRelations) { rs.services = append(rs.services, n) })
			}
		}
	}
}

// attachToConsumers attaches the consumers' plugins, then the consumer groups'.
func (a *pluginAttachment) attachToConsumers() {
	b := a.b
	for _, kc := range b.consumerObjs {
		if _, ok := kc.Annotations[annPlugins]; ok {
			id := b.consumerIdents[kc.Namespace+"/"+kc.Name]
			a.attach(kc, gvkKongConsumer, func(rs *pluginRelations) { rs.consumers = append(rs.consumers, id) })
		}
	}
	for _, g := range b.state.ConsumerGroups {
		obj := b.consumerGroupObjs[str(g.Name)]
		if _, ok := obj.Annotations[annPlugins]; ok {
			name := str(g.Name)
			a.attach(obj, gvkKongConsumerGroup, func(rs *pluginRelations) { rs.consumerGroups = append(rs.consumerGroups, name) })
		}
	}
}

// entities makes one plugin entity per plugin and combination (translation-rules.md §8.2):
// Kong allows one plugin of a name on a combination, the first named.
func (a *pluginAttachment) entities() {
	b := a.b
	taken := map[string]client.Object{} // plugin name + relation -> first plugin object
	for _, p := range a.order {
		rels := a.relations[p]
		if n := rels.combinationCount(); n > MaxPluginCombinations && rels.multiplied() {
			b.refuseBound(p.obj, p.gvk, "", "its consumers (or consumer groups) times its services and routes make %d plugin entities, more than the bound of %d for one plugin object",
				n, MaxPluginCombinations)
			continue
		}
		for _, rel := range rels.combinations() {
			key := p.name + "\x00" + rel.service + "\x00" + rel.route + "\x00" + rel.consumer + "\x00" + rel.consumerGroup
			if first, dup := taken[key]; dup {
				b.parts.plugins.noteDup(objgraph.NodeOf(kongstate.RefFor(p.obj, p.gvk)), objgraph.NodeOf(kongstate.RefFor(first, gvkOf(first))))
				if first != p.obj {
					b.problem(p.obj, p.gvk, "", "plugin %q is already attached to %s by %s; Kong allows one plugin of a name there, this one is left out",
						p.name, rel.describe(), kongstate.RefFor(first, gvkOf(first)).String())
				}
				continue
			}
			taken[key] = p.obj
			b.state.Plugins = append(b.state.Plugins, b.pluginEntity(p, rel))
			b.parts.plugins.origins = append(b.parts.plugins.origins, pluginOrigin{obj: objgraph.NodeOf(kongstate.RefFor(p.obj, p.gvk)), source: p.key,
				first: a.firsts[p], by: a.routeIngress[rel.route]})
		}
	}
}

func gvkOf(o client.Object) schema.GroupVersionKind {
	if _, ok := o.(*kongv1.KongClusterPlugin); ok {
		return gvkKongClusterPlugin
	}
	return gvkKongPlugin
}

// pluginEntry is an entry of a konghq.com/plugins annotation: the namespace and name of the
// plugin it names, remote when written "ns:name" (a KongPlugin of another namespace, which
// needs a ReferenceGrant).
type pluginEntry struct {
	ns, name string
	remote   bool
}

// key is the "ns:name" lookupPlugin looks the entry up by (pluginSource's key).
func (e pluginEntry) key() string { return e.ns + ":" + e.name }

// pluginEntries are the entries of list, the konghq.com/plugins annotation of an object of
// namespace ns, in its order; a malformed one (":name", "ns:") names nothing and is left out.
func pluginEntries(ns, list string) iter.Seq[pluginEntry] {
	return func(yield func(pluginEntry) bool) {
		for _, entry := range splitList(list, ",") {
			if malformedPluginEntry(entry) {
				continue
			}
			e := pluginEntry{ns: ns, name: entry}
			if remoteNS, remoteName, remote := strings.Cut(entry, ":"); remote {
				e = pluginEntry{ns: remoteNS, name: remoteName, remote: true}
			}
			if !yield(e) {
				return
			}
		}
	}
}

// malformedPluginEntry: an entry of konghq.com/plugins that names no plugin (":name", "ns:").
func malformedPluginEntry(entry string) bool {
	return strings.HasPrefix(entry, ":") || strings.HasSuffix(entry, ":")
}

// lookupPlugin finds KongPlugin ns/name, else KongClusterPlugin name (translation-rules.md §8.1).
// A plugin whose configuration cannot be built is reported once and resolves to nil.
func (b *builder) lookupPlugin(ns, name string, cache map[string]*pluginSource) *pluginSource {
	key := pluginEntry{ns: ns, name: name}.key()
	if p, ok := cache[key]; ok {
		return p
	}
	b.indexPlugins()
	if kp := b.kongPlugins[ns+"/"+name]; kp != nil {
		p := b.pluginFromKongPlugin(kp)
		if p != nil {
			p.key = key
		}
		cache[key] = p
		return p
	}
	if kcp := b.clusterPlugins[name]; kcp != nil {
		p := b.pluginFromClusterPlugin(kcp)
		if p != nil {
			p.key = key
		}
		cache[key] = p
		return p
	}
	return nil
}

// pluginObject is the object lookupPlugin resolves ns/name to (KongPlugin ns/name, else
// KongClusterPlugin name), or nil when there is none.
func (b *builder) pluginObject(ns, name string) client.Object {
	b.indexPlugins()
	if kp := b.kongPlugins[ns+"/"+name]; kp != nil {
		return kp
	}
	if kcp := b.clusterPlugins[name]; kcp != nil {
		return kcp
	}
	return nil
}

// indexPlugins indexes the snapshot's plugins by namespace and name, once.
func (b *builder) indexPlugins() {
	if b.kongPlugins == nil {
		b.kongPlugins = map[string]*kongv1.KongPlugin{}
		b.clusterPlugins = map[string]*kongv1.KongClusterPlugin{}
		for _, kp := range b.snap.KongPlugins {
			if kp != nil {
				b.kongPlugins[kp.Namespace+"/"+kp.Name] = kp
			}
		}
		for _, kcp := range b.snap.KongClusterPlugins {
			if kcp != nil {
				b.clusterPlugins[kcp.Name] = kcp
			}
		}
	}
}

func (b *builder) pluginFromKongPlugin(kp *kongv1.KongPlugin) *pluginSource {
	if why := b.pluginDenied(kp); why != "" {
		b.problem(kp, gvkKongPlugin, "plugin", "%s", why)
		b.parts.plugins.noteRead(ref(gvkKongPlugin, kp.Namespace, kp.Name), false)
		return nil
	}
	var from *secretRef
	if kp.ConfigFrom != nil {
		from = &secretRef{kp.Namespace, kp.ConfigFrom.SecretValue.Secret, kp.ConfigFrom.SecretValue.Key}
	}
	var patches []configPatch
	for _, cp := range kp.ConfigPatches {
		patches = append(patches, configPatch{cp.Path, secretRef{kp.Namespace, cp.ValueFrom.SecretValue.Secret, cp.ValueFrom.SecretValue.Key}})
	}
	p := b.pluginSource(kp, gvkKongPlugin, kp.PluginName, kp.InstanceName, kp.Disabled, kp.RunOn, kp.Protocols, kp.Ordering, kp.Config.Raw, from, patches)
	b.parts.plugins.noteRead(ref(gvkKongPlugin, kp.Namespace, kp.Name), p != nil)
	return p
}

func (b *builder) pluginFromClusterPlugin(kcp *kongv1.KongClusterPlugin) *pluginSource {
	var from *secretRef
	if kcp.ConfigFrom != nil {
		s := kcp.ConfigFrom.SecretValue
		from = &secretRef{s.Namespace, s.Secret, s.Key}
	}
	var patches []configPatch
	for _, cp := range kcp.ConfigPatches {
		s := cp.ValueFrom.SecretValue
		patches = append(patches, configPatch{cp.Path, secretRef{s.Namespace, s.Secret, s.Key}})
	}
	p := b.pluginSource(kcp, gvkKongClusterPlugin, kcp.PluginName, kcp.InstanceName, kcp.Disabled, kcp.RunOn, kcp.Protocols, kcp.Ordering, kcp.Config.Raw, from, patches)
	b.parts.plugins.noteRead(ref(gvkKongClusterPlugin, "", kcp.Name), p != nil)
	return p
}

type secretRef struct{ namespace, name, key string }

type configPatch struct {
	path  string
	value secretRef
}

// pluginSource builds the plugin's configuration (translation-rules.md §8.3). Any failure is
// reported on the plugin object and drops the plugin with all its instances.
func (b *builder) pluginSource(obj client.Object, gvk schema.GroupVersionKind, name, instanceName string, disabled bool, runOn string,
	protocols []kongv1.KongProtocol, ordering *kong.PluginOrdering, raw []byte, from *secretRef, patches []configPatch) *pluginSource {
	self := kongstate.RefFor(obj, gvk)
	label := fmt.Sprintf("%s '%s'", gvk.Kind, strings.TrimPrefix(self.Namespace+"/"+self.Name, "/"))
	if from != nil {
		b.refer(obj, gvk, ref(gvkSecret, from.namespace, from.name))
	}
	for _, cp := range patches {
		b.refer(obj, gvk, ref(gvkSecret, cp.value.namespace, cp.value.name))
	}
	raw = []byte(strings.TrimSpace(string(raw)))
	if len(raw) > 0 && string(raw) != "null" && from != nil {
		b.problem(obj, gvk, "configFrom", "%s has both Config and ConfigFrom set", label)
		return nil
	}
	conf := []byte("{}")
	if len(raw) > 0 && string(raw) != "null" {
		conf = raw
	}
	if from != nil {
		v, err := b.secretValue(*from)
		if err != nil {
			b.problem(obj, gvk, "configFrom", "%s: %v", label, err)
			return nil
		}
		j, err := sigsyaml.YAMLToJSON(v)
		if err != nil {
			// The parser's message quotes the text it failed on: a Secret's value never
			// leaves it (docs/security.md, item 3), so only where it failed is said.
			b.problem(obj, gvk, "configFrom", "%s: could not parse configuration from secret %s/%s key %q: not valid YAML or JSON%s", label, from.namespace, from.name, from.key, yamlErrorPlace(err))
			return nil
		}
		conf = j
	}
	for i, cp := range patches {
		field := fmt.Sprintf("configPatches[%d]", i)
		v, err := b.secretValue(cp.value)
		if err != nil {
			b.problem(obj, gvk, field, "%s: %v", label, err)
			return nil
		}
		if !json.Valid(v) {
			b.problem(obj, gvk, field, "%s: value of secret %s/%s key %q is not valid JSON", label, cp.value.namespace, cp.value.name, cp.value.key)
			return nil
		}
		if cp.path == "" {
			conf = v
			continue
		}
		op, _ := json.Marshal([]map[string]any{{"op": "add", "path": cp.path, "value": json.RawMessage(v)}})
		patch, err := jsonpatch.DecodePatch(op)
		if err == nil {
			conf, err = patch.Apply(conf)
		}
		if err != nil {
			b.problem(obj, gvk, field, "%s: failed to apply patch at %q: %v", label, cp.path, err)
			return nil
		}
	}
	if len(conf) > MaxPluginConfigBytes {
		b.problem(obj, gvk, "config", "%s: the configuration is %d bytes, more than the bound of %d for one plugin (docs/security.md)", label, len(conf), MaxPluginConfigBytes)
		return nil
	}
	var config kong.Configuration
	if err := json.Unmarshal(conf, &config); err != nil {
		b.problem(obj, gvk, "config", "%s: could not parse plugin configuration: %v", label, err)
		return nil
	}
	if !b.validPluginConfig(obj, gvk, label, name, conf) {
		return nil
	}
	p := &pluginSource{obj: obj, gvk: gvk, name: name, instanceName: instanceName, disabled: disabled,
		runOn: runOn, ordering: ordering, config: config, usedInstanceNames: map[string]bool{}}
	for _, pr := range protocols {
		p.protocols = append(p.protocols, string(pr))
	}
	return p
}

func (b *builder) secretValue(sr secretRef) ([]byte, error) {
	s := b.secrets[sr.namespace+"/"+sr.name]
	if s == nil {
		return nil, fmt.Errorf("secret %s/%s not found", sr.namespace, sr.name)
	}
	v, ok := s.Data[sr.key]
	if !ok {
		if sv, ok := s.StringData[sr.key]; ok {
			return []byte(sv), nil
		}
		return nil, fmt.Errorf("secret %s/%s has no key %q", sr.namespace, sr.name, sr.key)
	}
	return v, nil
}

// pluginEntity renders one attachment of p (translation-rules.md §8.3).
func (b *builder) pluginEntity(p *pluginSource, rel pluginRelation) *file.FPlugin {
	fp := &file.FPlugin{Plugin: kong.Plugin{
		ID:   kong.String(kongstate.PluginID(b.opts.Workspace, p.name, rel.service, rel.route, rel.consumer, rel.consumerGroup)),
		Name: kong.String(p.name),
		Tags: b.entityTags(p.obj, p.gvk),
	}}
	relation := ""
	if rel.service != "" {
		fp.Service = &kong.Service{ID: kong.String(rel.service)}
		relation += "_service-" + rel.service
	}
	if rel.route != "" {
		fp.Route = &kong.Route{ID: kong.String(rel.route)}
		relation += "_route-" + rel.route
	}
	if rel.consumer != "" {
		c := rel.consumerRef
		if c == nil {
			c = b.consumerRefs[rel.consumer]
		}
		if c == nil { // not a translated consumer's ident (cannot be): never a global plugin
			c = &kong.Consumer{ID: kong.String(rel.consumer)}
		}
		copied := *c
		fp.Consumer = &copied
		relation += "_consumer-" + rel.consumer
	}
	if rel.consumerGroup != "" {
		fp.ConsumerGroup = &kong.ConsumerGroup{ID: kong.String(rel.consumerGroup)}
		relation += "_group-" + rel.consumerGroup
	}
	b.fillPlugin(fp, p)
	if p.instanceName != "" {
		sum := sha256.Sum256([]byte(relation))
		h := hex.EncodeToString(sum[:])
		name := p.instanceName + "-" + h[:9]
		if p.usedInstanceNames[name] {
			name = p.instanceName + "-" + h
		}
		p.usedInstanceNames[name] = true
		fp.InstanceName = kong.String(name)
	}
	return fp
}

func (b *builder) fillPlugin(fp *file.FPlugin, p *pluginSource) {
	if len(p.config) > 0 {
		fp.Config = p.config.DeepCopy()
	}
	if len(p.protocols) > 0 {
		fp.Protocols = kong.StringSlice(p.protocols...)
	}
	if p.runOn != "" {
		fp.RunOn = kong.String(p.runOn)
	}
	if p.ordering != nil {
		fp.Ordering = p.ordering.DeepCopy()
	}
	if p.disabled {
		fp.Enabled = kong.Bool(false)
	}
}

// globalPlugins adds KongClusterPlugins labelled global: "true" (translation-rules.md §8.4). When
// two share a plugin name, none of them is applied, as in KIC.
func (b *builder) globalPlugins() {
	byName := map[string][]*kongv1.KongClusterPlugin{}
	var names []string
	for _, kcp := range b.snap.KongClusterPlugins {
		if kcp == nil || kcp.Labels[labelGlobal] != "true" {
			continue
		}
		if _, ok := byName[kcp.PluginName]; !ok {
			names = append(names, kcp.PluginName)
		}
		byName[kcp.PluginName] = append(byName[kcp.PluginName], kcp)
	}
	sort.Strings(names)
	for _, n := range names {
		if same := byName[n]; len(same) != 1 {
			for _, kcp := range same[1:] {
				b.contend("global plugin "+n, kcp, gvkKongClusterPlugin, same[0], gvkKongClusterPlugin)
			}
			continue
		}
		p := b.pluginFromClusterPlugin(byName[n][0])
		if p == nil {
			continue
		}
		b.state.Plugins = append(b.state.Plugins, b.globalPluginEntity(p))
		b.parts.plugins.origins = append(b.parts.plugins.origins, pluginOrigin{obj: objgraph.NodeOf(kongstate.RefFor(p.obj, p.gvk)), global: true,
			first: pluginFirst{phase: phaseGlobal}})
	}
}

// globalPluginEntity renders p, a global KongClusterPlugin: attached to nothing, its
// instance name as given.
func (b *builder) globalPluginEntity(p *pluginSource) *file.FPlugin {
	fp := &file.FPlugin{Plugin: kong.Plugin{
		ID:   kong.String(kongstate.PluginID(b.opts.Workspace, p.name, "", "", "", "")),
		Name: kong.String(p.name),
		Tags: b.entityTags(p.obj, p.gvk),
	}}
	b.fillPlugin(fp, p)
	if p.instanceName != "" {
		fp.InstanceName = kong.String(p.instanceName)
	}
	return fp
}

// grantAllows reports whether a ReferenceGrant in namespace ns lets referrer (of kind gvk)
// refer to the KongPlugin name there (translation-rules.md §8.1): from {group, kind, namespace of
// the referrer} to {configuration.konghq.com, KongPlugin, name or any}.
func (b *builder) grantAllows(referrer client.Object, gvk schema.GroupVersionKind, ns, name string) bool {
	return b.granted(referrer, gvk, gvkKongPlugin.Group, gvkKongPlugin.Kind, ns, name)
}

// validPluginConfig checks conf against Kong's schema of the plugin, when konductor knows it
// (kongrules), so that a configuration Kong would refuse is left out and reported here, like a
// bad regex, instead of making a DB-less gateway refuse everything. Plugins konductor has no
// schema for (custom ones) go to Kong unchecked. Kong's messages name the field
// ("config.minute"); they never echo the value, so a value from a Secret stays out of them.
func (b *builder) validPluginConfig(obj client.Object, gvk schema.GroupVersionKind, label, name string, conf []byte) bool {
	if !kongrules.KnownPlugin(name) {
		return true
	}
	var fresh map[string]any // the validator fills defaults into what it is given
	if err := json.Unmarshal(conf, &fresh); err != nil {
		return true // not an object: the parse above already reported what it could
	}
	_, errs := kongrules.ValidatePluginConfig(name, fresh)
	for _, e := range errs {
		field := e.Field
		if field == "" {
			field = "config"
		}
		// KIC's admission webhook's words, so the Event and a webhook denial read the same.
		b.problem(obj, gvk, field, "plugin %q failed schema validation: %s", name, e.Message)
	}
	return len(errs) == 0
}

// yamlLine finds where a YAML parser's error is ("line 3").
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorPlace is where err, a YAML parser's error about a Secret's value, happened (" at
// line N"), without the rest of its message, which may quote the value.
func yamlErrorPlace(err error) string {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return " (line " + m[1] + ")"
	}
	return ""
}
