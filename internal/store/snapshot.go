package store

import (
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
)

// Snapshot is every object the translator reads, as the cache held them at one moment.
//
// Ingresses, KongClusterPlugins are already filtered by ingress class; every namespaced object
// is already filtered by the watched namespaces. Objects are shared with the cache: readers
// must treat them as immutable. Slices are in no particular order; the translator sorts.
type Snapshot struct {
	// IngressClass is the configured class name (--ingress-class) and IngressClassIsDefault
	// reports whether the IngressClass of that name is the cluster's default class.
	IngressClass          string
	IngressClassIsDefault bool

	Ingresses      []*netv1.Ingress
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Secrets        []*corev1.Secret

	// Kong custom resources. Empty when their CRD is not installed.
	KongPlugins        []*kongv1.KongPlugin
	KongClusterPlugins []*kongv1.KongClusterPlugin
}
