package store

import (
	"sort"
	"strings"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Kind is one kind of object the store reads.
type Kind int

// The kinds the store reads. Kinds built into Kubernetes are always read; custom resources
// (Kong's and Gateway API's) only when their CRD is installed. Gateway API kinds are read at
// v1 (ReferenceGrant at v1beta1, its storage version); TCPRoute, UDPRoute, TLSRoute and
// BackendTLSPolicy, when the cluster does not serve v1, at the older version KIC 3.5 reads,
// converted to v1 (versions.go). A cluster whose CRDs serve none of a kind's versions has the
// kind skipped like a missing CRD.
const (
	KindIngressClass Kind = iota
	KindIngress
	KindService
	KindEndpointSlice
	KindSecret
	KindKongPlugin
	KindKongClusterPlugin
	KindConfigMap
	KindKongConsumer
	KindKongConsumerGroup
	KindKongUpstreamPolicy
	KindKongIngress
	KindTCPIngress
	KindUDPIngress
	KindKongVault
	KindIngressClassParameters
	KindReferenceGrant
	KindGatewayClass
	KindGateway
	KindHTTPRoute
	KindGRPCRoute
	KindTCPRoute
	KindTLSRoute
	KindUDPRoute
	KindBackendTLSPolicy
	// KindListenerSet is read at v1 only (standard from Gateway API v1.5, no older version
	// KIC read).
	KindListenerSet
	KindKongServiceFacade
	KindKongCustomEntity
	KindKongLicense
	// KindNamespace is read as metadata only (labels, for a listener's allowedRoutes
	// namespaces Selector): a cluster's Namespaces cost little that way.
	KindNamespace
	kindCount
)

type kindInfo struct {
	gvk      schema.GroupVersionKind
	resource string // plural, as RBAC and discovery name it
	newObj   func() client.Object
	newList  func() client.ObjectList
	optional bool // CRD-backed
	// cacheLabel, when set, limits the informer to objects carrying that label with the
	// value "true". No kind has one since issue #40: the ConfigMaps a BackendTLSPolicy names
	// carry no label, so every ConfigMap is cached and SecretPayloads drops the data of those
	// translation does not read.
	cacheLabel string
}

// CACertLabel marks the Secrets and ConfigMaps that hold a CA certificate (translation-rules.md §7.4).
const CACertLabel = "konghq.com/ca-cert"

var kinds = [kindCount]kindInfo{
	KindIngressClass: {netv1.SchemeGroupVersion.WithKind("IngressClass"), "ingressclasses",
		func() client.Object { return &netv1.IngressClass{} }, func() client.ObjectList { return &netv1.IngressClassList{} }, false, ""},
	KindIngress: {netv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses",
		func() client.Object { return &netv1.Ingress{} }, func() client.ObjectList { return &netv1.IngressList{} }, false, ""},
	KindService: {corev1.SchemeGroupVersion.WithKind("Service"), "services",
		func() client.Object { return &corev1.Service{} }, func() client.ObjectList { return &corev1.ServiceList{} }, false, ""},
	KindEndpointSlice: {discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), "endpointslices",
		func() client.Object { return &discoveryv1.EndpointSlice{} }, func() client.ObjectList { return &discoveryv1.EndpointSliceList{} }, false, ""},
	KindSecret: {corev1.SchemeGroupVersion.WithKind("Secret"), "secrets",
		func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }, false, ""},
	KindKongPlugin: {kongv1.SchemeGroupVersion.WithKind("KongPlugin"), "kongplugins",
		func() client.Object { return &kongv1.KongPlugin{} }, func() client.ObjectList { return &kongv1.KongPluginList{} }, true, ""},
	KindKongClusterPlugin: {kongv1.SchemeGroupVersion.WithKind("KongClusterPlugin"), "kongclusterplugins",
		func() client.Object { return &kongv1.KongClusterPlugin{} }, func() client.ObjectList { return &kongv1.KongClusterPluginList{} }, true, ""},
	KindConfigMap: {corev1.SchemeGroupVersion.WithKind("ConfigMap"), "configmaps",
		func() client.Object { return &corev1.ConfigMap{} }, func() client.ObjectList { return &corev1.ConfigMapList{} }, false, ""},
	KindKongConsumer: {kongv1.SchemeGroupVersion.WithKind("KongConsumer"), "kongconsumers",
		func() client.Object { return &kongv1.KongConsumer{} }, func() client.ObjectList { return &kongv1.KongConsumerList{} }, true, ""},
	KindKongConsumerGroup: {kongv1beta1.SchemeGroupVersion.WithKind("KongConsumerGroup"), "kongconsumergroups",
		func() client.Object { return &kongv1beta1.KongConsumerGroup{} }, func() client.ObjectList { return &kongv1beta1.KongConsumerGroupList{} }, true, ""},
	KindKongUpstreamPolicy: {kongv1beta1.SchemeGroupVersion.WithKind("KongUpstreamPolicy"), "kongupstreampolicies",
		func() client.Object { return &kongv1beta1.KongUpstreamPolicy{} }, func() client.ObjectList { return &kongv1beta1.KongUpstreamPolicyList{} }, true, ""},
	KindKongIngress: {kongv1.SchemeGroupVersion.WithKind("KongIngress"), "kongingresses",
		func() client.Object { return &kongv1.KongIngress{} }, func() client.ObjectList { return &kongv1.KongIngressList{} }, true, ""},
	KindTCPIngress: {kongv1beta1.SchemeGroupVersion.WithKind("TCPIngress"), "tcpingresses",
		func() client.Object { return &kongv1beta1.TCPIngress{} }, func() client.ObjectList { return &kongv1beta1.TCPIngressList{} }, true, ""},
	KindUDPIngress: {kongv1beta1.SchemeGroupVersion.WithKind("UDPIngress"), "udpingresses",
		func() client.Object { return &kongv1beta1.UDPIngress{} }, func() client.ObjectList { return &kongv1beta1.UDPIngressList{} }, true, ""},
	KindKongVault: {kongv1alpha1.SchemeGroupVersion.WithKind("KongVault"), "kongvaults",
		func() client.Object { return &kongv1alpha1.KongVault{} }, func() client.ObjectList { return &kongv1alpha1.KongVaultList{} }, true, ""},
	KindIngressClassParameters: {kongv1alpha1.SchemeGroupVersion.WithKind("IngressClassParameters"), "ingressclassparameterses",
		func() client.Object { return &kongv1alpha1.IngressClassParameters{} }, func() client.ObjectList { return &kongv1alpha1.IngressClassParametersList{} }, true, ""},
	KindReferenceGrant: {gatewayv1beta1.SchemeGroupVersion.WithKind("ReferenceGrant"), "referencegrants",
		func() client.Object { return &gatewayv1beta1.ReferenceGrant{} }, func() client.ObjectList { return &gatewayv1beta1.ReferenceGrantList{} }, true, ""},
	KindGatewayClass: {gatewayv1.SchemeGroupVersion.WithKind("GatewayClass"), "gatewayclasses",
		func() client.Object { return &gatewayv1.GatewayClass{} }, func() client.ObjectList { return &gatewayv1.GatewayClassList{} }, true, ""},
	KindGateway: {gatewayv1.SchemeGroupVersion.WithKind("Gateway"), "gateways",
		func() client.Object { return &gatewayv1.Gateway{} }, func() client.ObjectList { return &gatewayv1.GatewayList{} }, true, ""},
	KindHTTPRoute: {gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute"), "httproutes",
		func() client.Object { return &gatewayv1.HTTPRoute{} }, func() client.ObjectList { return &gatewayv1.HTTPRouteList{} }, true, ""},
	KindGRPCRoute: {gatewayv1.SchemeGroupVersion.WithKind("GRPCRoute"), "grpcroutes",
		func() client.Object { return &gatewayv1.GRPCRoute{} }, func() client.ObjectList { return &gatewayv1.GRPCRouteList{} }, true, ""},
	KindTCPRoute: {gatewayv1.SchemeGroupVersion.WithKind("TCPRoute"), "tcproutes",
		func() client.Object { return &gatewayv1.TCPRoute{} }, func() client.ObjectList { return &gatewayv1.TCPRouteList{} }, true, ""},
	KindTLSRoute: {gatewayv1.SchemeGroupVersion.WithKind("TLSRoute"), "tlsroutes",
		func() client.Object { return &gatewayv1.TLSRoute{} }, func() client.ObjectList { return &gatewayv1.TLSRouteList{} }, true, ""},
	KindUDPRoute: {gatewayv1.SchemeGroupVersion.WithKind("UDPRoute"), "udproutes",
		func() client.Object { return &gatewayv1.UDPRoute{} }, func() client.ObjectList { return &gatewayv1.UDPRouteList{} }, true, ""},
	KindBackendTLSPolicy: {gatewayv1.SchemeGroupVersion.WithKind("BackendTLSPolicy"), "backendtlspolicies",
		func() client.Object { return &gatewayv1.BackendTLSPolicy{} }, func() client.ObjectList { return &gatewayv1.BackendTLSPolicyList{} }, true, ""},
	KindListenerSet: {gatewayv1.SchemeGroupVersion.WithKind("ListenerSet"), "listenersets",
		func() client.Object { return &gatewayv1.ListenerSet{} }, func() client.ObjectList { return &gatewayv1.ListenerSetList{} }, true, ""},
	KindKongServiceFacade: {incubatorv1alpha1.GroupVersion.WithKind("KongServiceFacade"), "kongservicefacades",
		func() client.Object { return &incubatorv1alpha1.KongServiceFacade{} }, func() client.ObjectList { return &incubatorv1alpha1.KongServiceFacadeList{} }, true, ""},
	KindKongCustomEntity: {kongv1alpha1.SchemeGroupVersion.WithKind("KongCustomEntity"), "kongcustomentities",
		func() client.Object { return &kongv1alpha1.KongCustomEntity{} }, func() client.ObjectList { return &kongv1alpha1.KongCustomEntityList{} }, true, ""},
	KindKongLicense: {kongv1alpha1.SchemeGroupVersion.WithKind("KongLicense"), "konglicenses",
		func() client.Object { return &kongv1alpha1.KongLicense{} }, func() client.ObjectList { return &kongv1alpha1.KongLicenseList{} }, true, ""},
	KindNamespace: {corev1.SchemeGroupVersion.WithKind("Namespace"), "namespaces",
		func() client.Object { return NamespaceMetadata() }, func() client.ObjectList { return namespaceMetadataList() }, false, ""},
}

// NamespaceMetadata is an empty Namespace read as metadata only (the cache then keeps a
// metadata informer: no spec, no status).
func NamespaceMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
}

func namespaceMetadataList() *metav1.PartialObjectMetadataList {
	return &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}}
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

// CacheSelector is the label selector the kind's informer is limited to; nil for all objects.
func (k Kind) CacheSelector() labels.Selector {
	if set := k.CacheLabels(); set != nil {
		return labels.SelectorFromSet(set)
	}
	return nil
}

// CacheLabels are the labels (with their values) the kind's informer is limited to; nil for
// all objects.
func (k Kind) CacheLabels() labels.Set {
	if kinds[k].cacheLabel == "" {
		return nil
	}
	return labels.Set{kinds[k].cacheLabel: "true"}
}

// KindNamed returns the kind whose name (Ingress, KongPlugin, ...) is name.
func KindNamed(name string) (Kind, bool) {
	for _, k := range AllKinds() {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

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
