package translator

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"maps"
	"slices"
	"sort"

	"github.com/blang/semver/v4"

	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// Options is what translation needs beyond the snapshot. The zero value means KIC's defaults.
type Options struct {
	// ClusterDomain is appended to service-upstream targets when set (--cluster-domain,
	// default "").
	ClusterDomain string
	// EnableDrainSupport keeps terminating endpoints as targets of weight 0
	// (--enable-drain-support, default false).
	EnableDrainSupport bool
	// EnableLegacyRegexDetection is IngressClassParameters' enableLegacyRegexDetection
	// (translation-rules.md §3.5): paths that look like regexes get a "~" prefix.
	EnableLegacyRegexDetection bool
	// ServiceUpstream is IngressClassParameters' serviceUpstream (translation-rules.md §4.3): every
	// upstream targets its Service's cluster DNS name instead of its endpoints.
	ServiceUpstream bool
	// ExpressionRoutes renders Ingress routes for Kong's expressions router (router_flavor
	// "expressions", translation-rules.md §13): an expression and a priority instead of paths, hosts
	// and the other matching fields.
	ExpressionRoutes bool
	// RustRegexes: a gateway compiles the regexes of traditional routes with the Rust regex
	// crate (router_flavor traditional_compatible, Kong 3's default, which turns each route
	// into an expression: http.path ~ "^<regex>", header regexes lowercased;
	// kong/router/transform.lua), so a regex path or header is also checked so (validate.go).
	// Off (flavor "traditional", or not known yet): PCRE's syntax only.
	RustRegexes bool
	// KongServiceFacade is KIC's KongServiceFacade gate: Ingress backends may be
	// KongServiceFacades (translation-rules.md §3.8).
	KongServiceFacade bool
	// RewriteURIs is KIC's RewriteURIs gate: konghq.com/rewrite is honoured (translation-rules.md §3.9).
	RewriteURIs bool
	// Workspace keys the deterministic IDs (translation-rules.md §6). "" for none.
	Workspace string
	// KongVersion is the gateways' Kong version when known (zero: unknown). It decides
	// what only some versions take (sticky sessions from 3.11).
	KongVersion semver.Version
	// GatewayControllerName is the GatewayClass controllerName this controller serves
	// (--gateway-api-controller-name); "" means KIC's, konghq.com/kic-gateway-controller.
	GatewayControllerName string `json:"gatewayControllerName,omitempty"`
	// EntitySchemas are the gateways' answers to GET /schemas/<type> for the types of the
	// snapshot's KongCustomEntities (CustomEntityTypes); the dataplane asks, as KIC asks
	// while it translates. A type with no answer leaves its custom entities out, reported.
	EntitySchemas map[string]EntitySchemaAnswer `json:"entitySchemas,omitempty"`
	// NoCustomEntities is KIC's KongCustomEntity gate off (it is on by default): no
	// KongCustomEntity is translated.
	NoCustomEntities bool `json:"noCustomEntities,omitempty"`
	// Enterprise is true when every gateway is Kong Gateway Enterprise: only then is a
	// KongLicense rendered (kong_license.go).
	Enterprise bool `json:"enterprise,omitempty"`
	// KonnectLicensing is --konnect-licensing-enabled: the license is Konnect's
	// (KonnectLicense, nil while none is held) and KongLicense objects are not read, as in
	// KIC, where the KongLicense controller does not run then.
	KonnectLicensing bool          `json:"konnectLicensing,omitempty"`
	KonnectLicense   *kong.License `json:"konnectLicense,omitempty"`
	// GatewayAlpha is KIC's GatewayAlpha gate: TCPRoutes, TLSRoutes and UDPRoutes attach and
	// are translated, and BackendTLSPolicies apply, only with it (as in KIC, whose
	// controllers for those kinds run only with the gate).
	GatewayAlpha bool `json:"gatewayAlpha,omitempty"`
	// CombinedServicesFromDifferentHTTPRoutes is KIC's gate of that name (KIC 3.5's
	// --combined-services-from-different-httproutes): rules of HTTPRoutes of one namespace
	// with the same backendRefs share one Kong service, named after the backends
	// (gateway_httproute_combined.go).
	CombinedServicesFromDifferentHTTPRoutes bool `json:"combinedServicesFromDifferentHTTPRoutes,omitempty"`
	// AllowLocalTargets lets upstream targets be loopback, unspecified or link-local
	// addresses (--allow-local-targets; off: such a target is refused, targets.go).
	AllowLocalTargets bool `json:"allowLocalTargets,omitempty"`
	// ExternalNameServices is what an ExternalName Service may name
	// (--externalname-services): "" or ExternalNameAllow (KIC's: any name; another
	// namespace's Service DNS name with a ReferenceGrant of it), ExternalNameSameNamespace
	// (only a Service DNS name of its own namespace) or ExternalNameDeny (none).
	ExternalNameServices string `json:"externalNameServices,omitempty"`
	// PluginsDenied are the plugin names a KongPlugin may not use (--plugins-denied) in the
	// namespaces PluginsDeniedNamespaces selects (a label selector; "" selects every one).
	// KongClusterPlugins, a cluster administrator's, are not limited (tenancy.go).
	PluginsDenied           []string `json:"pluginsDenied,omitempty"`
	PluginsDeniedNamespaces string   `json:"pluginsDeniedNamespaces,omitempty"`
	// HostOwnership (--host-ownership): a host is served only for the namespace of the oldest
	// Ingress or Gateway API route naming it; another namespace's routes of that host are left
	// out (tenancy.go). Off: KIC's shared hosts.
	HostOwnership bool `json:"hostOwnership,omitempty"`
	// ConsumerScope (--consumer-scope): ConsumerScopeNamespace admits a consumer only on the
	// routes of its own namespace (tenancy.go); "" is KIC's: any consumer on any route.
	ConsumerScope string `json:"consumerScope,omitempty"`
	// AdminServices are the Kong Admin API's Services konductor talks to (--kong-admin-svc)
	// and AdminHosts the hosts of its --kong-admin-url: an ExternalName naming one is
	// refused whatever the other settings (service_targets.go).
	AdminServices []types.NamespacedName `json:"adminServices,omitempty"`
	AdminHosts    []string               `json:"adminHosts,omitempty"`
	// PublishService is --publish-service ("namespace/name"), the Kong proxy's Service, whose
	// ports are the Gateway listeners' ports, and HTTPRouterPorts, of those that serve HTTP
	// or HTTPS, the port Kong's router sees their requests on (net.dst.port;
	// gatewayapi.HTTPRouterPorts, from that Service in the cache and the gateways' listens).
	// Under the expressions router an HTTPRoute attached to some of its Gateways' HTTP(S)
	// ports only matches those (gateway_httproute_ports.go). Empty: not known.
	PublishService  string                       `json:"publishService,omitempty"`
	HTTPRouterPorts map[gatewayv1.PortNumber]int `json:"httpRouterPorts,omitempty"`
	// Now is the time CA certificates must be valid at; zero skips the expiry check. The
	// caller passes it so that translation reads no clock.
	Now time.Time
}

// GroupVersionKinds of the objects the translator reads. Typed objects read through a client
// usually have no TypeMeta, so tags and problems take their kind from here.

// Translate builds the Kong state for snap. It never fails: what cannot be translated is
// left out and reported. The snapshot is not modified.
func Translate(snap *store.Snapshot, opts Options) (*kongstate.State, []Problem) {
	r := Build(snap, opts)
	return r.State, r.Problems
}

// Result is one translation: the Kong state, the problems, and the object graph behind them.
type Result struct {
	State    *kongstate.State
	Problems []Problem
	Graph    *objgraph.Graph
	// Gateway is which Gateway API objects are ours and how routes attach, for status.
	Gateway *gatewayapi.Attachment

	// parts indexes the result for Incremental (incremental.go).
	parts *resultParts
}

// Build is Translate with the object graph (pipeline order of translation-rules.md §2).
func Build(snap *store.Snapshot, opts Options) Result {
	return build(snap, opts, nil)
}

// build is Build with the Gateway API attachment given (nil: the snapshot's). Incremental
// gives it a view of the whole snapshot's attachment holding only the routes it
// re-translates (gatewayapi.Attachment.RoutesOnly).
func build(snap *store.Snapshot, opts Options, gw *gatewayapi.Attachment) Result {
	if snap == nil {
		snap = &store.Snapshot{}
	}
	return buildFailClosed(snap, opts, gw)
}

// buildOnce is one translation of snap, with the referrers of plugins it could not apply
// (kong_plugins_failclosed.go).
func buildOnce(snap *store.Snapshot, opts Options, gw *gatewayapi.Attachment) (Result, []refusal) {
	b := newBuilder(snap, opts, gw)
	b.ingressRules()
	b.defaultBackend()
	b.l4Ingresses()
	b.gateways()
	b.httpRoutes()
	b.grpcRoutes()
	b.l4Routes()
	if b.opts.HostOwnership {
		b.claimHosts()
	}
	b.populateServices()
	b.rewrites()
	b.upstreamOverrides()
	b.consumers()
	b.vaults()
	b.consumerGroups()
	b.tls()
	b.caCertificates()
	b.plugins()
	if b.opts.ConsumerScope == ConsumerScopeNamespace {
		b.scopeConsumers()
	}
	b.customEntities()
	b.license()
	if b.opts.ExpressionRoutes {
		b.expressionRoutes()
	}
	state, problems := b.finish()
	return Result{State: state, Problems: problems, Graph: b.graph, Gateway: b.gw, parts: b.parts}, b.refusals
}

// builder holds the indexes and the growing output of one translation.
type builder struct {
	opts Options
	snap *store.Snapshot

	// httpRouteProtocols are the protocols of the Kong routes of the HTTPRoute being
	// translated, from its listeners (httpListenerProtocols); set around httpRoute.
	httpRouteProtocols []string

	ingresses []*netv1.Ingress // KIC order: ns/name, then stable by age
	services  map[string]*corev1.Service
	slices    map[string][]*discoveryv1.EndpointSlice // by ns/service-name, sorted by name
	secrets   map[string]*corev1.Secret

	// Plugin indexes, built on first use.
	kongPlugins    map[string]*kongv1.KongPlugin
	clusterPlugins map[string]*kongv1.KongClusterPlugin

	// Consumers translated (not dropped), in KIC's order, with the name plugins use for each
	// (by ns/name); consumer group objects by group name.
	consumerObjs      []*kongv1.KongConsumer
	consumerIdents    map[string]string
	consumerRefs      map[string]*kong.Consumer // by ident: what a plugin points at (consumerRef)
	consumerGroupObjs map[string]*kongv1beta1.KongConsumerGroup
	// groupHolders is keptConsumerGroups' answer (nil: not made yet).
	groupHolders map[string]*kongv1beta1.KongConsumerGroup

	tcpIngresses []*kongv1beta1.TCPIngress // KIC order
	udpIngresses []*kongv1beta1.UDPIngress

	kongServices map[string]*kongService
	// sortedKongServices are kongServiceKeys' (nil: not sorted yet).
	sortedKongServices []string
	// lastServiceFor is kongServiceFor's last answer (zero: none, or a service was removed).
	lastServiceFor serviceMemo
	routeNames     map[string]routeNameHolder // route name -> its route, to catch name collisions
	routeKeys      map[string]bool
	problems       []Problem
	graph          *objgraph.Graph
	gw             *gatewayapi.Attachment
	// routeBackends are the Services HTTPRoutes of our Gateways use (gateway_backendtls.go).
	routeBackends map[string]bool
	// portsWarned are the HTTPRoutes reported for listener ports without Kong ports
	// (warnListenerPorts), each once.
	portsWarned map[*gatewayv1.HTTPRoute]bool
	// policyCAs are the ConfigMaps (ns/name) that an applied BackendTLSPolicy names as CA
	// certificates: read whether or not they are labelled (tls_cacerts.go).
	policyCAs map[string]bool

	// nameTaken is set when a route was refused because another had its name: which one
	// wins depends on every route of the cluster, so Incremental translates everything.
	nameTaken bool
	// gatewayRouteCounts are the Kong routes made per Gateway API route (bounds.go).
	gatewayRouteCounts map[objgraph.Node]int
	// refusals are the referrers of plugins this translation could not apply (kong_plugins_failclosed.go).
	refusals []refusal
	// readClock is set when the result depended on Options.Now (a CA certificate's expiry).
	readClock bool
	// readRustRegexes is set when the result depended on Options.RustRegexes (a regex was
	// checked), so that learning a gateway's router flavor re-translates only then.
	readRustRegexes bool
	parts           *resultParts
	tagCache        entityTagCache
	// ports are the Kong services' resolved ports, one value for each number (servicePort).
	ports map[int32]*int

	state *kongstate.State
}

func newBuilder(snap *store.Snapshot, opts Options, gw *gatewayapi.Attachment) *builder {
	if gw == nil {
		gw = gatewayapi.Attach(GatewayInput(snap, opts))
	}
	b := &builder{
		opts:     opts,
		snap:     snap,
		services: map[string]*corev1.Service{},
		slices:   map[string][]*discoveryv1.EndpointSlice{},
		secrets:  map[string]*corev1.Secret{},
		// Sized for an Ingress's one Kong service and route (the common case): growing them
		// rehashed each several times in a first translation.
		kongServices: make(map[string]*kongService, len(snap.Ingresses)),
		routeNames:   make(map[string]routeNameHolder, len(snap.Ingresses)),
		routeKeys:    make(map[string]bool, len(snap.Ingresses)),
		graph:        objgraph.New(),
		parts:        &resultParts{},
		state:        &kongstate.State{},
		gw:           gw,
	}
	if p := snap.IngressClassParameters; p != nil {
		// The IngressClass's parameters (translation-rules.md §1.4) add to the options.
		b.opts.EnableLegacyRegexDetection = b.opts.EnableLegacyRegexDetection || p.Spec.EnableLegacyRegexDetection
		b.opts.ServiceUpstream = b.opts.ServiceUpstream || p.Spec.ServiceUpstream
	}
	for _, ing := range snap.Ingresses {
		if ing != nil {
			b.ingresses = append(b.ingresses, ing)
			b.refer(ing, gvkIngress, ref(gvkIngressClass, "", snap.IngressClass))
		}
	}
	sortByAge(b.ingresses)
	for _, s := range snap.Services {
		if s != nil {
			b.services[s.Namespace+"/"+s.Name] = s
		}
	}
	for _, es := range snap.EndpointSlices {
		if es == nil {
			continue
		}
		svc := es.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := es.Namespace + "/" + svc
		b.slices[k] = append(b.slices[k], es)
	}
	for _, l := range b.slices {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	for _, s := range snap.Secrets {
		if s != nil {
			b.secrets[s.Namespace+"/"+s.Name] = s
		}
	}
	return b
}

// sortByAge puts objects in KIC's order (translation-rules.md §1.1): by creationTimestamp, oldest
// first, then by ns/name (olderThan).
func sortByAge[T client.Object](objs []T) {
	sort.SliceStable(objs, func(i, j int) bool { return olderThan(objs[i], objs[j]) })
}

// olderThan is sortByAge's order, the Gateway API's conflict order (gatewayapi.Precedes): by
// creation time, then by "ns/name" as one string, as KIC's store lists Ingresses
// (translation-rules.md §1.1). Not to be unified with splitBefore's order of HTTPRoute matches
// of equal priority (namespace, then name), which is KIC's own there.
func olderThan(a, b client.Object) bool { return gatewayapi.Precedes(a, b) }

// kongServiceNames lists the Kong services that have routes, by name.
func (b *builder) kongServiceNames() []string {
	all := b.kongServiceKeys()
	names := make([]string, 0, len(all))
	for _, n := range all {
		if len(b.kongServices[n].routes) > 0 {
			names = append(names, n)
		}
	}
	return names
}

// kongServiceKeys are the keys of b.kongServices, sorted once while no key is added or
// removed (removing one resets them): eight steps of a translation walk the Kong services in
// name order, and sorting 3,000 names each time was 4% of a first translation (issue #13).
// The slice is shared: callers do not modify it.
func (b *builder) kongServiceKeys() []string {
	if len(b.sortedKongServices) != len(b.kongServices) {
		b.sortedKongServices = slices.Sorted(maps.Keys(b.kongServices))
	}
	return b.sortedKongServices
}

// refer records in the graph that obj (of kind gvk) refers to the object to.
func (b *builder) refer(obj client.Object, gvk schema.GroupVersionKind, to kongstate.ObjectRef) {
	b.graph.Refer(kongstate.RefFor(obj, gvk), to)
}

// contend records that x and y (of kinds xGVK and yGVK) claim one value that Kong keeps
// unique (a consumer's username or credential, a CA certificate's id, a host's certificate,
// a route's name...; what names it), so that what each becomes depends on the other: the one
// left out depends on the one kept, and the one kept may be reported, or left out too. Both
// share the value's node (share): either's change reaches both, and a broken one does not
// break the other (Graph.Broken). Only a value claimed twice is recorded: one that one
// object holds costs the graph nothing (translation-rules.md §12.4).
func (b *builder) contend(value string, x client.Object, xGVK schema.GroupVersionKind, y client.Object, yGVK schema.GroupVersionKind) {
	b.share(value, x, xGVK)
	b.share(value, y, yGVK)
}

// share records that obj (of kind gvk) makes and reads value, which other objects make and
// read too (SharedValue): obj refers to the value's node, and the node to obj.
func (b *builder) share(value string, obj client.Object, gvk schema.GroupVersionKind) {
	from, v := kongstate.RefFor(obj, gvk), objgraph.SharedValue(value)
	b.graph.Refer(from, v)
	b.graph.Refer(v, from)
}

// hashed is s as a shared value's name shows it when s is a credential or a key: a digest,
// so that the graph (which diagnostics may show) holds no secret.
func hashed(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// ref names an object by kind, namespace and name, for the graph.
func ref(gvk schema.GroupVersionKind, namespace, name string) kongstate.ObjectRef {
	return kongstate.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name}
}

// finish assembles the state: Kong services in name order (render sorts again; this order
// only makes the State itself deterministic), with their upstreams (one of each name,
// withServices), and sorted problems.
func (b *builder) finish() (*kongstate.State, []Problem) {
	names := b.kongServiceNames()
	b.parts.services = slices.Grow(b.parts.services, len(names))
	for _, n := range names {
		ks := b.kongServices[n]
		svc := ks.svc
		part := servicePart{name: n, svc: svc, upstream: ks.upstream}
		for _, r := range ks.routes {
			svc.Routes = append(svc.Routes, r.FRoute)
			if r.ing == nil {
				part.addRouteOwner(r)
			} else if len(part.owners) == 0 || part.owners[len(part.owners)-1] != r.ing {
				part.owners = append(part.owners, r.ing)
			}
		}
		b.parts.services = append(b.parts.services, part)
	}
	b.state = withServices(b.state, b.parts.services)
	b.parts.nameTaken, b.parts.readClock, b.parts.readRustRegexes = b.nameTaken, b.readClock, b.readRustRegexes
	return b.state, sortProblems(b.problems)
}
