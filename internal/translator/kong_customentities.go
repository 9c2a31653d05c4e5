package translator

import (
	"encoding/json"
	"sort"
	"strings"

	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// EntitySchemaAnswer is what a gateway answered to GET /schemas/<type> (Kong's JSON), or why
// there is no schema: the gateway has no entity of that name (404) or could not be asked.
// The dataplane asks; translation only reads the answers (Options.EntitySchemas).
type EntitySchemaAnswer struct {
	// Schema is Kong's answer: {"fields": [{"<name>": {"type": ..., "reference": ...}}], ...}.
	Schema map[string]any `json:"schema,omitempty"`
	// Error is set when there is no schema, with the gateway's message.
	Error string `json:"error,omitempty"`
}

// coreEntityTypes are the types KIC refuses in a KongCustomEntity, because it makes them from
// other objects (KIC's IsKnownEntityType; the CRD's validation rule says the same).
var coreEntityTypes = map[string]bool{
	"services": true, "routes": true, "upstreams": true, "targets": true,
	"consumers": true, "consumer_groups": true, "plugins": true,
}

// renderedEntityTypes are the other top-level keys of the DB-less configuration konductor
// renders. KIC accepts them as custom entity types, and its configuration then holds the key
// twice; konductor refuses them as well, so that a custom entity never replaces what other
// objects made.
var renderedEntityTypes = map[string]bool{
	"certificates": true, "snis": true, "ca_certificates": true, "vaults": true, "licenses": true,
	"consumer_group_consumers": true, "keyauth_credentials": true, "basicauth_credentials": true,
	"hmacauth_credentials": true, "jwt_secrets": true, "acls": true, "oauth2_credentials": true,
	"mtls_auth_credentials": true, "_format_version": true, "_transform": true, "_info": true,
}

// CustomEntityTypes lists the entity types the snapshot's KongCustomEntities name, sorted and
// without the core types: the schemas translation needs (Options.EntitySchemas).
func CustomEntityTypes(snap *store.Snapshot) []string {
	if snap == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range snap.KongCustomEntities {
		t := e.Spec.EntityType
		if t == "" || seen[t] || coreEntityTypes[t] || renderedEntityTypes[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// foreignKeys are the fields of a schema that refer to services, routes and consumers, by
// the entity they refer to, each sorted by name.
type foreignKeys struct{ services, routes, consumers []string }

func parseForeignKeys(schema map[string]any) foreignKeys {
	var fk foreignKeys
	fields, _ := schema["fields"].([]any)
	for _, item := range fields {
		def, _ := item.(map[string]any)
		for name, attrs := range def {
			a, _ := attrs.(map[string]any)
			if a["type"] != "foreign" {
				continue
			}
			switch a["reference"] {
			case "services":
				fk.services = append(fk.services, name)
			case "routes":
				fk.routes = append(fk.routes, name)
			case "consumers":
				fk.consumers = append(fk.consumers, name)
			}
		}
	}
	sort.Strings(fk.services)
	sort.Strings(fk.routes)
	sort.Strings(fk.consumers)
	return fk
}

// customEntities translates KongCustomEntities (translation-rules.md §2 step 7, KIC's
// FillCustomEntities): one entity of spec.type with spec.fields, or, when spec.parentRef names
// a KongPlugin or KongClusterPlugin whose instances are attached to services, routes or
// consumers and the type's schema has foreign keys to those, one entity per combination of
// them (KIC's plugin combination rule), with the foreign keys filled with their IDs. Runs
// after plugins, whose instances it reads.
func (b *builder) customEntities() {
	if b.opts.NoCustomEntities {
		return
	}
	objs := append([]*kongv1alpha1.KongCustomEntity(nil), b.snap.KongCustomEntities...)
	sortByAge(objs)
	instances := b.pluginInstances()
	var made []madeCustomEntity // oldest object first
	for _, e := range objs {
		typ := e.Spec.EntityType
		parent, attached := customEntityParent(e)
		if attached {
			b.refer(e, gvkKongCustomEntity, parent)
		}
		switch {
		case coreEntityTypes[typ]:
			b.problem(e, gvkKongCustomEntity, "spec.type", "cannot use known entity type %s in custom entity", typ)
			continue
		case renderedEntityTypes[typ]:
			b.problem(e, gvkKongCustomEntity, "spec.type", "cannot use entity type %s in custom entity: the configuration holds %s made from other objects", typ, typ)
			continue
		case typ == "":
			b.problem(e, gvkKongCustomEntity, "spec.type", "entity type is empty")
			continue
		}
		answer, asked := b.opts.EntitySchemas[typ]
		if !asked {
			b.problem(e, gvkKongCustomEntity, "spec.type", "failed to fetch entity schema for entity type %s: no gateway answered yet", typ)
			continue
		}
		if answer.Schema == nil {
			b.problem(e, gvkKongCustomEntity, "spec.type", "failed to fetch entity schema for entity type %s: %s", typ, answer.Error)
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(e.Spec.Fields.Raw, &fields); err != nil || fields == nil {
			msg := "fields must be a JSON object"
			if err != nil {
				msg = err.Error()
			}
			b.problem(e, gvkKongCustomEntity, "spec.fields", "failed to generate entities from itself and attach foreign entities: failed to unmarshal entity fields: %s", msg)
			continue
		}
		if attached && parent.Namespace != "" && parent.Namespace != e.Namespace &&
			!b.grantAllows(e, gvkKongCustomEntity, parent.Namespace, parent.Name) {
			b.problem(e, gvkKongCustomEntity, "spec.parentRef", "failed to find attached foreign entities for custom entity: no grant found to referenced %q plugin in the requested remote KongPlugin bind",
				parent.Namespace+"/"+parent.Name)
			continue
		}
		if !b.customEntityForeignKeysOwn(e, fields, parseForeignKeys(answer.Schema)) {
			continue
		}
		ref := kongstate.RefFor(e, gvkKongCustomEntity)
		var combos []pluginRelation
		if attached {
			combos = b.customEntityCombinations(instances[objgraph.Key(parent)], parseForeignKeys(answer.Schema))
		}
		if len(combos) == 0 {
			made = append(made, madeCustomEntity{obj: e, schema: answer.Schema,
				entity: &kongstate.CustomEntity{Type: typ, Fields: fields, Object: ref}})
			continue
		}
		fk := parseForeignKeys(answer.Schema)
		for _, c := range combos {
			var copied map[string]any
			_ = json.Unmarshal(e.Spec.Fields.Raw, &copied) // parsed above: a fresh copy per entity
			ce := &kongstate.CustomEntity{Type: typ, Fields: copied, Object: ref, ForeignIDs: [3]string{c.service, c.route, c.consumer}}
			for _, pair := range []struct {
				fields []string
				id     string
			}{{fk.services, c.service}, {fk.routes, c.route}, {fk.consumers, c.consumer}} {
				if pair.id == "" {
					continue
				}
				for _, f := range pair.fields {
					copied[f] = map[string]any{"id": pair.id}
				}
			}
			made = append(made, madeCustomEntity{obj: e, schema: answer.Schema, entity: ce})
		}
	}
	for _, m := range b.ownCustomEntities(made) {
		b.state.CustomEntities = append(b.state.CustomEntities, m.entity)
	}
	kongstate.SortCustomEntities(b.state.CustomEntities)
}

// customEntityParent is the plugin a custom entity's spec.parentRef names. As in KIC, a
// reference counts only with group configuration.konghq.com and kind KongPlugin or
// KongClusterPlugin; an empty namespace is the entity's own.
func customEntityParent(e *kongv1alpha1.KongCustomEntity) (kongstate.ObjectRef, bool) {
	p := e.Spec.ParentRef
	if p == nil || p.Group == nil || *p.Group != kongv1alpha1.GroupVersion.Group || p.Kind == nil {
		return kongstate.ObjectRef{}, false
	}
	switch *p.Kind {
	case "KongPlugin":
		ns := e.Namespace
		if p.Namespace != nil && *p.Namespace != "" {
			ns = *p.Namespace
		}
		return ref(gvkKongPlugin, ns, p.Name), true
	case "KongClusterPlugin":
		return ref(gvkKongClusterPlugin, "", p.Name), true
	}
	return kongstate.ObjectRef{}, false
}

// pluginAttachments are the services, routes and consumers one plugin object's instances are
// attached to, by name, in the order of the instances.
type pluginAttachments struct{ services, routes, consumers []string }

// pluginInstances collects, for every KongPlugin and KongClusterPlugin (by graph node), what
// its plugin entities are attached to.
func (b *builder) pluginInstances() map[kongstate.ObjectRef]*pluginAttachments {
	out := map[kongstate.ObjectRef]*pluginAttachments{}
	for _, p := range b.state.Plugins {
		var tags []string
		for _, t := range p.Tags {
			if t != nil {
				tags = append(tags, *t)
			}
		}
		obj, ok := kongstate.ObjectRefFromTags(tags)
		if !ok {
			continue
		}
		n := objgraph.Key(obj)
		a := out[n]
		if a == nil {
			a = &pluginAttachments{}
			out[n] = a
		}
		if p.Service != nil && p.Service.ID != nil {
			a.services = appendNew(a.services, *p.Service.ID)
		}
		if p.Route != nil && p.Route.ID != nil {
			a.routes = appendNew(a.routes, *p.Route.ID)
		}
		if p.Consumer != nil {
			a.consumers = appendNew(a.consumers, refIdent(p.Consumer))
		}
	}
	return out
}

func appendNew(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

// customEntityCombinations are the foreign keys of the entities of one custom entity (KIC's
// findCustomEntityForeignFields), as IDs: only the relations the schema has a field for
// count; a service field takes the plugin's services, else the services of its routes; then
// KIC's combination rule. Consumers without a username have no ID and are left out, as in KIC.
func (b *builder) customEntityCombinations(a *pluginAttachments, fk foreignKeys) []pluginRelation {
	if a == nil {
		return nil
	}
	var rels pluginRelations
	if len(fk.services) > 0 {
		names := a.services
		if len(names) == 0 {
			for _, r := range a.routes {
				if svc := b.serviceOfRoute(r); svc != "" {
					names = appendNew(names, svc)
				}
			}
		}
		for _, n := range names {
			rels.services = append(rels.services, kongstate.ServiceID(b.opts.Workspace, n))
		}
	}
	if len(fk.routes) > 0 {
		for _, r := range a.routes {
			rels.routes = append(rels.routes, kongstate.RouteID(b.opts.Workspace, r))
		}
	}
	if len(fk.consumers) > 0 {
		for _, c := range a.consumers {
			if id := b.consumerIDOf(c); id != "" {
				rels.consumers = append(rels.consumers, id)
			}
		}
	}
	return rels.combinations()
}

// serviceOfRoute is the name of the Kong service that holds the route named r.
func (b *builder) serviceOfRoute(r string) string {
	for n, ks := range b.kongServices {
		for _, rt := range ks.routes {
			if rt.Name != nil && *rt.Name == r {
				return n
			}
		}
	}
	return ""
}

// consumerIDOf is the ID of the consumer a plugin is keyed by (its username, else its
// custom_id: consumerIdent, unique across consumers). The look-up is noted for Incremental
// (consumerParts.lookedUp).
func (b *builder) consumerIDOf(ident string) string {
	if b.parts.consumers.lookedUp == nil {
		b.parts.consumers.lookedUp = map[string]struct{}{}
	}
	b.parts.consumers.lookedUp[ident] = struct{}{}
	for _, c := range b.state.Consumers {
		if consumerIdent(c) == ident {
			return str(c.ID)
		}
	}
	return ""
}

// customEntityForeignKeysOwn checks the foreign keys e's spec.fields name itself (a service,
// route or consumer, by ID or name): each must name an entity of the configuration made from
// an object of e's own namespace (docs/security.md, item 1: a tenant must not attach its
// entity to another's, as spec.parentRef needs a ReferenceGrant). A key that names nothing
// the configuration holds is refused too, since IDs are predictable (UUIDv5 of names) and
// another namespace could make it later. Each key found is an edge in the graph (a change of
// the object it names reaches e); a key found nowhere marks the result for Incremental,
// which then translates everything (consumerParts.lookedUp's reason: there is no object to
// point an edge at). Reports and returns false when one fails.
func (b *builder) customEntityForeignKeysOwn(e *kongv1alpha1.KongCustomEntity, fields map[string]any, fk foreignKeys) bool {
	ok := true
	for _, group := range []struct {
		kind   string
		fields []string
	}{{"services", fk.services}, {"routes", fk.routes}, {"consumers", fk.consumers}} {
		for _, f := range group.fields {
			v, set := fields[f]
			if !set || v == nil {
				continue
			}
			key := foreignKeyValue(v)
			owner, found := b.entityOwner(e, group.kind, key)
			field := "spec.fields." + f
			switch {
			case !found:
				b.parts.danglingForeignKey = true
				b.problem(e, gvkKongCustomEntity, field, "names %s %q, which is not in the configuration; the custom entity is left out", strings.TrimSuffix(group.kind, "s"), key)
				ok = false
			case owner.Namespace != e.Namespace:
				b.problem(e, gvkKongCustomEntity, field, "names %s %q of %s; a custom entity names only entities of its own namespace, the custom entity is left out",
					strings.TrimSuffix(group.kind, "s"), key, owner)
				ok = false
			}
		}
	}
	return ok
}

// foreignKeyValue is the ID or name a foreign key field holds: {"id": ...}, {"name": ...}
// or a plain string.
func foreignKeyValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for _, k := range []string{"id", "name", "username"} {
			if s, ok := x[k].(string); ok && s != "" {
				return s
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// entityOwner is the object whose tags the service, route or consumer (kind) of ID or name
// key carries, found when the configuration holds one. e, the custom entity that names it,
// refers to that object, and to those whose routes a Kong service is there for: without
// them it would not be in the configuration.
func (b *builder) entityOwner(e *kongv1alpha1.KongCustomEntity, kind, key string) (kongstate.ObjectRef, bool) {
	// The object's own tags come first (TagsFor): the first of each prefix counts, so a
	// user tag cannot pass an entity off as another namespace's. No UID is needed here (a
	// manifest given to `konductor translate` may have none).
	owner := func(tags []*string) (kongstate.ObjectRef, bool) {
		r, ok := tagsObject(tags)
		if ok {
			b.refer(e, gvkKongCustomEntity, r)
		}
		return r, ok
	}
	switch kind {
	case "services":
		for _, ks := range b.kongServices {
			if str(ks.svc.ID) == key || str(ks.svc.Name) == key {
				for _, r := range ks.routes {
					owner(r.Tags)
				}
				return owner(ks.svc.Tags)
			}
		}
	case "routes":
		for _, ks := range b.kongServices {
			for _, r := range ks.routes {
				if str(r.ID) == key || str(r.Name) == key {
					return owner(r.Tags)
				}
			}
		}
	case "consumers":
		for _, c := range b.state.Consumers {
			if str(c.ID) == key || str(c.Username) == key {
				return owner(c.Tags)
			}
		}
	}
	return kongstate.ObjectRef{}, false
}
