package translator

import (
	"fmt"

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
// left, a request-termination plugin answers 500, as KIC does for the conformance tests.
// The Kong service is tagged with the Service when exactly one backend resolved, else with
// the route.
func (b *builder) populateGatewayService(ks *kongService) {
	gb := ks.gateway
	ks.upstream = &file.FUpstream{Upstream: kong.Upstream{Name: kong.String(*ks.svc.Host)}}
	var resolved []*corev1.Service
	targets := map[string]*file.FTarget{}
	var order []string
	for i, be := range gb.refs {
		field := fmt.Sprintf("%s[%d]", gb.field, i)
		ns := gb.route.GetNamespace()
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
			b.backendProblem(gb, field, gatewayv1.RouteReasonInvalidKind, "backendRef %s/%s: unsupported kind %q, only 'Service' is supported; the backend is left out", ns, be.Name, kind)
			continue
		}
		b.refer(gb.route, gb.gvk, ref(gvkService, ns, string(be.Name)))
		if !b.granted(gb.route, gb.gvk, "", "Service", ns, string(be.Name)) {
			b.backendProblem(gb, field, gatewayv1.RouteReasonRefNotPermitted, "backendRef to Service %s/%s is not permitted by any ReferenceGrant; the backend is left out", ns, be.Name)
			continue
		}
		svc := b.services[ns+"/"+string(be.Name)]
		if svc == nil {
			b.backendProblem(gb, field, gatewayv1.RouteReasonBackendNotFound, "Service %s/%s not found; the backend is left out", ns, be.Name)
			continue
		}
		port := int32(0)
		if be.Port != nil {
			port = int32(*be.Port)
		}
		sp, err := findPort(svc, netv1.ServiceBackendPort{Number: port})
		if port == 0 || err != nil {
			b.backendProblem(gb, field+".port", gatewayv1.RouteReasonBackendNotFound, "can't find port for backend kubernetes service %s/%s: no suitable port found", ns, be.Name)
			continue
		}
		resolved = append(resolved, svc)
		ks.svc.Port = kong.Int(int(sp.Port))
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
	var tags []string
	if len(resolved) == 1 {
		svc := resolved[0]
		tags = b.tags(svc, gvkService)
		// Plugins, upstream policies and annotations of the one Service apply, as to an
		// Ingress backend.
		ks.namespace, ks.svcName = svc.Namespace, svc.Name
		b.serviceAnnotations(ks, svc)
	} else {
		tags = b.tags(gb.route, gb.gvk)
	}
	ks.svc.Tags = kong.StringSlice(tags...)
	ks.upstream.Tags = kong.StringSlice(tags...)
	if len(resolved) == 0 && len(gb.refs) > 0 {
		ks.svc.Plugins = append(ks.svc.Plugins, &file.FPlugin{Plugin: kong.Plugin{
			Name:   kong.String("request-termination"),
			Config: kong.Configuration{"status_code": 500, "message": "no existing backendRef provided"},
		}})
	}
}

// backendProblem reports an unresolved backendRef on the route (a Problem, so an Event) and
// records it on the route's attachment with its ResolvedRefs reason, for the route's status.
func (b *builder) backendProblem(gb *gatewayBackends, field string, reason gatewayv1.RouteConditionReason, format string, args ...any) {
	b.problem(gb.route, gb.gvk, field, format, args...)
	b.gw.Route(gb.gvk.Kind, gb.route).AddRefProblem(reason, fmt.Sprintf(format, args...))
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
