package store

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// LastAppliedAnnotation is kubectl's copy of the whole object; it often doubles its size.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripForCache is the cache transform: it drops what the translator never reads before the
// object is stored, so a large cluster costs less memory. managedFields and kubectl's
// last-applied annotation go from every object; Helm release Secrets, which can be megabytes
// each and are never Kong configuration, keep their metadata but lose their data.
func StripForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil //nolint:nilerr // not an object (a tombstone, for example): keep as is
	}
	obj.SetManagedFields(nil)
	if ann := obj.GetAnnotations(); ann != nil {
		if _, ok := ann[LastAppliedAnnotation]; ok {
			delete(ann, LastAppliedAnnotation)
			obj.SetAnnotations(ann)
		}
	}
	if secret, ok := in.(*corev1.Secret); ok && secret.Type == "helm.sh/release.v1" {
		secret.Data = nil
		secret.StringData = nil
	}
	return in, nil
}
