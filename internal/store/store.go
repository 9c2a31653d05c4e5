package store

import (
	"context"
	"fmt"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Options selects what the store shows the translator.
type Options struct {
	// IngressClass is the class this controller serves (--ingress-class). Default "kong".
	IngressClass string
	// Namespaces limits namespaced kinds to these namespaces (--watch-namespace). Empty means all.
	Namespaces []string
	// Kinds is the set of optional (CRD-backed) kinds whose CRD is installed. Kinds not listed
	// here are never read. Required kinds are always read.
	Kinds KindSet
	// Versions are the versions kinds of Kinds are read at where not their own: TCPRoute,
	// UDPRoute, TLSRoute and BackendTLSPolicy of a cluster that serves them only at the
	// versions KIC 3.5 reads (Kind.Versions), converted to v1 on read. Nil: their own.
	Versions Versions
	// Live, when set, replaces Kinds and Versions: the set as it is when each Snapshot starts
	// (CRDs installed or removed while the controller runs).
	Live *LiveKinds
	// Off are kinds never read, required ones included (KIC's --enable-controller-* switches
	// turned off): their fields stay empty. Without IngressClass, the class is not looked up
	// (it is not the default class), as KIC's DisableIngressClassLookups.
	Off KindSet
	// Gateway, when set, is the only Gateway read (KIC's --gateway-to-reconcile).
	Gateway *types.NamespacedName
}

// DefaultIngressClass is KIC's default --ingress-class.
const DefaultIngressClass = "kong"

// Store is the read-only view. It is safe for concurrent use; it keeps no state beyond its
// options, so every Snapshot reads the cache as it is at that moment.
type Store struct {
	reader client.Reader
	opts   Options
	conv   *conversions // shared by the copies SnapshotOf makes
}

// New returns a store over reader, which in the controller is the manager's cache-backed
// client (mgr.GetClient() or mgr.GetCache()), never a client that reads the API server.
func New(reader client.Reader, opts Options) *Store {
	if opts.IngressClass == "" {
		opts.IngressClass = DefaultIngressClass
	}
	return &Store{reader: reader, opts: opts, conv: &conversions{}}
}

// Options returns the options the store was built with.
func (s *Store) Options() Options { return s.opts }

// ListError reports that one kind could not be read. A sync must not go ahead without that
// kind (ARCHITECTURE.md, invariant 6), so Snapshot returns no partial result.
type ListError struct {
	Kind string
	Err  error
}

func (e *ListError) Error() string {
	if apierrors.IsForbidden(e.Err) {
		return fmt.Sprintf("cannot list %s (RBAC forbids list/watch on %s): %v", e.Kind, e.Kind, e.Err)
	}
	return fmt.Sprintf("cannot list %s: %v", e.Kind, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

// Snapshot reads every kind the translator needs. It fails, returning a *ListError, when any
// kind cannot be listed: a configuration that pretends a kind is empty must never reach Kong.
func (s *Store) Snapshot(ctx context.Context) (*Snapshot, error) {
	return s.SnapshotOf(ctx, nil)
}

// SnapshotOf is Snapshot with only the kinds of read listed (nil: all); the fields of the
// others are left empty, and the IngressClass is read whatever read holds. It is for readers
// of a few kinds, such as the status updaters, which run after every round: at 10,000
// Ingresses listing the Ingresses, Services and EndpointSlices each of them does not read was
// a third of the controller's CPU while changes were made.
func (s *Store) SnapshotOf(ctx context.Context, read KindSet) (*Snapshot, error) {
	s = s.current()
	if read != nil {
		fixed := *s
		fixed.opts.Kinds = KindSet{}
		for k := range s.opts.Kinds {
			if read.Has(k) {
				fixed.opts.Kinds[k] = struct{}{}
			}
		}
		s = &fixed
	}
	reads := func(k Kind) bool { return s.readsKind(k) && (read == nil || read.Has(k)) }
	snap := &Snapshot{IngressClass: s.opts.IngressClass}

	var class netv1.IngressClass
	var classErr error = apierrors.NewNotFound(netv1.Resource("ingressclasses"), s.opts.IngressClass)
	if !s.opts.Off.Has(KindIngressClass) {
		classErr = s.reader.Get(ctx, types.NamespacedName{Name: s.opts.IngressClass}, &class)
	}
	switch err := classErr; {
	case err == nil:
		snap.IngressClassIsDefault = IsDefaultClass(&class)
		params, err := s.classParameters(ctx, &class)
		if err != nil {
			return nil, err
		}
		snap.IngressClassParameters = params
	case apierrors.IsNotFound(err):
	default:
		return nil, &ListError{Kind: KindIngressClass.String(), Err: err}
	}

	var err error
	if reads(KindIngress) {
		if snap.Ingresses, err = listShared[netv1.IngressList, netv1.Ingress](ctx, s, KindIngress, s.keepOf(KindIngress, snap)); err != nil {
			return nil, err
		}
	}
	if reads(KindService) {
		if snap.Services, err = listShared[corev1.ServiceList, corev1.Service](ctx, s, KindService, nil); err != nil {
			return nil, err
		}
	}
	if reads(KindEndpointSlice) {
		if snap.EndpointSlices, err = listShared[discoveryv1.EndpointSliceList, discoveryv1.EndpointSlice](ctx, s, KindEndpointSlice, nil); err != nil {
			return nil, err
		}
	}
	if reads(KindSecret) {
		if snap.Secrets, err = listShared[corev1.SecretList, corev1.Secret](ctx, s, KindSecret, nil); err != nil {
			return nil, err
		}
	}
	if reads(KindConfigMap) {
		if snap.ConfigMaps, err = listShared[corev1.ConfigMapList, corev1.ConfigMap](ctx, s, KindConfigMap, nil); err != nil {
			return nil, err
		}
	}

	if snap.KongPlugins, err = listKind[kongv1.KongPluginList, kongv1.KongPlugin](ctx, s, KindKongPlugin, nil); err != nil {
		return nil, err
	}
	if snap.KongClusterPlugins, err = listKind[kongv1.KongClusterPluginList, kongv1.KongClusterPlugin](ctx, s, KindKongClusterPlugin, s.keepOf(KindKongClusterPlugin, snap)); err != nil {
		return nil, err
	}
	if snap.KongConsumers, err = listKind[kongv1.KongConsumerList, kongv1.KongConsumer](ctx, s, KindKongConsumer, s.keepOf(KindKongConsumer, snap)); err != nil {
		return nil, err
	}
	if snap.KongConsumerGroups, err = listKind[kongv1beta1.KongConsumerGroupList, kongv1beta1.KongConsumerGroup](ctx, s, KindKongConsumerGroup, s.keepOf(KindKongConsumerGroup, snap)); err != nil {
		return nil, err
	}
	if snap.KongUpstreamPolicies, err = listKind[kongv1beta1.KongUpstreamPolicyList, kongv1beta1.KongUpstreamPolicy](ctx, s, KindKongUpstreamPolicy, nil); err != nil {
		return nil, err
	}
	if snap.KongIngresses, err = listKind[kongv1.KongIngressList, kongv1.KongIngress](ctx, s, KindKongIngress, nil); err != nil {
		return nil, err
	}
	if snap.TCPIngresses, err = listKind[kongv1beta1.TCPIngressList, kongv1beta1.TCPIngress](ctx, s, KindTCPIngress, s.keepOf(KindTCPIngress, snap)); err != nil {
		return nil, err
	}
	if snap.UDPIngresses, err = listKind[kongv1beta1.UDPIngressList, kongv1beta1.UDPIngress](ctx, s, KindUDPIngress, s.keepOf(KindUDPIngress, snap)); err != nil {
		return nil, err
	}
	if snap.KongVaults, err = listKind[kongv1alpha1.KongVaultList, kongv1alpha1.KongVault](ctx, s, KindKongVault, s.keepOf(KindKongVault, snap)); err != nil {
		return nil, err
	}
	if snap.ReferenceGrants, err = listKind[gatewayv1beta1.ReferenceGrantList, gatewayv1beta1.ReferenceGrant](ctx, s, KindReferenceGrant, nil); err != nil {
		return nil, err
	}
	if snap.KongServiceFacades, err = listKind[incubatorv1alpha1.KongServiceFacadeList, incubatorv1alpha1.KongServiceFacade](ctx, s, KindKongServiceFacade, nil); err != nil {
		return nil, err
	}
	if snap.KongCustomEntities, err = listKind[kongv1alpha1.KongCustomEntityList, kongv1alpha1.KongCustomEntity](ctx, s, KindKongCustomEntity, s.keepOf(KindKongCustomEntity, snap)); err != nil {
		return nil, err
	}
	if snap.KongLicenses, err = listKind[kongv1alpha1.KongLicenseList, kongv1alpha1.KongLicense](ctx, s, KindKongLicense, nil); err != nil {
		return nil, err
	}
	if err := s.gatewayAPI(ctx, snap); err != nil {
		return nil, err
	}
	if reads(KindNamespace) {
		if snap.NamespaceLabels, err = s.namespaceLabels(ctx); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// gatewayAPI reads the Gateway API kinds. No filter beyond the watched namespaces: whether a
// Gateway or route is this controller's depends on its GatewayClass and parents, which
// translation decides (internal/gatewayapi).
func (s *Store) gatewayAPI(ctx context.Context, snap *Snapshot) error {
	var err error
	if snap.GatewayClasses, err = listKind[gatewayv1.GatewayClassList, gatewayv1.GatewayClass](ctx, s, KindGatewayClass, nil); err != nil {
		return err
	}
	if snap.Gateways, err = listKind[gatewayv1.GatewayList, gatewayv1.Gateway](ctx, s, KindGateway, s.keepOf(KindGateway, snap)); err != nil {
		return err
	}
	if snap.HTTPRoutes, err = listKind[gatewayv1.HTTPRouteList, gatewayv1.HTTPRoute](ctx, s, KindHTTPRoute, nil); err != nil {
		return err
	}
	if snap.GRPCRoutes, err = listKind[gatewayv1.GRPCRouteList, gatewayv1.GRPCRoute](ctx, s, KindGRPCRoute, nil); err != nil {
		return err
	}
	// Read at v1, or at the older version the cluster serves them at (Options.Versions).
	if snap.TCPRoutes, err = listConverted[gatewayv1.TCPRouteList, gatewayv1.TCPRoute](ctx, s, KindTCPRoute); err != nil {
		return err
	}
	if snap.TLSRoutes, err = listConverted[gatewayv1.TLSRouteList, gatewayv1.TLSRoute](ctx, s, KindTLSRoute); err != nil {
		return err
	}
	if snap.UDPRoutes, err = listConverted[gatewayv1.UDPRouteList, gatewayv1.UDPRoute](ctx, s, KindUDPRoute); err != nil {
		return err
	}
	if snap.BackendTLSPolicies, err = listConverted[gatewayv1.BackendTLSPolicyList, gatewayv1.BackendTLSPolicy](ctx, s, KindBackendTLSPolicy); err != nil {
		return err
	}
	if snap.ListenerSets, err = listKind[gatewayv1.ListenerSetList, gatewayv1.ListenerSet](ctx, s, KindListenerSet, nil); err != nil {
		return err
	}
	return nil
}

// namespaceLabels reads the labels of every Namespace, from metadata only.
func (s *Store) namespaceLabels(ctx context.Context) (map[string]map[string]string, error) {
	list := namespaceMetadataList()
	if err := s.list(ctx, KindNamespace, list); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = list.Items[i].Labels
	}
	return out, nil
}

// listKind lists an optional kind (nothing when its CRD is not installed) and returns the
// objects in watched namespaces that pass keep (nil keeps all). Cluster-scoped objects
// (namespace "") are always in.
func listKind[L any, T any, PL interface {
	client.ObjectList
	*L
}, PT interface {
	client.Object
	*T
}](ctx context.Context, s *Store, kind Kind, keep func(client.Object) bool) ([]PT, error) {
	if !s.opts.Kinds.Has(kind) {
		return nil, nil
	}
	return listShared[L, T, PL, PT](ctx, s, kind, keep)
}

// classParameters resolves the IngressClass's spec.parameters to IngressClassParameters
// (translation-rules.md §1.4): group configuration.konghq.com, kind IngressClassParameters, scope
// Namespace with a namespace. Anything else, or a missing object, is no parameters.
func (s *Store) classParameters(ctx context.Context, class *netv1.IngressClass) (*kongv1alpha1.IngressClassParameters, error) {
	ref := class.Spec.Parameters
	if ref == nil || !s.opts.Kinds.Has(KindIngressClassParameters) || ref.APIGroup == nil ||
		*ref.APIGroup != kongv1alpha1.GroupVersion.Group || ref.Kind != "IngressClassParameters" ||
		ref.Scope == nil || *ref.Scope != netv1.IngressClassParametersReferenceScopeNamespace ||
		ref.Namespace == nil || *ref.Namespace == "" {
		return nil, nil
	}
	var p kongv1alpha1.IngressClassParameters
	switch err := s.reader.Get(ctx, types.NamespacedName{Namespace: *ref.Namespace, Name: ref.Name}, &p); {
	case err == nil:
		return &p, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, &ListError{Kind: KindIngressClassParameters.String(), Err: err}
	}
}

func (s *Store) list(ctx context.Context, kind Kind, list client.ObjectList) error {
	// No deep copy: a snapshot is read-only (Snapshot's contract), and copying every Secret,
	// Service and EndpointSlice of the cluster on each sync would cost more than translating.
	if err := s.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return &ListError{Kind: kind.String(), Err: err}
	}
	return nil
}

func (s *Store) inNamespace(ns string) bool {
	if len(s.opts.Namespaces) == 0 {
		return true
	}
	for _, n := range s.opts.Namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// current is s with the kinds and versions its Live set holds now (s when it has none),
// fixed: what is read through it reads the set once (a Follower's round, which decides
// what it follows and lists the rest with it, never mixes two sets: LiveKinds' promise).
func (s *Store) current() *Store {
	if s.opts.Live == nil {
		return s
	}
	fixed := *s
	fixed.opts.Kinds, fixed.opts.Versions = s.opts.Live.LoadWithVersions()
	fixed.opts.Live = nil
	return &fixed
}

// readsKind reports whether s (current) reads kind k at all: a kind of the cluster that is not
// turned off, or an optional kind whose CRD is installed.
func (s *Store) readsKind(k Kind) bool {
	if k.Optional() {
		return s.opts.Kinds.Has(k)
	}
	return !s.opts.Off.Has(k)
}

// keepOf is which objects of kind k a snapshot shows beside the watched namespaces' (nil:
// all), given its IngressClass (IngressClassIsDefault): the Ingresses and the Kong kinds of
// the class (translation-rules.md §1.2; a custom entity's spec.controllerName stands for the
// annotation), and only the Gateway to reconcile when one is configured. The Follower keeps
// the same objects as the listing (one definition for both).
func (s *Store) keepOf(k Kind, snap *Snapshot) func(client.Object) bool {
	class, isDefault := s.opts.IngressClass, snap.IngressClassIsDefault
	switch k {
	case KindIngress:
		return func(o client.Object) bool { return IngressMatchesClass(o.(*netv1.Ingress), class, isDefault) }
	case KindKongClusterPlugin, KindKongConsumer, KindKongConsumerGroup, KindTCPIngress, KindUDPIngress, KindKongVault:
		return func(o client.Object) bool { return AnnotationMatchesClass(o.GetAnnotations(), class, isDefault) }
	case KindKongCustomEntity:
		return func(o client.Object) bool {
			return AnnotationMatchesClass(map[string]string{IngressClassAnnotation: o.(*kongv1alpha1.KongCustomEntity).Spec.ControllerName},
				class, isDefault)
		}
	case KindGateway:
		if only := s.opts.Gateway; only != nil {
			return func(o client.Object) bool { return o.GetNamespace() == only.Namespace && o.GetName() == only.Name }
		}
	}
	return nil
}
