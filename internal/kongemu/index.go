package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"

	"sort"
	"strings"
)

// Indexes over the stored entities, so that a write or a list page costs
// about the same with 10 entities as with 40,000. They are derived data: every
// change to db.ents goes through db.put and db.del, which keep them in step.
// They never change what the Admin API answers, only how fast.

// idSet is a set of entity ids with a sorted view built on demand (Kong's
// primary key order) and dropped when the membership changes.
type idSet struct {
	ids    map[string]struct{}
	sorted []string // nil: to rebuild
}

func newIDSet() *idSet { return &idSet{ids: map[string]struct{}{}} }

func (s *idSet) add(id string) {
	if _, ok := s.ids[id]; !ok {
		s.ids[id] = struct{}{}
		s.sorted = nil
	}
}

func (s *idSet) remove(id string) {
	if _, ok := s.ids[id]; ok {
		delete(s.ids, id)
		s.sorted = nil
	}
}

// list returns the ids in order. The slice is shared: callers must not modify it.
func (s *idSet) list() []string {
	if s == nil {
		return nil
	}
	if s.sorted == nil {
		s.sorted = make([]string, 0, len(s.ids))
		for id := range s.ids {
			s.sorted = append(s.sorted, id)
		}
		sort.Strings(s.sorted)
	}
	return s.sorted
}

// other returns one id of the set other than except, or "".
func (s *idSet) other(except string) string {
	if s == nil {
		return ""
	}
	for id := range s.ids {
		if id != except {
			return id
		}
	}
	return ""
}

// multiIndex maps a key to the ids of the entities that have it.
type multiIndex map[string]*idSet

func (m multiIndex) add(key, id string) {
	s := m[key]
	if s == nil {
		s = newIDSet()
		m[key] = s
	}
	s.add(id)
}

func (m multiIndex) remove(key, id string) {
	if s := m[key]; s != nil {
		s.remove(id)
		if len(s.ids) == 0 {
			delete(m, key)
		}
	}
}

// kindIndex holds the indexes of one entity kind.
type kindIndex struct {
	s   *schema
	all *idSet
	// values: field -> string value -> ids, for unique fields and the endpoint key.
	values map[string]multiIndex
	// cache: composite cache key (see cacheKeyOf) -> ids.
	cache multiIndex
	// refs: foreign field -> referenced id -> ids (reverse foreign keys).
	refs map[string]multiIndex
	// tags: tag -> ids.
	tags multiIndex
}

func newKindIndex(s *schema) *kindIndex {
	x := &kindIndex{s: s, all: newIDSet(), values: map[string]multiIndex{},
		cache: multiIndex{}, refs: map[string]multiIndex{}, tags: multiIndex{}}
	for _, f := range s.Fields {
		switch {
		case f.Unique || (f.Name == s.EndpointKey && f.Name != "id"):
			x.values[f.Name] = multiIndex{}
		case f.Type == kongrules.Foreign:
			x.refs[f.Name] = multiIndex{}
		}
	}
	return x
}

// cacheKeyOf renders an entity's composite cache key. Two entities have the
// same key exactly when luaValue agrees on every cache key field (luaValue
// never yields a NUL byte).
func cacheKeyOf(s *schema, e map[string]any) string {
	parts := make([]string, len(s.CacheKey))
	for i, k := range s.CacheKey {
		parts[i] = luaValue(e[k])
	}
	return strings.Join(parts, "\x00")
}

func (x *kindIndex) index(e map[string]any, add bool) {
	id, _ := e["id"].(string)
	op := multiIndex.remove
	if add {
		op = multiIndex.add
	}
	for name, m := range x.values {
		if v, ok := e[name].(string); ok {
			op(m, v, id)
		}
	}
	if x.s.CacheKey != nil {
		op(x.cache, cacheKeyOf(x.s, e), id)
	}
	for name, m := range x.refs {
		if ref := refID(e[name]); ref != "" {
			op(m, ref, id)
		}
	}
	for _, t := range entityTags(e) {
		op(x.tags, t, id)
	}
}

// put stores ent (replacing the entity of the same id) and indexes it.
func (d *db) put(kind string, ent map[string]any) {
	id := ent["id"].(string)
	x := d.idx[kind]
	if old := d.ents[kind][id]; old != nil {
		x.index(old, false)
	}
	d.ents[kind][id] = ent
	d.version++
	delete(d.encoded[kind], id)
	x.all.add(id)
	x.index(ent, true)
}

// del removes an entity and its index entries.
func (d *db) del(kind, id string) {
	old := d.ents[kind][id]
	if old == nil {
		return
	}
	x := d.idx[kind]
	x.index(old, false)
	x.all.remove(id)
	d.version++
	delete(d.ents[kind], id)
	delete(d.encoded[kind], id)
}

// byValue returns the ids of the entities of kind whose field holds the string v.
func (d *db) byValue(kind, field, v string) *idSet {
	return d.idx[kind].values[field][v]
}

// referencing returns the ids of the entities of kind whose foreign field points at id.
func (d *db) referencing(kind, field, id string) *idSet {
	return d.idx[kind].refs[field][id]
}

// sortedIDs returns the ids of kind in order (shared slice, read only).
func (d *db) sortedIDs(kind string) []string { return d.idx[kind].all.list() }

// taggedIDs returns, in order, the ids of kind that match a tag filter (as matchTags).
func (d *db) taggedIDs(kind string, tags []string, or bool) []string {
	x := d.idx[kind]
	if len(tags) == 1 {
		return x.tags[tags[0]].list()
	}
	base := x.all
	if !or {
		// AND: walk the smallest tag's entities.
		for _, t := range tags {
			s := x.tags[t]
			if s == nil {
				return nil
			}
			if len(s.ids) < len(base.ids) {
				base = s
			}
		}
	}
	var out []string
	for _, id := range base.list() {
		if matchTags(d.ents[kind][id], tags, or) {
			out = append(out, id)
		}
	}
	return out
}
