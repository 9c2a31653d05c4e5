package translator

import (
	"maps"
	"strconv"

	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// isFacade reports whether an Ingress backend resource is a KongServiceFacade.
func isFacade(res *corev1.TypedLocalObjectReference) bool {
	return res != nil && res.Kind == gvkKongServiceFacade.Kind && strOrEmpty(res.APIGroup) == gvkKongServiceFacade.Group
}

// facadeService returns the Kong service of KongServiceFacade name in the Ingress's namespace
// (translation-rules.md §3.8, KIC's KongServiceFacade gate): one per facade, named and hosted
// <ns>.<name>.svc.facade, with path "/" unless it serves the default backend. Its Service and
// port come from the facade, resolved with the other backends (backingService).
func (b *builder) facadeService(ing *netv1.Ingress, field, name string, withPath bool) *kongService {
	full := ing.Namespace + "." + name + ".svc.facade"
	if ks, ok := b.kongServices[full]; ok {
		return ks
	}
	if e := checkName(full); e != "" {
		b.problem(ing, gvkIngress, field, "Kong service %s", e)
		return nil
	}
	ks := &kongService{
		namespace: ing.Namespace, facade: name, portKey: "", routeByKey: map[string]*routeEntry{},
		svc: b.httpKongService(full, full),
	}
	if withPath {
		ks.svc.Path = &sharedRootPath
	}
	b.kongServices[full] = ks
	return ks
}

// backing is the Kubernetes Service behind a Kong service, as its annotations apply: for a
// facade, the facade's annotations merged over its Service's (the facade wins), and the
// facade is the object that owns the Kong service (tags, plugins, problems).
type backing struct {
	svc   *corev1.Service // annotations as they apply; do not modify
	owner client.Object
	gvk   schema.GroupVersionKind
	// tlsRefused is the BackendTLSPolicy of the Service's port when it is not accepted
	// (withBackendTLSPolicy).
	tlsRefused *gatewayv1.BackendTLSPolicy
}

// backingService resolves ks's Service once: the Service it names, or its facade's. nil when
// the Service (or the facade) does not exist.
func (b *builder) backingService(ks *kongService) *backing {
	if ks.backing != nil {
		return ks.backing
	}
	if ks.facade == "" {
		svc := b.services[ks.namespace+"/"+ks.svcName]
		if svc == nil {
			return nil
		}
		applied, refused := b.withBackendTLSPolicy(svc, portName(svc, ks.port))
		ks.backing = &backing{svc: applied, owner: svc, gvk: gvkService, tlsRefused: refused}
		return ks.backing
	}
	var f *incubatorv1alpha1.KongServiceFacade
	for _, x := range b.snap.KongServiceFacades {
		if x != nil && x.Namespace == ks.namespace && x.Name == ks.facade {
			f = x
		}
	}
	if f == nil {
		return nil
	}
	ks.svcName = f.Spec.Backend.Name
	ks.port = netv1.ServiceBackendPort{Number: f.Spec.Backend.Port}
	ks.portKey = strconv.Itoa(int(f.Spec.Backend.Port))
	b.refer(f, gvkKongServiceFacade, ref(gvkService, f.Namespace, f.Spec.Backend.Name))
	svc := b.services[ks.namespace+"/"+ks.svcName]
	if svc == nil {
		return nil
	}
	merged := svc.DeepCopy()
	merged.Annotations = maps.Clone(svc.Annotations)
	if merged.Annotations == nil {
		merged.Annotations = map[string]string{}
	}
	maps.Copy(merged.Annotations, f.Annotations)
	applied, refused := b.withBackendTLSPolicy(merged, portName(svc, ks.port))
	ks.backing = &backing{svc: applied, owner: f, gvk: gvkKongServiceFacade, tlsRefused: refused}
	return ks.backing
}

// portName is the name of svc's port that port resolves to (findPort), "" when it is unnamed
// or does not resolve: the sectionName a BackendTLSPolicy would name it by.
func portName(svc *corev1.Service, port netv1.ServiceBackendPort) string {
	if sp, err := findPort(svc, port); err == nil {
		return sp.Name
	}
	return ""
}
