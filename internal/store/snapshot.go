package store

import (
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Snapshot is every object the translator reads, as the cache held them at one moment.
//
// Ingresses, KongClusterPlugins, KongConsumers, KongConsumerGroups, TCPIngresses, UDPIngresses
// and KongVaults are already filtered by ingress class (translation-rules.md §1.2); every namespaced object
// is already filtered by the watched namespaces. Objects are shared with the cache: readers
// must treat them as immutable. Slices are in no particular order; the translator sorts.
type Snapshot struct {
	// IngressClass is the configured class name (--ingress-class) and IngressClassIsDefault
	// reports whether the IngressClass of that name is the cluster's default class.
	IngressClass          string
	IngressClassIsDefault bool
	// IngressClassParameters are the parameters the IngressClass refers to (translation-rules.md
	// §1.4); nil when it refers to none, or to one that does not exist.
	IngressClassParameters *kongv1alpha1.IngressClassParameters

	Ingresses      []*netv1.Ingress
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Secrets        []*corev1.Secret
	// SecretsPending are Secrets the cache holds without their data (SecretPayloads) and
	// whose data is not loaded yet: they are not in Secrets, so translation takes them for
	// absent, never for empty.
	SecretsPending []*corev1.Secret
	// ConfigMaps are those whose data the cache holds: labelled konghq.com/ca-cert (and
	// --configmap-label-selector), or named by a BackendTLSPolicy (SecretPayloads), or empty.
	ConfigMaps []*corev1.ConfigMap
	// ConfigMapsPending are ConfigMaps the cache holds without their data, as SecretsPending.
	ConfigMapsPending []*corev1.ConfigMap

	// Kong custom resources. Empty when their CRD is not installed.
	KongPlugins          []*kongv1.KongPlugin
	KongClusterPlugins   []*kongv1.KongClusterPlugin
	KongConsumers        []*kongv1.KongConsumer
	KongConsumerGroups   []*kongv1beta1.KongConsumerGroup
	KongUpstreamPolicies []*kongv1beta1.KongUpstreamPolicy
	KongIngresses        []*kongv1.KongIngress
	TCPIngresses         []*kongv1beta1.TCPIngress
	UDPIngresses         []*kongv1beta1.UDPIngress
	KongVaults           []*kongv1alpha1.KongVault
	ReferenceGrants      []*gatewayv1beta1.ReferenceGrant
	// KongServiceFacades are Ingress backends (KIC's incubator, its KongServiceFacade gate).
	KongServiceFacades []*incubatorv1alpha1.KongServiceFacade
	// KongCustomEntities are already filtered by spec.controllerName, which stands for the
	// class annotation (translation-rules.md §1.2).
	KongCustomEntities []*kongv1alpha1.KongCustomEntity
	// KongLicenses are cluster-scoped and have no class: every one is a candidate.
	KongLicenses []*kongv1alpha1.KongLicense

	// Gateway API objects, all of them: which GatewayClasses, Gateways and routes are this
	// controller's is decided in translation (internal/gatewayapi), because status needs the
	// same decision for the objects that are not. Empty when their CRD is not installed.
	GatewayClasses     []*gatewayv1.GatewayClass
	Gateways           []*gatewayv1.Gateway
	HTTPRoutes         []*gatewayv1.HTTPRoute
	GRPCRoutes         []*gatewayv1.GRPCRoute
	TCPRoutes          []*gatewayv1.TCPRoute
	TLSRoutes          []*gatewayv1.TLSRoute
	UDPRoutes          []*gatewayv1.UDPRoute
	BackendTLSPolicies []*gatewayv1.BackendTLSPolicy
	// ListenerSets add listeners to a Gateway that allows them (spec.allowedListeners).
	ListenerSets []*gatewayv1.ListenerSet
	// NamespaceLabels are the labels of every Namespace (watched or not: a listener's
	// allowedRoutes Selector reads them), by name.
	NamespaceLabels map[string]map[string]string

	// Seq numbers a Follower's snapshots (0 in any other), and Changes, when set, says
	// which objects of each kind it follows may differ from those of the snapshot before it
	// (Changes.Since), so that a translator of both looks at those only: the round's one
	// change set.
	Seq     uint64
	Changes *Changes
}
