package kongstate

import (
	"encoding/json"
	"sort"

	"github.com/kong/go-kong/kong"
)

// CustomEntity is one entity of a type that Kong's core does not have and a plugin adds
// (degraphql_routes, ...), made from a KongCustomEntity. Fields are rendered as they are,
// under a top-level key named after Type in DB-less configuration. Object is the
// KongCustomEntity: such entities carry no tags (KIC adds none, and some types, like
// degraphql_routes, have no tags field), so the object is known from here.
type CustomEntity struct {
	Type   string
	Fields map[string]any
	Object ObjectRef
	// ForeignIDs are the IDs of the service, route and consumer filled into the entity's
	// foreign keys ("" when none), KIC's last sort key.
	ForeignIDs [3]string
}

// License is Kong Gateway Enterprise's licenses entity and the KongLicense it came from
// (licenses have no tags).
type License struct {
	kong.License
	Object ObjectRef
}

// SortCustomEntities puts custom entities in KIC's order: by type, then by the namespace and
// name of their KongCustomEntity, then by the IDs of the service, route and consumer they
// are attached to.
func SortCustomEntities(es []*CustomEntity) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Object.Namespace != b.Object.Namespace {
			return a.Object.Namespace < b.Object.Namespace
		}
		if a.Object.Name != b.Object.Name {
			return a.Object.Name < b.Object.Name
		}
		for k := range a.ForeignIDs {
			if a.ForeignIDs[k] != b.ForeignIDs[k] {
				return a.ForeignIDs[k] < b.ForeignIDs[k]
			}
		}
		return false
	})
}

// CustomEntityTypes lists the types of the state's custom entities, sorted.
func (s *State) CustomEntityTypes() []string {
	if s == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range s.CustomEntities {
		if e != nil && !seen[e.Type] {
			seen[e.Type] = true
			out = append(out, e.Type)
		}
	}
	sort.Strings(out)
	return out
}

// withCustomEntities adds the custom entities to a rendered DB-less body, one top-level key
// per type, in the state's order. A body without custom entities is returned unchanged, so
// that the bytes of such configurations do not depend on this step.
func withCustomEntities(body []byte, entities []*CustomEntity) ([]byte, error) {
	if len(entities) == 0 {
		return body, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	byType := map[string][]map[string]any{}
	for _, e := range entities {
		if e != nil {
			byType[e.Type] = append(byType[e.Type], e.Fields)
		}
	}
	for t, list := range byType {
		raw, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		doc[t] = raw
	}
	return json.Marshal(doc)
}

// CustomEntityObject finds the KongCustomEntity of an entity Kong quotes in an error (its
// fields as sent; custom entities carry no tags) by the entity's id, which the translator
// gives every custom entity whose type has one (kongstate.CustomEntityID) and keeps unique.
// Never by the other fields: a tenant could copy a victim's fields, and the victim's entity
// would be taken out for the tenant's error (issue #44, item 5). An entity without an id is
// no object's.
func (s *State) CustomEntityObject(entity map[string]any) (ObjectRef, bool) {
	id, _ := entity["id"].(string)
	if s == nil || id == "" {
		return ObjectRef{}, false
	}
	for _, e := range s.CustomEntities {
		if e != nil && e.Fields["id"] == id {
			return e.Object, true
		}
	}
	return ObjectRef{}, false
}
