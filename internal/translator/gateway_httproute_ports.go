package translator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// Listener ports of HTTPRoutes under the expressions router (konductor; KIC ignores the port
// of an HTTP route's parentRef and listener when it translates: every HTTP route of a Gateway
// serves every port Kong proxies HTTP on). A request's Gateway listener port is a port P of
// the Kong proxy's publish Service, whose targetPort is a Kong proxy listen. Kong's router
// reads an HTTP request's net.dst.port as the port its Host header names, and only for a Host
// without one as the listen's port (through port_maps; kong/router/atc.lua sets params.port
// from the Host, which kong/router/fields.lua reads first; gatewayapi.HTTPRouterPorts). A
// client names the port in Host unless it is its scheme's default: so a route that reaches
// only some of the HTTP(S) ports of its Gateways matches `net.dst.port == P || net.dst.port
// == T` for each port P it reaches, T the router port behind P. (A client that writes another
// port in Host than the one it connected to is routed by that port, as Kong routes it.) A
// route that reaches every such port gets no predicate: it would change nothing (and KIC's
// expressions stay as they are). The traditional routers have no destination port for HTTP
// routes (Kong's schema allows destinations on stream routes only): there the port is not
// matched.

// listenerPortMatcher is the net.dst.port predicate of a split of hr serving hostname h ("" for
// any) attached as ra: nil when the route reaches every HTTP(S) port of its Gateways, or when
// the router port of a port it reaches is not known (then reported, and no port is matched:
// a guess could send the route's requests nowhere).
func (b *builder) listenerPortMatcher(hr *gatewayv1.HTTPRoute, ra *gatewayapi.RouteAttachment, h string) *matcher {
	if ra == nil {
		return nil
	}
	reached, all := map[gatewayv1.PortNumber]bool{}, map[gatewayv1.PortNumber]bool{}
	for _, p := range ra.Parents {
		if !p.Accepted {
			continue
		}
		for _, l := range p.Gateway.AllListeners() {
			if isHTTPListener(l.Listener) {
				all[l.Listener.Port] = true
			}
		}
		for _, l := range p.Listeners {
			if isHTTPListener(l.Listener) && listenerServesHost(l.Listener, h) {
				reached[l.Listener.Port] = true
			}
		}
	}
	missing := false
	for p := range all {
		if !reached[p] {
			missing = true
		}
	}
	if !missing || len(reached) == 0 {
		return nil
	}
	if b.opts.PublishService != "" {
		ns, name, _ := strings.Cut(b.opts.PublishService, "/")
		b.refer(hr, gvkHTTPRoute, ref(gvkService, ns, name))
	}
	var ports, unknown []int
	for p := range reached {
		rp, ok := b.opts.HTTPRouterPorts[p]
		if !ok {
			unknown = append(unknown, int(p))
			continue
		}
		ports = append(ports, int(p), rp)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		b.warnListenerPorts(hr, unknown)
		return nil
	}
	slices.Sort(ports)
	var preds []*matcher
	for _, p := range slices.Compact(ports) {
		// An integer literal, unquoted, as in the stream routes' predicates.
		preds = append(preds, &matcher{pred: "net.dst.port == " + strconv.Itoa(p)})
	}
	return group("||", preds...)
}

// warnListenerPorts reports, once per route, that hr is not held to its listeners' ports
// (the Gateway ports listed) for want of their Kong ports. Without a publish Service
// (--publish-service) no route is, which the controller says once at start (and KIC's and
// the goldens' translations stay as they are).
func (b *builder) warnListenerPorts(hr *gatewayv1.HTTPRoute, ports []int) {
	if b.opts.PublishService == "" {
		return
	}
	if b.portsWarned == nil {
		b.portsWarned = map[*gatewayv1.HTTPRoute]bool{}
	}
	if b.portsWarned[hr] {
		return
	}
	b.portsWarned[hr] = true
	why := fmt.Sprintf("publish Service %s not in the cache (its namespace not watched?), or no gateway said its listens (GET /)", b.opts.PublishService)
	if len(b.opts.HTTPRouterPorts) > 0 {
		why = fmt.Sprintf("publish Service %s has no port whose targetPort is a Kong proxy listen (by number; a named targetPort is not resolved) for them, on every gateway alike", b.opts.PublishService)
	}
	b.problems = append(b.problems, Problem{Object: kongstate.RefFor(hr, gvkHTTPRoute), Field: "spec.parentRefs", Warning: true,
		Message: fmt.Sprintf("the route is attached to listener port(s) %s only, but the Kong port behind them is not known (%s): the route also takes requests that came through its Gateways' other HTTP ports",
			strings.Join(portStrings(ports), ", "), why)})
}

func portStrings(ports []int) []string {
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = strconv.Itoa(p)
	}
	return out
}

// isHTTPListener reports whether l carries HTTPRoutes (HTTP or HTTPS).
func isHTTPListener(l *gatewayv1.Listener) bool {
	return l.Protocol == gatewayv1.HTTPProtocolType || l.Protocol == gatewayv1.HTTPSProtocolType
}

// listenerServesHost reports whether listener l can serve hostname h ("" for any).
func listenerServesHost(l *gatewayv1.Listener, h string) bool {
	if l.Hostname == nil || h == "" {
		return true
	}
	lh := string(*l.Hostname)
	return coversOrIs(lh, h) || coversOrIs(h, lh)
}
