package store

import (
	netv1 "k8s.io/api/networking/v1"
)

const (
	// IngressClassAnnotation is the legacy class annotation. When non-empty it wins over
	// spec.ingressClassName (translation-rules.md §1.1).
	IngressClassAnnotation = "kubernetes.io/ingress.class"
	// DefaultClassAnnotation marks the cluster's default IngressClass; only the exact value
	// "true" counts.
	DefaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// IsDefaultClass reports whether class carries is-default-class: "true".
func IsDefaultClass(class *netv1.IngressClass) bool {
	return class.Annotations[DefaultClassAnnotation] == "true"
}

// IngressMatchesClass applies KIC's store filter (translation-rules.md §1.1): a non-empty legacy
// annotation alone decides; otherwise spec.ingressClassName must equal class; an Ingress with
// neither is served only when class is the default IngressClass.
func IngressMatchesClass(ing *netv1.Ingress, class string, classIsDefault bool) bool {
	if v := ing.Annotations[IngressClassAnnotation]; v != "" {
		return v == class
	}
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName == class
	}
	return classIsDefault
}

// AnnotationMatchesClass is the class rule of the other class-filtered kinds
// (KongClusterPlugin, KongConsumer, ...; translation-rules.md §1.2): the annotation must equal class,
// or be absent or empty while class is the default IngressClass.
func AnnotationMatchesClass(annotations map[string]string, class string, classIsDefault bool) bool {
	if v := annotations[IngressClassAnnotation]; v != "" {
		return v == class
	}
	return classIsDefault
}
