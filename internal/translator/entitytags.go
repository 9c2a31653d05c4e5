package translator

import (
	"strings"

	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

// entityTagCache holds the tags a translation gave each object's Kong entities, as the
// entities carry them (issue #13, memory: at 10,000 Ingresses the tags were a slice of
// freshly allocated strings per route, service and upstream, about 7 MB of the State).
//
// Every entity of one object shares one slice: the Ingress's routes theirs, a Service's Kong
// service and upstream theirs, a KongPlugin's plugin entities theirs. Tags that repeat across
// objects (kind, group, version, namespace, user tags) share one string and one pointer; an
// object's name and UID tags are its own. Nothing writes through an entity's tag pointers or
// into its tag slice: the State is read-only once built, and the slice's capacity is its
// length, so an append (go-database-reconciler's MergeTags on a copy of the State that did
// not copy the slice) copies it rather than writing into another entity's tags.
type entityTagCache struct {
	byObject    map[taggedObject][]*string
	shared      map[string]*string
	placeholder []*string
}

// taggedObject is an object and the kind it is tagged as.
type taggedObject struct {
	obj  client.Object
	kind string
}

// entityTags are b.tags(obj, gvk) as the Kong entities of obj carry them, shared between them.
// A problem with a user tag is reported once per object, as it was once per entity before
// problems were deduplicated.
func (b *builder) entityTags(obj client.Object, gvk schema.GroupVersionKind) []*string {
	key := taggedObject{obj, gvk.Kind}
	if tags, ok := b.tagCache.byObject[key]; ok {
		return tags
	}
	tags := b.tagCache.pointers(b.tags(obj, gvk))
	if b.tagCache.byObject == nil {
		b.tagCache.byObject = map[taggedObject][]*string{}
	}
	b.tagCache.byObject[key] = tags
	return tags
}

// placeholderServiceTags are kongstate.PlaceholderServiceTags as entities carry them, one
// slice for every Kong service and upstream of a missing Service.
func (b *builder) placeholderServiceTags() []*string {
	if b.tagCache.placeholder == nil {
		b.tagCache.placeholder = b.tagCache.pointers(kongstate.PlaceholderServiceTags())
	}
	return b.tagCache.placeholder
}

// pointers returns tags as a slice of pointers whose capacity is its length; tags that are
// not an object's own name or UID point to one shared string each.
func (c *entityTagCache) pointers(tags []string) []*string {
	own := 0
	for _, t := range tags {
		if ownTag(t) {
			own++
		}
	}
	out := make([]*string, len(tags))
	owned := make([]string, 0, own)
	for i, t := range tags {
		if ownTag(t) {
			owned = append(owned, t)
			out[i] = &owned[len(owned)-1]
			continue
		}
		p, ok := c.shared[t]
		if !ok {
			if c.shared == nil {
				c.shared = map[string]*string{}
			}
			p = kong.String(t)
			c.shared[t] = p
		}
		out[i] = p
	}
	return out
}

// ownTag: the tag names one object (its name or UID), so sharing it would cost a map entry
// for nothing.
func ownTag(t string) bool {
	return strings.HasPrefix(t, kongstate.TagName) || strings.HasPrefix(t, kongstate.TagUID)
}
