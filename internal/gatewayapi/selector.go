package gatewayapi

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// selectorAdmits applies an allowedRoutes.namespaces selector to namespace ns. With the
// namespace's labels known (nsLabels), they decide. Without them, a selector that reads only
// the kubernetes.io/metadata.name label is still decided: the API server sets that label on
// every namespace to the namespace's name (Kubernetes 1.22+), and it is how the spec's own
// examples and the conformance suite select namespaces by name. Any other selector admits
// no namespace whose labels are unknown.
func selectorAdmits(sel *metav1.LabelSelector, ns string, nsLabels map[string]map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	if lbls, known := nsLabels[ns]; known {
		return s.Matches(labels.Set(lbls))
	}
	if !readsOnlyNameLabel(sel) {
		return false
	}
	return s.Matches(labels.Set{corev1.LabelMetadataName: ns})
}

// readsOnlyNameLabel reports whether sel names no label key but kubernetes.io/metadata.name.
func readsOnlyNameLabel(sel *metav1.LabelSelector) bool {
	for k := range sel.MatchLabels {
		if k != corev1.LabelMetadataName {
			return false
		}
	}
	for _, e := range sel.MatchExpressions {
		if e.Key != corev1.LabelMetadataName {
			return false
		}
	}
	return true
}
