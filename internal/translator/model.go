package translator

import (
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

// The model the sources build together: the Kong services (kongService, shared by the
// Ingress, Service, TCPIngress and Gateway API sources, which merge into one when they name
// the same backend), the routes (routeEntry) and the references between them.

// kongService is one Kong service being built (ns.svc.port), with what is needed to resolve
// its backend later.
type kongService struct {
	// svc is the Kong service the State gets (finish adds its routes).
	svc       *file.FService
	namespace string
	svcName   string
	// facade names the KongServiceFacade the service stands for (translation-rules.md §3.8); its
	// Service and port are resolved with the others (populateServices).
	facade  string
	backing *backing // the Service behind it, once resolved
	port    netv1.ServiceBackendPort
	portKey string

	routes     []*routeEntry
	routeByKey map[string]*routeEntry
	// referrers are the Ingresses whose paths use this service, with the field of the first
	// path, so that backend failures are reported where the user wrote the reference.
	referrers []referrer
	upstream  *file.FUpstream
	// gateway is set for the Kong services of Gateway API routes, whose backends are
	// backendRefs (gateway_backends.go) rather than one Service and port.
	gateway *gatewayBackends
}

// referrer is an object that refers to a Service or Secret, and the field that does.
type referrer struct {
	obj   client.Object
	gvk   schema.GroupVersionKind
	field string
}

func (ks *kongService) addReferrer(obj client.Object, gvk schema.GroupVersionKind, field string) {
	for _, r := range ks.referrers {
		if r.obj == obj {
			return
		}
	}
	ks.referrers = append(ks.referrers, referrer{obj, gvk, field})
}

// httpKongService is a new HTTP Kong service with KIC's defaults: port 80 until the backend
// resolves, protocol http, 60 s timeouts, 5 retries.
//
// The service, its ID, name and host are one block, one allocation per service (320 bytes;
// the FService alone is 288 in its size class); the defaults point to the values all
// services share (sharedvalues.go), never written through.
func (b *builder) httpKongService(name, host string) *file.FService {
	v := &httpService{id: kongstate.ServiceID(b.opts.Workspace, name), name: name, host: host}
	v.Service = kong.Service{
		ID:             &v.id,
		Name:           &v.name,
		Host:           &v.host,
		Port:           &sharedPort80,
		Protocol:       &sharedHTTP,
		ConnectTimeout: &sharedDefaultTimeout,
		ReadTimeout:    &sharedDefaultTimeout,
		WriteTimeout:   &sharedDefaultTimeout,
		Retries:        &sharedRetries,
	}
	return &v.FService
}

// httpService is a new HTTP Kong service with what its own fields point to (httpKongService).
type httpService struct {
	file.FService
	id, name, host string
}

// routeEntry is a route being built, with the Ingress it came from.
type routeEntry struct {
	*file.FRoute
	ing *netv1.Ingress // nil for the routes of other sources
	// src is the object the route comes from (an Ingress, TCPIngress or UDPIngress): its
	// konghq.com/plugins annotation applies to the route.
	src    client.Object
	srcGVK schema.GroupVersionKind
	// extraPlugins are KongPlugins named by the route's own HTTPRoute ExtensionRef filters,
	// attached like those of src's konghq.com/plugins annotation.
	extraPlugins []string
	// sources are the Ingress paths merged into the route, for the expressions router;
	// defaultBackend marks the route of spec.defaultBackend.
	sources        []sourcePath
	defaultBackend bool
}

// sourcePath is one Ingress path as written: its type, the normalised path, and the regex
// prefix of its Ingress.
type sourcePath struct {
	pathType    netv1.PathType
	path        string
	regexPrefix string
}

type nsName struct{ ns, name string }

func keyOf(o client.Object) nsName { return nsName{o.GetNamespace(), o.GetName()} }
