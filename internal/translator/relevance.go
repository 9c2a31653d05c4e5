package translator

import (
	"maps"
	"reflect"
	"slices"
	"sync/atomic"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// Relevance tells, for an informer event, whether it can change what translation produces,
// so that events that cannot (a status write, a resync, a Secret nothing refers to, an
// Ingress of another class) do not wake the sync loop (issue #13). It errs on the side of a
// round: an object kind it knows nothing of is relevant, and before the first translation
// every reference counts. The periodic resync translates everything anyway, so a round it
// skips wrongly costs at most one period.
type Relevance struct {
	// IngressClass is the class served (--ingress-class).
	IngressClass string
	graph        atomic.Pointer[objgraph.Graph]
}

// SetGraph records the object graph of the latest translation.
func (r *Relevance) SetGraph(g *objgraph.Graph) { r.graph.Store(g) }

// Relevant reports whether the change from old to new can change the translation. old is nil
// for an object added, new nil for one deleted.
func (r *Relevance) Relevant(old, new client.Object) bool {
	return r.Verdict(old, new) == Relevant
}

// Verdict is Relevant with the reason of a change that cannot change the translation, which
// the trigger counts and logs (konductor_events_total{outcome}): a change dropped there
// reaches Kong only at the next periodic resync, and the operator asking why it did not
// reach Kong reads the reason (docs/troubleshooting.md, "A change did not reach Kong").
func (r *Relevance) Verdict(old, new client.Object) Verdict {
	return relevanceRule{graph: r.graph.Load(), class: classOr(r.IngressClass)}.verdict(old, new)
}

// Graph is the object graph of the latest translation (nil before one): who refers to what.
func (r *Relevance) Graph() *objgraph.Graph { return r.graph.Load() }

// Verdict is what Relevance says of a change: Relevant, or why it cannot change the
// translation. The values are the outcome label of konductor_events_total.
type Verdict string

const (
	// Relevant: the change may change the translation; it wakes a round.
	Relevant Verdict = "relevant"
	// SameContent: an update that changed nothing translation reads (a Secret's, a
	// Service's, an EndpointSlice's data unchanged; a resync).
	SameContent Verdict = "same_content"
	// StatusOnly: an update of a kind with a generation that kept it: metadata or status
	// only (the leader's own status write, a resync).
	StatusOnly Verdict = "status_only"
	// OtherClass: an object of an ingress class this controller does not serve, before and
	// after the change.
	OtherClass Verdict = "other_class"
	// NotReferred: an object nothing the latest translation served refers to (a Secret, a
	// Service, a plugin, an EndpointSlice of such a Service, a Namespace's labels no Gateway
	// selects by).
	NotReferred Verdict = "not_referred"
)

// relevanceRule is the one rule of which changes can change what translation produces, with
// the graph of a translation and the class served: the wake filter's at event time
// (Relevance, with the latest translation's graph), and the round's for the changes of the
// kinds Incremental does not splice (othersUnchanged, with the previous round's), so that a
// change that cannot wake a round does not make one a full translation either. A nil graph
// (no translation yet): every reference counts.
type relevanceRule struct {
	graph *objgraph.Graph
	class string
}

// classOr is class, or the default class for none.
func classOr(class string) string {
	if class == "" {
		return store.DefaultIngressClass
	}
	return class
}

// matters reports whether the change from old (nil: added) to new (nil: deleted) can change
// the translation.
func (r relevanceRule) matters(old, new client.Object) bool { return r.verdict(old, new) == Relevant }

// verdict is matters with the reason of a change that cannot change the translation.
func (r relevanceRule) verdict(old, new client.Object) Verdict {
	// A Secret or ConfigMap the cache keeps without its data (store.SecretPayloads: nothing
	// referred to it) shows no change of its data: whether it matters is whether something refers to it now.
	if old != nil && new != nil && !payloadDropped(old) {
		if same, generation := sameContent(old, new); same {
			if generation {
				return StatusOnly
			}
			return SameContent
		}
	}
	obj := new
	if obj == nil {
		obj = old
	}
	if obj == nil {
		return Relevant
	}
	switch o := obj.(type) {
	case *netv1.Ingress:
		return r.classMayMatch(old, new, func(x client.Object) bool {
			ing := x.(*netv1.Ingress)
			if v := ing.Annotations[store.IngressClassAnnotation]; v != "" {
				return v == r.class
			}
			return ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName == r.class
		})
	case *kongv1.KongConsumer, *kongv1beta1.KongConsumerGroup, *kongv1beta1.TCPIngress, *kongv1beta1.UDPIngress:
		return r.classMayMatch(old, new, r.annotationClassMayMatch)
	case *kongv1.KongClusterPlugin:
		if labelled(old, new, "global", "true") {
			return r.classMayMatch(old, new, r.annotationClassMayMatch)
		}
		return r.referred(obj, gvkKongClusterPlugin)
	case *kongv1.KongPlugin:
		return r.referred(obj, gvkKongPlugin)
	case *corev1.Service:
		return r.referred(obj, gvkService)
	case *corev1.Secret:
		// CA certificates are read by label; everything else a Secret holds only matters
		// to an object that refers to it.
		if labelled(old, new, store.CACertLabel, "true") {
			return Relevant
		}
		return r.referred(obj, gvkSecret)
	case *corev1.ConfigMap:
		// Every ConfigMap is cached (issue #40): only the labelled ones (CA certificates,
		// read by label) and those something refers to (a BackendTLSPolicy, a Service's
		// konghq.com/ca-certificates-configmap) matter.
		if labelled(old, new, store.CACertLabel, "true") {
			return Relevant
		}
		return r.referred(obj, gvkConfigMap)
	case *discoveryv1.EndpointSlice:
		svc := o.Labels[discoveryv1.LabelServiceName]
		if old != nil && old.GetLabels()[discoveryv1.LabelServiceName] != svc || svc == "" {
			return Relevant
		}
		return r.reached(o)
	case *kongv1beta1.KongUpstreamPolicy:
		return r.referred(obj, gvkKongUpstreamPolicy)
	case *kongv1.KongIngress:
		return r.referred(obj, gvkKongIngress)
	case *metav1.PartialObjectMetadata:
		// Namespaces, read as metadata: only their labels matter, and only to a Gateway
		// that admits routes by namespace Selector.
		if old != nil && new != nil && maps.Equal(old.GetLabels(), new.GetLabels()) {
			return SameContent
		}
		return r.reached(o)
	}
	return Relevant
}

// Reaches is where a change of obj enters the object graph: obj's own node, and for an
// EndpointSlice the Service it belongs to (slices are found by their label, not named),
// for a Namespace the node every Gateway that admits routes by namespace labels refers to.
// Graph.Dependents of these is what the change can affect.
func Reaches(obj client.Object) []kongstate.ObjectRef {
	// The two kinds Relevance asks about on every event are known without the scheme.
	switch o := obj.(type) {
	case *discoveryv1.EndpointSlice:
		own := kongstate.RefFor(o, gvkEndpointSlice)
		if svc := o.Labels[discoveryv1.LabelServiceName]; svc != "" {
			return []kongstate.ObjectRef{own, ref(gvkService, o.Namespace, svc)}
		}
		return []kongstate.ObjectRef{own}
	case *corev1.Namespace, *metav1.PartialObjectMetadata:
		return []kongstate.ObjectRef{kongstate.RefFor(obj, gvkNamespace), anyNamespaceLabels}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		// Typed objects read through a client have no TypeMeta: the scheme knows their kind.
		gvk, _ = apiutil.GVKForObject(obj, store.Scheme())
	}
	return []kongstate.ObjectRef{kongstate.RefFor(obj, gvk)}
}

// annotationClassMayMatch is false only for an object whose class annotation names another
// class: without one, it is served when the class is the default one, which the event
// cannot tell.
func (r relevanceRule) annotationClassMayMatch(x client.Object) bool {
	v := x.GetAnnotations()[store.IngressClassAnnotation]
	return v == "" || v == r.class
}

// classMayMatch: relevant when the object may be served before or after the change.
func (r relevanceRule) classMayMatch(old, new client.Object, may func(client.Object) bool) Verdict {
	if old != nil && may(old) || new != nil && may(new) {
		return Relevant
	}
	return OtherClass
}

// reached: relevant when a node obj's change enters the graph by (Reaches) is referred to.
func (r relevanceRule) reached(obj client.Object) Verdict {
	if slices.ContainsFunc(Reaches(obj), r.referredRef) {
		return Relevant
	}
	return NotReferred
}

func (r relevanceRule) referred(obj client.Object, gvk schema.GroupVersionKind) Verdict {
	if r.referredRef(kongstate.RefFor(obj, gvk)) {
		return Relevant
	}
	return NotReferred
}

// referredRef: before the first translation (no graph) everything counts.
func (r relevanceRule) referredRef(ref kongstate.ObjectRef) bool {
	return r.graph == nil || r.graph.RdepsOf(objgraph.NodeOf(ref)).Len() > 0
}

// payloadDropped: obj is a Secret or ConfigMap the cache keeps without its data.
func payloadDropped(obj client.Object) bool {
	return store.PayloadNotCached(obj)
}

func labelled(old, new client.Object, key, value string) bool {
	return old != nil && old.GetLabels()[key] == value || new != nil && new.GetLabels()[key] == value
}

// sameContent reports whether an update changed nothing translation reads: the same labels
// and annotations (kubectl's last-applied copy aside), and the same spec, which for kinds
// with a generation is the generation (byGeneration true: what changed, if anything, is
// metadata or status) and for the others their data.
func sameContent(old, new client.Object) (same, byGeneration bool) {
	if reflect.TypeOf(old) != reflect.TypeOf(new) || !maps.Equal(old.GetLabels(), new.GetLabels()) ||
		!sameAnnotations(old.GetAnnotations(), new.GetAnnotations()) {
		return false, false
	}
	switch o := old.(type) {
	case *corev1.Secret:
		n := new.(*corev1.Secret)
		return o.Type == n.Type && equality.Semantic.DeepEqual(o.Data, n.Data) && equality.Semantic.DeepEqual(o.StringData, n.StringData), false
	case *corev1.ConfigMap:
		n := new.(*corev1.ConfigMap)
		return equality.Semantic.DeepEqual(o.Data, n.Data) && equality.Semantic.DeepEqual(o.BinaryData, n.BinaryData), false
	case *corev1.Service:
		return equality.Semantic.DeepEqual(o.Spec, new.(*corev1.Service).Spec), false
	case *discoveryv1.EndpointSlice:
		n := new.(*discoveryv1.EndpointSlice)
		return o.AddressType == n.AddressType && equality.Semantic.DeepEqual(o.Endpoints, n.Endpoints) && equality.Semantic.DeepEqual(o.Ports, n.Ports), false
	case *netv1.Ingress, *kongv1.KongPlugin, *kongv1.KongClusterPlugin, *kongv1.KongConsumer, *kongv1.KongIngress,
		*kongv1beta1.KongConsumerGroup, *kongv1beta1.KongUpstreamPolicy, *kongv1beta1.TCPIngress, *kongv1beta1.UDPIngress,
		*gatewayv1.GatewayClass, *gatewayv1.Gateway, *gatewayv1.ListenerSet, *gatewayv1.BackendTLSPolicy, *gatewayv1beta1.ReferenceGrant,
		*kongv1alpha1.KongCustomEntity, *kongv1alpha1.KongLicense:
		// Any change but to metadata or status bumps the generation of Ingresses and of
		// custom resources with a status subresource (every Gateway API kind but
		// ReferenceGrant, which has no status: any change to it but to metadata bumps its
		// generation); a status write, such as the leader's own, or a resync does not.
		return old.GetGeneration() != 0 && old.GetGeneration() == new.GetGeneration(), true
	}
	if isRouteObject(old) { // every Gateway API route kind (routeKindTable) has a status
		return old.GetGeneration() != 0 && old.GetGeneration() == new.GetGeneration(), true
	}
	return false, false // a kind this does not know: every update counts
}

func sameAnnotations(a, b map[string]string) bool {
	if len(a) == len(b) && maps.Equal(a, b) {
		return true
	}
	strip := func(m map[string]string) map[string]string {
		if _, ok := m[store.LastAppliedAnnotation]; !ok {
			return m
		}
		c := maps.Clone(m)
		delete(c, store.LastAppliedAnnotation)
		return c
	}
	return maps.Equal(strip(a), strip(b))
}
