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
	shared      map[sharedTag]*string
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
//
// The tags are made here rather than from kongstate.ObjectRef.Tags: a shared tag is looked up
// by its prefix and value, so that its string is built only the first time, and the object's
// name and UID tags are one string (issue #13, start: the tags were nine allocations per
// object, 50 ms of a first translation at 3,000 Ingresses). TestEntityTagsAreTagsFor holds
// them to kongstate.TagsFor.
func (b *builder) entityTags(obj client.Object, gvk schema.GroupVersionKind) []*string {
	key := taggedObject{obj, gvk.Kind}
	if tags, ok := b.tagCache.byObject[key]; ok {
		return tags
	}
	c := &b.tagCache
	name, namespace, uid := obj.GetName(), obj.GetNamespace(), string(obj.GetUID())
	user := kongstate.UserTags(obj.GetAnnotations())
	n := len(user)
	for _, v := range [...]string{name, namespace, gvk.Kind, uid, gvk.Group, kongstate.TagGVK(obj, gvk).Version} {
		if v != "" {
			n++
		}
	}
	tags := make([]*string, 0, n)
	// The object's own tags: one string holding both, one array for their headers.
	own := kongstate.TagName + name + kongstate.TagUID + uid
	owned := new([2]string)
	owned[0], owned[1] = own[:len(kongstate.TagName)+len(name)], own[len(kongstate.TagName)+len(name):]
	if name != "" {
		tags = append(tags, &owned[0])
	}
	tags = c.appendShared(tags, kongstate.TagNamespace, namespace)
	tags = c.appendShared(tags, kongstate.TagKind, gvk.Kind)
	if uid != "" {
		tags = append(tags, &owned[1])
	}
	tags = c.appendShared(tags, kongstate.TagGroup, gvk.Group)
	tags = c.appendShared(tags, kongstate.TagVersion, kongstate.TagGVK(obj, gvk).Version)
	for _, t := range user {
		if e := checkTag(t); e != "" {
			b.problem(obj, gvk, "metadata.annotations["+kongstate.UserTagsAnnotation+"]", "%s; the tag is left out", e)
			continue
		}
		tags = c.appendShared(tags, "", t)
	}
	if len(tags) < cap(tags) {
		// A user tag was left out: the capacity stays the length (an append copies).
		tags = tags[:len(tags):len(tags)]
	}
	if c.byObject == nil {
		c.byObject = map[taggedObject][]*string{}
	}
	c.byObject[key] = tags
	return tags
}

// sharedTag is a tag shared across objects, by prefix and value: looked up without joining them.
type sharedTag struct{ prefix, value string }

// appendShared appends the shared tag prefix+value to tags, unless value is empty.
func (c *entityTagCache) appendShared(tags []*string, prefix, value string) []*string {
	if value == "" {
		return tags
	}
	return append(tags, c.sharedPointer(prefix, value))
}

// sharedPointer is the one pointer to the tag prefix+value.
func (c *entityTagCache) sharedPointer(prefix, value string) *string {
	k := sharedTag{prefix, value}
	p, ok := c.shared[k]
	if !ok {
		if c.shared == nil {
			c.shared = map[sharedTag]*string{}
		}
		p = kong.String(prefix + value)
		c.shared[k] = p
	}
	return p
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
		out[i] = c.sharedPointer("", t)
	}
	return out
}

// ownTag: the tag names one object (its name or UID), so sharing it would cost a map entry
// for nothing.
func ownTag(t string) bool {
	return strings.HasPrefix(t, kongstate.TagName) || strings.HasPrefix(t, kongstate.TagUID)
}

// tagsObject is the object an entity's tags name, by kind, namespace, name and group (the
// first tag of each prefix counts: the object's own come before user tags, so a user tag
// cannot pass an entity off as another object's). Unlike kongstate.ObjectRefFromTags it needs
// no UID: a manifest given to `konductor translate` may have none.
func tagsObject(tags []*string) (kongstate.ObjectRef, bool) {
	var r kongstate.ObjectRef
	for _, t := range tags {
		for _, f := range []struct {
			dst    *string
			prefix string
		}{{&r.Kind, kongstate.TagKind}, {&r.Namespace, kongstate.TagNamespace}, {&r.Name, kongstate.TagName}, {&r.Group, kongstate.TagGroup}} {
			if v, ok := strings.CutPrefix(kong.StringValue(t), f.prefix); ok && *f.dst == "" {
				*f.dst = v
			}
		}
	}
	if r.Group == "core" {
		r.Group = ""
	}
	return r, r.Kind != "" && r.Name != ""
}
