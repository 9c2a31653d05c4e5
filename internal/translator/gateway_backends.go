package translator

import (
	"fmt"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// gatewayBackends are the backendRefs of a Kong service made from a Gateway API route rule.
type gatewayBackends struct {
	route client.Object
	gvk   schema.GroupVersionKind
	field string // of the backendRefs, for problems
	refs  []gatewayv1.BackendRef
}

// populateGatewayService resolves the backendRefs of a Gateway API Kong service (KIC's
// backendRefsToKongStateBackends and getUpstreams): a backendRef to something other than a
// Service, to a Service in another namespace without a ReferenceGrant, or to a missing
// Service is left out and reported on the route; the targets of each Service split the
// backendRef's weight evenly (at least 1; 0 stays 0), and targets that several backends
// share add up. The service takes the port of the last Service resolved. With no backend
// left, or none given, a request-termination plugin answers 500 on an HTTP or gRPC service,
// as Gateway API requires (KIC 3.x does this only when backendRefs were given and lets Kong
// answer 503 for a rule without any: HTTPRouteNoBackendRefs).
// The Kong service is tagged with the Service when exactly one backend resolved, else with
// the route.
func (b *builder) populateGatewayService(ks *kongService) {
	gb := ks.gateway
	ks.upstream = &file.FUpstream{Upstream: kong.Upstream{Name: ks.svc.Host}} // shared, as service_backends.go's
	var resolved []*corev1.Service
	var ports []*corev1.ServicePort
	targets := map[string]*file.FTarget{}
	var order []string
	for i, be := range gb.refs {
		field := fmt.Sprintf("%s[%d]", gb.field, i)
		out := b.resolveBackendRef(gb.route, gb.gvk, be)
		if out.reason != "" {
			b.problem(gb.route, gb.gvk, field+out.fieldSuffix, "%s", out.problem)
			continue
		}
		svc, sp := out.svc, out.port
		resolved, ports = append(resolved, svc), append(ports, sp)
		ks.svc.Port = b.servicePort(sp.Port)
		ts := b.targets(svc, sp)
		if be.Weight != nil && len(ts) > 0 {
			w := int(*be.Weight)
			if w != 0 {
				w /= len(ts)
				if w == 0 {
					w = 1
				}
			}
			for _, t := range ts {
				t.Weight = kong.Int(w)
			}
		}
		for _, t := range ts {
			if old, ok := targets[*t.Target.Target]; ok {
				sum := weightOrDefault(old.Weight) + weightOrDefault(t.Weight)
				old.Weight = kong.Int(sum)
				continue
			}
			targets[*t.Target.Target] = t
			order = append(order, *t.Target.Target)
		}
	}
	for _, t := range order {
		ks.upstream.Targets = append(ks.upstream.Targets, targets[t])
	}
	var tags []*string
	if len(resolved) == 1 {
		svc := resolved[0]
		tags = b.entityTags(svc, gvkService)
		// Plugins, upstream policies and annotations of the one Service apply, as to an
		// Ingress backend.
		ks.namespace, ks.svcName = svc.Namespace, svc.Name
		ks.port = netv1.ServiceBackendPort{Number: ports[0].Port} // for the port's BackendTLSPolicy
		bk := b.backingService(ks)
		b.serviceAnnotations(ks, bk.svc)
		if bk.tlsRefused != nil && answersHTTP(ks.svc.Protocol) && !everyRouteAnswers(ks) {
			// The spec's failure of requests to a backend whose policy is refused, rather
			// than plain HTTP to its TLS port (KIC's). The policy is named in the
			// translation's problems, not to clients.
			terminate(ks, "the backend's BackendTLSPolicy is not accepted")
		}
	} else {
		tags = b.entityTags(gb.route, gb.gvk)
		b.sharedUpstreamPolicy(ks.upstream, resolved)
	}
	b.backendTLSHost(ks, resolved, ports)
	ks.svc.Tags, ks.upstream.Tags = tags, tags
	if len(resolved) == 0 && answersHTTP(ks.svc.Protocol) && !everyRouteAnswers(ks) {
		terminate(ks, "no existing backendRef provided")
	}
}

// terminate makes Kong answer every request of ks's routes with 500 and message (a
// request-termination plugin on the service): Gateway API's answer for a backend that must
// not be reached.
func terminate(ks *kongService, message string) {
	ks.svc.Plugins = append(ks.svc.Plugins, &file.FPlugin{Plugin: kong.Plugin{
		Name:   kong.String("request-termination"),
		Config: kong.Configuration{"status_code": 500, "message": message},
	}})
}

// answersHTTP says whether a service of this protocol can carry request-termination (an
// HTTP or gRPC one, not a stream).
func answersHTTP(protocol *string) bool {
	if protocol == nil {
		return true // Kong's default, http
	}
	return strings.Contains(*protocol, "http") || strings.Contains(*protocol, "grpc")
}

// everyRouteAnswers says whether each route of ks answers by itself (a RequestRedirect
// filter's redirect, or request-termination before Kong 3.9): a redirect-only rule has no
// backendRefs by design and needs no 500 behind it.
func everyRouteAnswers(ks *kongService) bool {
	for _, r := range ks.routes {
		answers := false
		for _, p := range r.Plugins {
			if p.Name != nil && (*p.Name == "redirect" || *p.Name == "request-termination") {
				answers = true
			}
		}
		if !answers {
			return false
		}
	}
	return len(ks.routes) > 0
}

// backendRefOutcome is how one backendRef resolves: a Service and its port, or the
// ResolvedRefs reason (BackendNotFound, RefNotPermitted, InvalidKind) and why.
type backendRefOutcome struct {
	svc         *corev1.Service
	port        *corev1.ServicePort
	reason      gatewayv1.RouteConditionReason
	fieldSuffix string // ".port" when the port is at fault
	message     string // for the route's status
	problem     string // for translation's Problem (KIC's words where it has them)
}

// resolveBackendRef resolves a backendRef of route (of kind gvk), recording the references
// it follows in the graph: only core Services are backends; one in another namespace needs
// a ReferenceGrant; it must exist and have the port.
func (b *builder) resolveBackendRef(route client.Object, gvk schema.GroupVersionKind, be gatewayv1.BackendRef) backendRefOutcome {
	ns := route.GetNamespace()
	if be.Namespace != nil && *be.Namespace != "" {
		ns = string(*be.Namespace)
	}
	group, kind := "", "Service"
	if be.Group != nil {
		group = string(*be.Group)
	}
	if be.Kind != nil {
		kind = string(*be.Kind)
	}
	if (group != "" && group != "core") || kind != "Service" {
		return leftOut(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s/%s: unsupported kind %q, only 'Service' is supported", ns, be.Name, kind))
	}
	b.refer(route, gvk, ref(gvkService, ns, string(be.Name)))
	if !b.granted(route, gvk, "", "Service", ns, string(be.Name)) {
		return leftOut(gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backendRef to Service %s/%s is not permitted by any ReferenceGrant", ns, be.Name))
	}
	svc := b.services[ns+"/"+string(be.Name)]
	if svc == nil {
		return leftOut(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("Service %s/%s not found", ns, be.Name))
	}
	port := int32(0)
	if be.Port != nil {
		port = int32(*be.Port)
	}
	sp, err := findPort(svc, netv1.ServiceBackendPort{Number: port})
	if port == 0 || err != nil {
		msg := fmt.Sprintf("can't find port for backend kubernetes service %s/%s: no suitable port found", ns, be.Name) // KIC's
		return backendRefOutcome{reason: gatewayv1.RouteReasonBackendNotFound, fieldSuffix: ".port", message: msg, problem: msg}
	}
	return backendRefOutcome{svc: svc, port: sp}
}

func leftOut(reason gatewayv1.RouteConditionReason, msg string) backendRefOutcome {
	return backendRefOutcome{reason: reason, message: msg, problem: msg + "; the backend is left out"}
}

// checkBackendRefs records on ra every backendRef of the route obj that does not resolve,
// for the route's ResolvedRefs condition. It covers every rule, whether or not a parent
// accepted the route or the rule could be translated: ResolvedRefs is about references, not
// translation. Translation reports the problems of the rules it translates
// (populateGatewayService).
func (b *builder) checkBackendRefs(obj client.Object, gvk schema.GroupVersionKind, ra *gatewayapi.RouteAttachment, refs []fieldBackendRef) {
	for _, r := range refs {
		if out := b.resolveBackendRef(obj, gvk, r.ref); out.reason != "" {
			ra.AddRefProblem(out.reason, fmt.Sprintf("%s%s: %s", r.field, out.fieldSuffix, out.message))
		}
	}
}

// weightOrDefault is a target's weight, Kong's default 100 when unset.
func weightOrDefault(w *int) int {
	if w == nil {
		return 100
	}
	return *w
}

// granted reports whether a ReferenceGrant lets referrer (of kind gvk) refer to the object
// toGroup/toKind ns/name, and records the grant that does in the graph.
func (b *builder) granted(referrer client.Object, gvk schema.GroupVersionKind, toGroup, toKind, ns, name string) bool {
	grant, ok := gatewayapi.GrantAllows(b.snap.ReferenceGrants, gvk, referrer.GetNamespace(), toGroup, toKind, ns, name)
	if grant != nil {
		b.refer(referrer, gvk, kongstate.RefFor(grant, gvkReferenceGrant))
	}
	return ok
}
