package store

import (
	"sort"
	"strings"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is one kind of object the store reads.
type Kind int

// The kinds the store reads. The first five are built into Kubernetes and always read; the
// rest are Kong custom resources, read only when their CRD is installed.
const (
	KindIngressClass Kind = iota
	KindIngress
	KindService
	KindEndpointSlice
	KindSecret
	KindKongPlugin
	KindKongClusterPlugin
	kindCount
)

type kindInfo struct {
	gvk      schema.GroupVersionKind
	resource string // plural, as RBAC and discovery name it
	newObj   func() client.Object
	newList  func() client.ObjectList
	optional bool // CRD-backed
}

var kinds = [kindCount]kindInfo{
	KindIngressClass: {netv1.SchemeGroupVersion.WithKind("IngressClass"), "ingressclasses",
		func() client.Object { return &netv1.IngressClass{} }, func() client.ObjectList { return &netv1.IngressClassList{} }, false},
	KindIngress: {netv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses",
		func() client.Object { return &netv1.Ingress{} }, func() client.ObjectList { return &netv1.IngressList{} }, false},
	KindService: {corev1.SchemeGroupVersion.WithKind("Service"), "services",
		func() client.Object { return &corev1.Service{} }, func() client.ObjectList { return &corev1.ServiceList{} }, false},
	KindEndpointSlice: {discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), "endpointslices",
		func() client.Object { return &discoveryv1.EndpointSlice{} }, func() client.ObjectList { return &discoveryv1.EndpointSliceList{} }, false},
	KindSecret: {corev1.SchemeGroupVersion.WithKind("Secret"), "secrets",
		func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }, false},
	KindKongPlugin: {kongv1.SchemeGroupVersion.WithKind("KongPlugin"), "kongplugins",
		func() client.Object { return &kongv1.KongPlugin{} }, func() client.ObjectList { return &kongv1.KongPluginList{} }, true},
	KindKongClusterPlugin: {kongv1.SchemeGroupVersion.WithKind("KongClusterPlugin"), "kongclusterplugins",
		func() client.Object { return &kongv1.KongClusterPlugin{} }, func() client.ObjectList { return &kongv1.KongClusterPluginList{} }, true},
}

// AllKinds lists every kind the store knows, required ones first.
func AllKinds() []Kind {
	out := make([]Kind, 0, kindCount)
	for k := Kind(0); k < kindCount; k++ {
		out = append(out, k)
	}
	return out
}

// String is the kind's name, for example "Ingress".
func (k Kind) String() string { return kinds[k].gvk.Kind }

// GroupVersionKind is the kind's API group, version and kind.
func (k Kind) GroupVersionKind() schema.GroupVersionKind { return kinds[k].gvk }

// Resource is the plural resource name, as RBAC rules and discovery name it.
func (k Kind) Resource() string { return kinds[k].resource }

// Optional reports whether the kind is a custom resource that may not be installed.
func (k Kind) Optional() bool { return kinds[k].optional }

// NewObject returns an empty object of the kind, for informer registration.
func (k Kind) NewObject() client.Object { return kinds[k].newObj() }

// NewList returns an empty list of the kind.
func (k Kind) NewList() client.ObjectList { return kinds[k].newList() }

// KindSet is a set of kinds.
type KindSet map[Kind]struct{}

// NewKindSet returns a set holding ks.
func NewKindSet(ks ...Kind) KindSet {
	s := KindSet{}
	for _, k := range ks {
		s[k] = struct{}{}
	}
	return s
}

// Has reports whether k is in the set.
func (s KindSet) Has(k Kind) bool { _, ok := s[k]; return ok }

// Sorted returns the kinds in declaration order.
func (s KindSet) Sorted() []Kind {
	out := make([]Kind, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (s KindSet) String() string {
	names := make([]string, 0, len(s))
	for _, k := range s.Sorted() {
		names = append(names, k.String())
	}
	return strings.Join(names, ",")
}

// ReadKinds is the set of kinds a store with these options reads: every required kind plus
// the optional kinds in opts.Kinds. These are the informers the manager must register and the
// sync loop must wait for.
func ReadKinds(optional KindSet) KindSet {
	s := KindSet{}
	for _, k := range AllKinds() {
		if !k.Optional() || optional.Has(k) {
			s[k] = struct{}{}
		}
	}
	return s
}
