package admission

import (
	"encoding/json"
	"fmt"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// reviewedKinds are the kinds the webhook judges by translation: every kind the translator
// reads that a user writes and that can carry a mistake. Reviews of other resources are
// allowed untouched. Gateways are reviewed for what they do to the HTTPRoutes attached to
// them; the Gateway API route kinds konductor does not translate yet (GRPCRoute, TCPRoute,
// ...) are not.
var reviewedKinds = []store.Kind{
	store.KindIngress, store.KindService, store.KindSecret,
	store.KindKongPlugin, store.KindKongClusterPlugin,
	store.KindKongConsumer, store.KindKongConsumerGroup,
	store.KindKongUpstreamPolicy, store.KindKongIngress,
	store.KindTCPIngress, store.KindUDPIngress, store.KindKongVault,
	store.KindHTTPRoute, store.KindGateway,
}

// kindOf finds the reviewed kind of a request's resource (group, version and plural name).
func kindOf(res metav1.GroupVersionResource) (store.Kind, bool) {
	for _, k := range reviewedKinds {
		gvk := k.GroupVersionKind()
		if gvk.Group == res.Group && gvk.Version == res.Version && k.Resource() == res.Resource {
			return k, true
		}
	}
	return 0, false
}

// decode reads a request's raw object as a typed object of kind k.
func decode(k store.Kind, raw []byte) (client.Object, error) {
	obj := k.NewObject()
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", k, err)
	}
	return obj, nil
}

// refOf names obj of kind k as problems and the object graph name it.
func refOf(k store.Kind, obj client.Object) kongstate.ObjectRef {
	return kongstate.RefFor(obj, k.GroupVersionKind())
}

// classed reports whether obj belongs to the ingress class of snap, by the store's filters
// (translation-rules.md §1.1, §1.2); kinds without a class filter always do.
func classed(snap *store.Snapshot, obj client.Object) bool {
	switch o := obj.(type) {
	case *netv1.Ingress:
		return store.IngressMatchesClass(o, snap.IngressClass, snap.IngressClassIsDefault)
	case *kongv1.KongClusterPlugin, *kongv1.KongConsumer, *kongv1beta1.KongConsumerGroup,
		*kongv1beta1.TCPIngress, *kongv1beta1.UDPIngress, *kongv1alpha1.KongVault:
		return store.AnnotationMatchesClass(o.GetAnnotations(), snap.IngressClass, snap.IngressClassIsDefault)
	}
	return true
}

// withObject returns a copy of snap in which obj replaces the object of its kind, namespace
// and name (or joins the snapshot when there is none). The copy shares every other object
// with snap; neither is modified.
func withObject(snap *store.Snapshot, obj client.Object) *store.Snapshot {
	s := *snap
	switch o := obj.(type) {
	case *netv1.Ingress:
		s.Ingresses = replaced(s.Ingresses, o)
	case *corev1.Service:
		s.Services = replaced(s.Services, o)
	case *corev1.Secret:
		s.Secrets = replaced(s.Secrets, o)
	case *kongv1.KongPlugin:
		s.KongPlugins = replaced(s.KongPlugins, o)
	case *kongv1.KongClusterPlugin:
		s.KongClusterPlugins = replaced(s.KongClusterPlugins, o)
	case *kongv1.KongConsumer:
		s.KongConsumers = replaced(s.KongConsumers, o)
	case *kongv1beta1.KongConsumerGroup:
		s.KongConsumerGroups = replaced(s.KongConsumerGroups, o)
	case *kongv1beta1.KongUpstreamPolicy:
		s.KongUpstreamPolicies = replaced(s.KongUpstreamPolicies, o)
	case *kongv1.KongIngress:
		s.KongIngresses = replaced(s.KongIngresses, o)
	case *kongv1beta1.TCPIngress:
		s.TCPIngresses = replaced(s.TCPIngresses, o)
	case *kongv1beta1.UDPIngress:
		s.UDPIngresses = replaced(s.UDPIngresses, o)
	case *kongv1alpha1.KongVault:
		s.KongVaults = replaced(s.KongVaults, o)
	case *gatewayv1.HTTPRoute:
		s.HTTPRoutes = replaced(s.HTTPRoutes, o)
	case *gatewayv1.Gateway:
		s.Gateways = replaced(s.Gateways, o)
	}
	return &s
}

// replaced is list without the object of obj's namespace and name, plus obj.
func replaced[T client.Object](list []T, obj T) []T {
	out := make([]T, 0, len(list)+1)
	for _, o := range list {
		if o.GetNamespace() == obj.GetNamespace() && o.GetName() == obj.GetName() {
			continue
		}
		out = append(out, o)
	}
	return append(out, obj)
}

// pluginsReading lists the KongPlugins and KongClusterPlugins of snap whose configuration
// reads Secret ns/name (configFrom or configPatches): a change of that Secret changes their
// configuration even when nothing attaches them yet.
func pluginsReading(snap *store.Snapshot, ns, name string) []client.Object {
	var out []client.Object
	for _, p := range snap.KongPlugins {
		if p == nil || p.Namespace != ns {
			continue
		}
		reads := p.ConfigFrom != nil && p.ConfigFrom.SecretValue.Secret == name
		for _, cp := range p.ConfigPatches {
			reads = reads || cp.ValueFrom.SecretValue.Secret == name
		}
		if reads {
			out = append(out, p)
		}
	}
	for _, p := range snap.KongClusterPlugins {
		if p == nil {
			continue
		}
		reads := p.ConfigFrom != nil && p.ConfigFrom.SecretValue.Namespace == ns && p.ConfigFrom.SecretValue.Secret == name
		for _, cp := range p.ConfigPatches {
			reads = reads || (cp.ValueFrom.SecretValue.Namespace == ns && cp.ValueFrom.SecretValue.Secret == name)
		}
		if reads {
			out = append(out, p)
		}
	}
	return out
}

// storedPlugin is the plugin of snap with obj's kind, namespace and name, or nil.
func storedPlugin(snap *store.Snapshot, obj client.Object) client.Object {
	switch obj.(type) {
	case *kongv1.KongPlugin:
		for _, p := range snap.KongPlugins {
			if p != nil && p.Namespace == obj.GetNamespace() && p.Name == obj.GetName() {
				return p
			}
		}
	case *kongv1.KongClusterPlugin:
		for _, p := range snap.KongClusterPlugins {
			if p != nil && p.Name == obj.GetName() {
				return p
			}
		}
	}
	return nil
}

// pluginSecrets are the Secrets a KongPlugin or KongClusterPlugin reads (configFrom,
// configPatches); none for another object.
func pluginSecrets(obj client.Object) []types.NamespacedName {
	var out []types.NamespacedName
	switch p := obj.(type) {
	case *kongv1.KongPlugin:
		if p.ConfigFrom != nil {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.ConfigFrom.SecretValue.Secret})
		}
		for _, cp := range p.ConfigPatches {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: cp.ValueFrom.SecretValue.Secret})
		}
	case *kongv1.KongClusterPlugin:
		if p.ConfigFrom != nil {
			out = append(out, types.NamespacedName{Namespace: p.ConfigFrom.SecretValue.Namespace, Name: p.ConfigFrom.SecretValue.Secret})
		}
		for _, cp := range p.ConfigPatches {
			out = append(out, types.NamespacedName{Namespace: cp.ValueFrom.SecretValue.Namespace, Name: cp.ValueFrom.SecretValue.Secret})
		}
	}
	return out
}
