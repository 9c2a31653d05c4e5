package admission

import (
	"regexp"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/store"
)

// otherNamespace is what an answer says instead of another namespace's name.
const otherNamespace = "[another namespace]"

// A namespaced object's review names only objects of its own namespace (docs/security.md,
// item 4): the translator's messages say which object holds what the reviewed one wants
// ("username "alice" is already KongConsumer team-a/alice's"), which tells a tenant of
// another namespace's objects. The messages name objects as namespace/name and namespaces as
// `namespace NAME`; both are masked when the namespace is another one the cache knows.
var (
	namespacedName = regexp.MustCompile(`(^|[\s"'(\[,:;=])([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)/([A-Za-z0-9][-A-Za-z0-9_.]*)`)
	namespaceWord  = regexp.MustCompile(`(namespaces? "?)([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)`)
)

// foreignMasker masks, in a review's messages, the names of namespaces of snap other than own.
type foreignMasker struct {
	own        string
	namespaces map[string]bool
}

func newForeignMasker(snap *store.Snapshot, own string) *foreignMasker {
	m := &foreignMasker{own: own, namespaces: map[string]bool{}}
	for ns := range snap.NamespaceLabels {
		m.namespaces[ns] = true
	}
	snap.Select(func(_ schema.GroupVersionKind, obj client.Object) bool {
		if ns := obj.GetNamespace(); ns != "" {
			m.namespaces[ns] = true
		}
		return false
	})
	return m
}

func (m *foreignMasker) foreign(ns string) bool { return ns != m.own && m.namespaces[ns] }

// String is msg with other namespaces' objects and names masked.
func (m *foreignMasker) String(msg string) string {
	msg = namespacedName.ReplaceAllStringFunc(msg, func(s string) string {
		sub := namespacedName.FindStringSubmatch(s)
		if !m.foreign(sub[2]) {
			return s
		}
		return sub[1] + otherNamespace
	})
	return namespaceWord.ReplaceAllStringFunc(msg, func(s string) string {
		sub := namespaceWord.FindStringSubmatch(s)
		if !m.foreign(sub[2]) {
			return s
		}
		return sub[1] + otherNamespace
	})
}
