package store

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// LastAppliedAnnotation is kubectl's copy of the whole object; it often doubles its size.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripForCache is the cache transform: it drops what the translator never reads before the
// object is stored, so a large cluster costs less memory. managedFields and kubectl's
// last-applied annotation go from every object; Helm release Secrets, which can be megabytes
// each and are never Kong configuration, keep their metadata but lose their data.
func StripForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil //nolint:nilerr // not an object (a tombstone, for example): keep as is
	}
	obj.SetManagedFields(nil)
	if ann := obj.GetAnnotations(); ann != nil {
		if _, ok := ann[LastAppliedAnnotation]; ok {
			delete(ann, LastAppliedAnnotation)
			obj.SetAnnotations(ann)
		}
	}
	if secret, ok := in.(*corev1.Secret); ok && secret.Type == "helm.sh/release.v1" {
		secret.Data = nil
		secret.StringData = nil
	}
	if es, ok := in.(*discoveryv1.EndpointSlice); ok {
		stripEndpointSlice(es)
	}
	if svc, ok := in.(*corev1.Service); ok {
		stripService(svc)
	}
	if ing, ok := in.(*netv1.Ingress); ok {
		compactIngress(ing)
	}
	return in, nil
}

// maxSharedBackends bounds the distinct Service backends compactIngress shares per Ingress.
const maxSharedBackends = 16

// compactIngress keeps all of an Ingress, without the repeats the decoder allocates: a path
// type and a Service backend per path, though an Ingress's paths mostly share a few path
// types and often one backend (each path, rule and the default backend now points at one
// copy of each distinct value), and arrays of paths grown by appending, with up to twice the
// room needed. About 190 of the 1,000 bytes of the benchmark's Ingress (three paths to one
// Service, issue #13 memory). Safe since the cache's objects are read-only: a change is a new
// object, and a deep copy copies each pointer's value.
//
// Only the first maxSharedBackends distinct backends are shared, so that an Ingress with
// thousands of paths to as many Services costs a bounded search per path, not a quadratic one.
func compactIngress(ing *netv1.Ingress) {
	var types []*netv1.PathType
	var backends []*netv1.IngressServiceBackend
	share := func(b *netv1.IngressBackend) {
		if b == nil || b.Service == nil {
			return
		}
		for _, seen := range backends {
			if *seen == *b.Service {
				b.Service = seen
				return
			}
		}
		if len(backends) < maxSharedBackends {
			backends = append(backends, b.Service)
		}
	}
	share(ing.Spec.DefaultBackend)
	for r := range ing.Spec.Rules {
		http := ing.Spec.Rules[r].HTTP
		if http == nil {
			continue
		}
		if n := len(http.Paths); cap(http.Paths) > n {
			http.Paths = slices.Clone(http.Paths)
		}
		for i := range http.Paths {
			p := &http.Paths[i]
			share(&p.Backend)
			if p.PathType == nil {
				continue
			}
			if at := slices.IndexFunc(types, func(t *netv1.PathType) bool { return *t == *p.PathType }); at >= 0 {
				p.PathType = types[at]
			} else {
				types = append(types, p.PathType)
			}
		}
	}
	if n := len(ing.Spec.Rules); cap(ing.Spec.Rules) > n {
		ing.Spec.Rules = slices.Clone(ing.Spec.Rules)
	}
}

// stripService keeps of a Service what translation reads (its type, ports, external name,
// labels and annotations) and what Ingress status reads of the publish Service (its cluster
// IP, external IPs and load balancer status). A Service per application is, with its
// EndpointSlice, what a big cluster has most of; its selector (a map, often of several
// labels: the EndpointSlices say which Pods it selects), its IP families, traffic and session
// policies are never read.
func stripService(svc *corev1.Service) {
	spec := &svc.Spec
	spec.Selector = nil
	spec.ClusterIPs, spec.IPFamilies, spec.IPFamilyPolicy = nil, nil, nil
	spec.SessionAffinity, spec.SessionAffinityConfig = "", nil
	spec.ExternalTrafficPolicy, spec.InternalTrafficPolicy, spec.TrafficDistribution = "", nil, nil
	spec.HealthCheckNodePort, spec.AllocateLoadBalancerNodePorts = 0, nil
	spec.LoadBalancerSourceRanges, spec.LoadBalancerClass = nil, nil
}

// stripEndpointSlice keeps what targets (internal/translator) and gateway discovery
// (internal/dataplane/discovery) read of an EndpointSlice: its Service's name label, address type, ports,
// and per endpoint the addresses, conditions and the target's kind, namespace and name. An
// EndpointSlice per Service is the largest kind of a big cluster after Secrets; its
// annotations (the endpoints controller's trigger time), owner, and each endpoint's node,
// zone, host name, hints and the target's UID and version change or weigh without mattering.
func stripEndpointSlice(es *discoveryv1.EndpointSlice) {
	es.Annotations = nil
	es.OwnerReferences = nil
	// Of its labels only the Service's name is read; the endpoint slice controller copies the
	// Service's own labels onto it (often several: app.kubernetes.io/*, Helm's), and adds its
	// managed-by label.
	if name, ok := es.Labels[discoveryv1.LabelServiceName]; !ok {
		es.Labels = nil
	} else if len(es.Labels) > 1 {
		es.Labels = map[string]string{discoveryv1.LabelServiceName: name}
	}
	for i := range es.Endpoints {
		ep := &es.Endpoints[i]
		ep.Hostname, ep.NodeName, ep.Zone, ep.Hints, ep.DeprecatedTopology = nil, nil, nil, nil, nil
		ep.Conditions.Serving = nil
		if ep.TargetRef != nil {
			ep.TargetRef = &corev1.ObjectReference{Kind: ep.TargetRef.Kind, Namespace: ep.TargetRef.Namespace, Name: ep.TargetRef.Name}
		}
	}
	// The decoder appends endpoints one by one, so their array has up to twice the room they
	// need (4 slots of 96 bytes for the benchmark's 3 endpoints): the cache keeps them in an
	// array of their size.
	if n := len(es.Endpoints); n > 0 && cap(es.Endpoints) > n {
		es.Endpoints = slices.Clone(es.Endpoints)
	}
}
