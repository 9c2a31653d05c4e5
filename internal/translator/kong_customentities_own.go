package translator

import (
	"encoding/json"
	"fmt"

	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"

	"github.com/konductor/konductor/internal/kongstate"
)

// Blame and belonging of custom entities (docs/security.md, issue #44 item 5). Custom
// entities carry no tags, and Kong keeps their unique fields unique across the whole
// configuration: so each gets an id of its own, by which an entity Kong refuses is known to be
// its object's (kongstate.State.CustomEntityObject), a unique value (an id, a key set's name)
// belongs to the oldest KongCustomEntity asking for it, and a foreign key to another custom
// entity type names only an entity of the object's own namespace.

// madeCustomEntity is one entity a KongCustomEntity makes, before ownCustomEntities.
type madeCustomEntity struct {
	obj    *kongv1alpha1.KongCustomEntity
	schema map[string]any
	entity *kongstate.CustomEntity
}

// ownCustomEntities gives made (oldest object first) their ids, and returns those that keep
// to their own: an entity whose unique value an older object holds, or that names another
// namespace's entity of a custom type (or one the configuration does not hold), is left out
// with a problem, as are the other entities of its object.
func (b *builder) ownCustomEntities(made []madeCustomEntity) []madeCustomEntity {
	for i := range made {
		m := &made[i]
		if schemaField(m.schema, "id") != nil {
			if _, set := m.entity.Fields["id"]; !set {
				// Of the object and the combination it is for (not its place among them:
				// another object's change must not change its id).
				f := m.entity.ForeignIDs
				m.entity.Fields["id"] = kongstate.CustomEntityID(b.opts.Workspace, m.entity.Type,
					fmt.Sprintf("%s/%s/%s/%s/%s", m.obj.Namespace, m.obj.Name, f[0], f[1], f[2]))
			}
		}
	}
	out := map[*kongv1alpha1.KongCustomEntity]bool{}
	holders := map[string]*kongv1alpha1.KongCustomEntity{} // type, field, value -> oldest holder
	for _, m := range made {
		for _, f := range uniqueFields(m.schema) {
			v, set := m.entity.Fields[f]
			if !set || v == nil {
				continue
			}
			raw, _ := json.Marshal(v)
			key := m.entity.Type + "\x00" + f + "\x00" + string(raw)
			holder := holders[key]
			switch {
			case holder == nil:
				holders[key] = m.obj
			case holder != m.obj:
				b.share("custom entity "+m.entity.Type+" "+f+" "+hashed(string(raw)), m.obj, gvkKongCustomEntity)
				b.share("custom entity "+m.entity.Type+" "+f+" "+hashed(string(raw)), holder, gvkKongCustomEntity)
				b.problem(m.obj, gvkKongCustomEntity, "spec.fields."+f, "%s %s is already KongCustomEntity %s/%s's (older); Kong keeps it unique, the custom entity is left out",
					m.entity.Type, f, holder.Namespace, holder.Name)
				out[m.obj] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, m := range made {
			if !out[m.obj] && !b.customForeignKeysOwn(m, made, out) {
				out[m.obj], changed = true, true
			}
		}
	}
	kept := made[:0:0]
	for _, m := range made {
		if !out[m.obj] {
			kept = append(kept, m)
		}
	}
	return kept
}

// customForeignKeysOwn checks m's foreign keys to custom entity types (those to services,
// routes and consumers are customEntityForeignKeysOwn's): each must name, by id or by its
// type's endpoint key, an entity made (and not left out) from an object of m's namespace.
func (b *builder) customForeignKeysOwn(m madeCustomEntity, made []madeCustomEntity, out map[*kongv1alpha1.KongCustomEntity]bool) bool {
	for _, f := range schemaFieldNames(m.schema) {
		attrs := schemaField(m.schema, f)
		ref, _ := attrs["reference"].(string)
		if attrs["type"] != "foreign" || ref == "" || coreEntityTypes[ref] || renderedEntityTypes[ref] {
			continue
		}
		v, set := m.entity.Fields[f]
		if !set || v == nil {
			continue
		}
		key := foreignKeyValue(v)
		var owner *kongv1alpha1.KongCustomEntity
		for _, o := range made {
			if o.entity.Type != ref || out[o.obj] {
				continue
			}
			endpoint, _ := b.opts.EntitySchemas[ref].Schema["endpoint_key"].(string)
			if o.entity.Fields["id"] == key || endpoint != "" && o.entity.Fields[endpoint] == key {
				owner = o.obj
				break
			}
		}
		field := "spec.fields." + f
		switch {
		case owner == nil:
			b.problem(m.obj, gvkKongCustomEntity, field, "names %s %q, which is not in the configuration; the custom entity is left out", ref, key)
			return false
		case owner.Namespace != m.obj.Namespace:
			b.refer(m.obj, gvkKongCustomEntity, kongstate.RefFor(owner, gvkKongCustomEntity))
			b.problem(m.obj, gvkKongCustomEntity, field, "names %s %q of KongCustomEntity %s/%s; a custom entity names only entities of its own namespace, the custom entity is left out",
				ref, key, owner.Namespace, owner.Name)
			return false
		}
		b.refer(m.obj, gvkKongCustomEntity, kongstate.RefFor(owner, gvkKongCustomEntity))
	}
	return true
}

// schemaFieldNames are the names of a Kong entity schema's fields, in the schema's order.
func schemaFieldNames(schema map[string]any) []string {
	var out []string
	fields, _ := schema["fields"].([]any)
	for _, item := range fields {
		def, _ := item.(map[string]any)
		for name := range def {
			out = append(out, name)
		}
	}
	return out
}

// schemaField is the attributes of a schema's field name, nil when it has none.
func schemaField(schema map[string]any, name string) map[string]any {
	fields, _ := schema["fields"].([]any)
	for _, item := range fields {
		def, _ := item.(map[string]any)
		if attrs, ok := def[name].(map[string]any); ok {
			return attrs
		}
	}
	return nil
}

// uniqueFields are the fields Kong keeps unique for a schema: its id and those marked unique.
func uniqueFields(schema map[string]any) []string {
	var out []string
	for _, f := range schemaFieldNames(schema) {
		if a := schemaField(schema, f); f == "id" || a["unique"] == true {
			out = append(out, f)
		}
	}
	return out
}
