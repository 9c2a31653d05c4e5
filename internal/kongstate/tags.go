package kongstate

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tag prefixes of translation-rules.md §5. Kong reports an entity's tags with every error it
// flattens, so these tags are how a rejected entity is traced back to its object.
const (
	TagName      = "k8s-name:"
	TagNamespace = "k8s-namespace:"
	TagKind      = "k8s-kind:"
	TagUID       = "k8s-uid:"
	TagGroup     = "k8s-group:"
	TagVersion   = "k8s-version:"

	// UserTagsAnnotation holds extra, comma-separated tags for every entity of the object.
	UserTagsAnnotation = "konghq.com/tags"

	// zeroUID marks the placeholder tags of a Kong service whose Kubernetes Service is missing.
	zeroUID = "00000000-0000-0000-0000-000000000000"
)

// ObjectRef names a Kubernetes object. Group is "" for the core API group.
type ObjectRef struct {
	Group, Version, Kind, Namespace, Name, UID string
}

// RefFor returns the reference of obj, whose kind is gvk (typed objects read through a
// client usually carry no TypeMeta, so the caller says what it is).
func RefFor(obj client.Object, gvk schema.GroupVersionKind) ObjectRef {
	return ObjectRef{
		Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()),
	}
}

// String is "Kind namespace/name", or "Kind name" for cluster-scoped objects.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// TagsFor returns the tags of every Kong entity generated from obj (translation-rules.md §5), in
// KIC's order: name, namespace, kind, uid, group, version, then the user tags of
// konghq.com/tags. Empty values are left out (no namespace for cluster-scoped objects, no
// group for core kinds, no uid when the object has none).
func TagsFor(obj client.Object, gvk schema.GroupVersionKind) []string {
	tags := RefFor(obj, TagGVK(obj, gvk)).Tags()
	return append(tags, UserTags(obj.GetAnnotations())...)
}

// TagGVK is gvk with the version obj was read at, when its TypeMeta names another version of
// the same kind: the store reads TCPRoutes, UDPRoutes and TLSRoutes at v1alpha2 (and
// BackendTLSPolicies at v1alpha3) where the cluster serves no v1, converts them to v1 and
// keeps the version read in their TypeMeta; KIC, which reads them at that version, tags their
// entities k8s-version:v1alpha2, and so must konductor (a takeover updates no tag).
func TagGVK(obj client.Object, gvk schema.GroupVersionKind) schema.GroupVersionKind {
	if read := obj.GetObjectKind().GroupVersionKind(); read.Version != "" && read.Group == gvk.Group && read.Kind == gvk.Kind {
		gvk.Version = read.Version
	}
	return gvk
}

// Tags returns the k8s-* tags of the reference, without user tags.
func (r ObjectRef) Tags() []string {
	tags := make([]string, 0, 8)
	add := func(prefix, v string) {
		if v != "" {
			tags = append(tags, prefix+v)
		}
	}
	add(TagName, r.Name)
	add(TagNamespace, r.Namespace)
	add(TagKind, r.Kind)
	add(TagUID, r.UID)
	add(TagGroup, r.Group)
	add(TagVersion, r.Version)
	return tags
}

// UserTags parses konghq.com/tags: comma-separated, trimmed, empty values and duplicates
// dropped, first occurrence kept.
func UserTags(annotations map[string]string) []string {
	v, ok := annotations[UserTagsAnnotation]
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range strings.Split(v, ",") {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// PlaceholderServiceTags are the tags KIC gives a Kong service (and its upstream) whose
// Kubernetes Service does not exist (translation-rules.md §5). ObjectRefFromTags does not resolve
// them to an object.
func PlaceholderServiceTags() []string {
	return []string{
		TagName + "UNKNOWN", TagNamespace + "UNKNOWN", TagKind + "Service",
		TagUID + zeroUID, TagGroup + "core", TagVersion + "v1",
	}
}

// clusterScoped are the kinds whose reference needs no namespace (translation-rules.md §12.2).
var clusterScoped = map[string]bool{
	"KongClusterPlugin": true, "KongLicense": true, "KongVault": true, "IngressClass": true,
}

// ObjectRefFromTags maps an entity's tags back to the object that produced it, as the
// controller does with the entity_tags of Kong's flattened errors (translation-rules.md §12.2).
// Name, kind and UID are required, and a namespace unless the kind is cluster-scoped; the
// placeholder tags of a missing Service resolve to nothing. The group "core" is reported as "".
func ObjectRefFromTags(tags []string) (ObjectRef, bool) {
	var r ObjectRef
	// The first tag of each prefix counts: TagsFor puts the object's own tags before user
	// tags, so a user tag such as "k8s-name:x" cannot redirect an error to another object.
	set := func(dst *string, t, prefix string) bool {
		if !strings.HasPrefix(t, prefix) {
			return false
		}
		if *dst == "" {
			*dst = t[len(prefix):]
		}
		return true
	}
	for _, t := range tags {
		_ = set(&r.Name, t, TagName) || set(&r.Namespace, t, TagNamespace) || set(&r.Kind, t, TagKind) ||
			set(&r.UID, t, TagUID) || set(&r.Group, t, TagGroup) || set(&r.Version, t, TagVersion)
	}
	if r.Group == "core" {
		r.Group = ""
	}
	if r.Name == "" || r.Kind == "" || r.UID == "" || r.UID == zeroUID {
		return ObjectRef{}, false
	}
	if r.Namespace == "" && !clusterScoped[r.Kind] {
		return ObjectRef{}, false
	}
	return r, true
}
