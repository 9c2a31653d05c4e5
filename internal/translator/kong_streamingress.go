package translator

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

// l4Ingresses translates TCPIngresses and UDPIngresses into stream services and routes
// (translation-rules.md §14), each in creation order:
//
//   - TCPIngress rule i: route <ns>.<name>.<i> with protocols [tcp, tls], the rule's port as
//     destination and its host as SNI, on the Kong service <ns>.<svc>.<port> (protocol tcp).
//   - UDPIngress rule i: route <ns>.<name>.<i>.udp (protocols [udp]) on <ns>.<svc>.<port>.udp
//     (protocol udp).
//
// Under the expressions router both routes match by KIC's expression instead of destinations
// and snis (kong_streamexpressions.go).
//
// KIC merges its sources by Kong service name, a later source replacing an earlier one: a
// TCPIngress whose service name is that of an Ingress's (same namespace, Service and port)
// replaces it, with its HTTP routes. konductor does the same, so that the entities match, and
// reports it on the TCPIngress.
func (b *builder) l4Ingresses() {
	b.tcpIngresses = append([]*kongv1beta1.TCPIngress(nil), b.snap.TCPIngresses...)
	sortByAge(b.tcpIngresses)
	tcp := map[string]*kongService{}
	for _, ti := range b.tcpIngresses {
		for i, rule := range ti.Spec.Rules {
			field := fmt.Sprintf("spec.rules[%d]", i)
			port := int32(rule.Backend.ServicePort)
			name := fmt.Sprintf("%s.%s.%d", ti.Namespace, rule.Backend.ServiceName, port)
			ks := tcp[name]
			if ks == nil {
				ks = b.l4Service(ti, gvkTCPIngress, field, name, rule.Backend.ServiceName, port, "tcp")
				if ks == nil {
					continue
				}
				tcp[name] = ks
			}
			r := b.l4Route(ti, gvkTCPIngress, field, ti.Namespace+"."+ti.Name+"."+strconv.Itoa(i), "tcp", "tls")
			if r == nil {
				continue
			}
			r.Destinations = []*kong.CIDRPort{{Port: kong.Int(rule.Port)}}
			if b.opts.ExpressionRoutes {
				// KIC's expression has no snis field for Kong to check, only its own
				// filter (kong_streamexpressions.go): a host it skips leaves the port alone, and KIC
				// then serves the port whatever the SNI. Leaving out never widens
				// (invariant 5): such a rule is left out instead.
				var snis []string
				if rule.Host != "" {
					snis = []string{rule.Host}
				}
				expr, skipped := l4Expression(snis, []int{rule.Port})
				if len(skipped) > 0 {
					b.problem(ti, gvkTCPIngress, field+".host", "SNI %q cannot be matched under the expressions router (KIC's expression takes only plain hostnames in tls.sni, no wildcard), and without it the rule would serve port %d whatever the SNI; the rule is left out",
						skipped[0], rule.Port)
					continue
				}
				setL4Expression(&r.Route, expr)
			} else if rule.Host != "" {
				if e := checkSNI(rule.Host); e != "" {
					b.problem(ti, gvkTCPIngress, field+".host", "%s; the rule is left out", e)
					continue
				}
				r.SNIs = kong.StringSlice(rule.Host)
			}
			ks.routes = append(ks.routes, r)
			ks.addReferrer(ti, gvkTCPIngress, field+".backend")
		}
	}
	for name, ks := range tcp {
		if len(ks.routes) == 0 {
			continue // every rule on it was left out: it replaces nothing
		}
		if old, ok := b.kongServices[name]; ok && len(old.routes) > 0 {
			b.problem(ks.referrers[0].obj, gvkTCPIngress, ks.referrers[0].field,
				"Kong service %s is also the service of Ingress routes; as in KIC, the TCPIngress's replaces it and those routes are left out", name)
			for _, r := range slices.Concat(ks.referrers, old.referrers) {
				b.share("service "+name, r.obj, r.gvk)
			}
			for _, r := range old.routes {
				delete(b.routeNames, *r.Name)
			}
		}
		b.kongServices[name] = ks
	}

	udps := append([]*kongv1beta1.UDPIngress(nil), b.snap.UDPIngresses...)
	sortByAge(udps)
	b.udpIngresses = udps
	for _, ui := range udps {
		for i, rule := range ui.Spec.Rules {
			field := fmt.Sprintf("spec.rules[%d]", i)
			port := int32(rule.Backend.ServicePort)
			name := fmt.Sprintf("%s.%s.%d.udp", ui.Namespace, rule.Backend.ServiceName, port)
			ks := b.kongServices[name]
			if ks == nil {
				if ks = b.l4Service(ui, gvkUDPIngress, field, name, rule.Backend.ServiceName, port, "udp"); ks == nil {
					continue
				}
				b.kongServices[name] = ks
			}
			r := b.l4Route(ui, gvkUDPIngress, field, ui.Namespace+"."+ui.Name+"."+strconv.Itoa(i)+".udp", "udp")
			if r == nil {
				continue
			}
			r.Destinations = []*kong.CIDRPort{{Port: kong.Int(rule.Port)}}
			if b.opts.ExpressionRoutes {
				expr, _ := l4Expression(nil, []int{rule.Port})
				setL4Expression(&r.Route, expr)
			}
			ks.routes = append(ks.routes, r)
			ks.addReferrer(ui, gvkUDPIngress, field+".backend")
		}
	}
}

// l4Service makes the Kong service of a TCPIngress or UDPIngress backend. KIC gives the UDP
// one the Service port at once and no timeouts or retries; the TCP one starts like an
// Ingress's, on port 80 until the port resolves.
func (b *builder) l4Service(obj client.Object, gvk schema.GroupVersionKind, field, name, svcName string, port int32, protocol string) *kongService {
	host := fmt.Sprintf("%s.%s.%d.svc", svcName, obj.GetNamespace(), port)
	if e := checkName(name); e != "" {
		b.problem(obj, gvk, field+".backend", "Kong service %s", e)
		return nil
	}
	if e := checkServiceHost(host); e != "" {
		b.problem(obj, gvk, field+".backend", "Kong service %s", e)
		return nil
	}
	svc := b.httpKongService(name, host) // the TCP one: an Ingress's, with its protocol
	svc.Protocol = kong.String(protocol)
	if protocol == "udp" {
		svc.Port = b.servicePort(port)
		svc.ConnectTimeout, svc.ReadTimeout, svc.WriteTimeout, svc.Retries = nil, nil, nil, nil
	}
	return &kongService{
		namespace: obj.GetNamespace(), svcName: svcName, port: netv1.ServiceBackendPort{Number: port}, portKey: strconv.Itoa(int(port)),
		routeByKey: map[string]*routeEntry{}, svc: svc,
	}
}

func (b *builder) l4Route(obj client.Object, gvk schema.GroupVersionKind, field, name string, protocols ...string) *routeEntry {
	if e := checkName(name); e != "" {
		b.problem(obj, gvk, field, "route %s; the route is left out", e)
		return nil
	}
	if b.routeNameTaken(obj, gvk, name, "") {
		b.problem(obj, gvk, field, "route name %q is already used by another route; the route is left out", name)
		return nil
	}
	return &routeEntry{FRoute: &file.FRoute{Route: kong.Route{
		ID:        kong.String(kongstate.RouteID(b.opts.Workspace, name)),
		Name:      kong.String(name),
		Protocols: kong.StringSlice(protocols...),
		Tags:      b.entityTags(obj, gvk),
	}}, src: obj, srcGVK: gvk}
}
