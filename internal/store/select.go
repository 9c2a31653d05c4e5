package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Select returns a snapshot holding the objects of s that keep accepts, and the same class
// settings. It is how a fallback configuration leaves refused objects out (translation-rules.md
// §12.3): the translator then sees a cluster without them. Objects are shared, not copied.
// IngressClassParameters and the Namespaces' labels stay: they are settings (a Gateway
// listener's allowedRoutes selector reads the labels), not a source of Kong entities.
func (s *Snapshot) Select(keep func(gvk schema.GroupVersionKind, obj client.Object) bool) *Snapshot {
	out := &Snapshot{
		IngressClass: s.IngressClass, IngressClassIsDefault: s.IngressClassIsDefault,
		IngressClassParameters: s.IngressClassParameters, NamespaceLabels: s.NamespaceLabels,
	}
	out.Ingresses = selectKind(KindIngress, s.Ingresses, keep)
	out.Services = selectKind(KindService, s.Services, keep)
	out.EndpointSlices = selectKind(KindEndpointSlice, s.EndpointSlices, keep)
	out.Secrets = selectKind(KindSecret, s.Secrets, keep)
	out.SecretsPending = selectKind(KindSecret, s.SecretsPending, keep)
	out.ConfigMapsPending = selectKind(KindConfigMap, s.ConfigMapsPending, keep)
	out.ConfigMaps = selectKind(KindConfigMap, s.ConfigMaps, keep)
	out.KongPlugins = selectKind(KindKongPlugin, s.KongPlugins, keep)
	out.KongClusterPlugins = selectKind(KindKongClusterPlugin, s.KongClusterPlugins, keep)
	out.KongConsumers = selectKind(KindKongConsumer, s.KongConsumers, keep)
	out.KongConsumerGroups = selectKind(KindKongConsumerGroup, s.KongConsumerGroups, keep)
	out.KongUpstreamPolicies = selectKind(KindKongUpstreamPolicy, s.KongUpstreamPolicies, keep)
	out.KongIngresses = selectKind(KindKongIngress, s.KongIngresses, keep)
	out.TCPIngresses = selectKind(KindTCPIngress, s.TCPIngresses, keep)
	out.UDPIngresses = selectKind(KindUDPIngress, s.UDPIngresses, keep)
	out.KongVaults = selectKind(KindKongVault, s.KongVaults, keep)
	out.ReferenceGrants = selectKind(KindReferenceGrant, s.ReferenceGrants, keep)
	out.KongServiceFacades = selectKind(KindKongServiceFacade, s.KongServiceFacades, keep)
	out.KongCustomEntities = selectKind(KindKongCustomEntity, s.KongCustomEntities, keep)
	out.KongLicenses = selectKind(KindKongLicense, s.KongLicenses, keep)
	out.GatewayClasses = selectKind(KindGatewayClass, s.GatewayClasses, keep)
	out.Gateways = selectKind(KindGateway, s.Gateways, keep)
	out.HTTPRoutes = selectKind(KindHTTPRoute, s.HTTPRoutes, keep)
	out.GRPCRoutes = selectKind(KindGRPCRoute, s.GRPCRoutes, keep)
	out.TCPRoutes = selectKind(KindTCPRoute, s.TCPRoutes, keep)
	out.TLSRoutes = selectKind(KindTLSRoute, s.TLSRoutes, keep)
	out.UDPRoutes = selectKind(KindUDPRoute, s.UDPRoutes, keep)
	out.BackendTLSPolicies = selectKind(KindBackendTLSPolicy, s.BackendTLSPolicies, keep)
	out.ListenerSets = selectKind(KindListenerSet, s.ListenerSets, keep)
	return out
}

// Union returns a snapshot with the objects of s and then those of other, with the class
// settings of s. The caller makes sure no object is in both (a fallback takes the objects it
// leaves out of the current snapshot from the last accepted one).
func (s *Snapshot) Union(other *Snapshot) *Snapshot {
	out := s.Select(func(schema.GroupVersionKind, client.Object) bool { return true })
	out.Ingresses = append(out.Ingresses, other.Ingresses...)
	out.Services = append(out.Services, other.Services...)
	out.EndpointSlices = append(out.EndpointSlices, other.EndpointSlices...)
	out.Secrets = append(out.Secrets, other.Secrets...)
	out.SecretsPending = append(out.SecretsPending, other.SecretsPending...)
	out.ConfigMapsPending = append(out.ConfigMapsPending, other.ConfigMapsPending...)
	out.ConfigMaps = append(out.ConfigMaps, other.ConfigMaps...)
	out.KongPlugins = append(out.KongPlugins, other.KongPlugins...)
	out.KongClusterPlugins = append(out.KongClusterPlugins, other.KongClusterPlugins...)
	out.KongConsumers = append(out.KongConsumers, other.KongConsumers...)
	out.KongConsumerGroups = append(out.KongConsumerGroups, other.KongConsumerGroups...)
	out.KongUpstreamPolicies = append(out.KongUpstreamPolicies, other.KongUpstreamPolicies...)
	out.KongIngresses = append(out.KongIngresses, other.KongIngresses...)
	out.TCPIngresses = append(out.TCPIngresses, other.TCPIngresses...)
	out.UDPIngresses = append(out.UDPIngresses, other.UDPIngresses...)
	out.KongVaults = append(out.KongVaults, other.KongVaults...)
	out.ReferenceGrants = append(out.ReferenceGrants, other.ReferenceGrants...)
	out.KongServiceFacades = append(out.KongServiceFacades, other.KongServiceFacades...)
	out.KongCustomEntities = append(out.KongCustomEntities, other.KongCustomEntities...)
	out.KongLicenses = append(out.KongLicenses, other.KongLicenses...)
	out.GatewayClasses = append(out.GatewayClasses, other.GatewayClasses...)
	out.Gateways = append(out.Gateways, other.Gateways...)
	out.HTTPRoutes = append(out.HTTPRoutes, other.HTTPRoutes...)
	out.GRPCRoutes = append(out.GRPCRoutes, other.GRPCRoutes...)
	out.TCPRoutes = append(out.TCPRoutes, other.TCPRoutes...)
	out.TLSRoutes = append(out.TLSRoutes, other.TLSRoutes...)
	out.UDPRoutes = append(out.UDPRoutes, other.UDPRoutes...)
	out.BackendTLSPolicies = append(out.BackendTLSPolicies, other.BackendTLSPolicies...)
	out.ListenerSets = append(out.ListenerSets, other.ListenerSets...)
	return out
}

func selectKind[T client.Object](k Kind, in []T, keep func(schema.GroupVersionKind, client.Object) bool) []T {
	gvk := k.GroupVersionKind()
	out := make([]T, 0, len(in))
	for _, o := range in {
		if keep(gvk, o) {
			out = append(out, o)
		}
	}
	return out
}
