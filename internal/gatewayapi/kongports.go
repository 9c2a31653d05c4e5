package gatewayapi

import (
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A Gateway listener is a port of the Kong proxy's publish Service (KIC's model): the one
// place that tells, from a publish Service and what a Kong said of its listens (GET /), which
// protocol each Service port serves (the Gateway status's listener check) and on which port
// Kong's router sees the requests and connections that came through it (net.dst.port, the
// translation's port predicates of HTTPRoutes under the expressions router).

// KongListens are the listens of one Kong (GET /'s configuration): where it serves HTTP(S)
// (proxy_listeners) and TCP, TLS and UDP (stream_listeners), and its port_maps.
type KongListens struct {
	Proxy, Stream []KongListen
	// PortMaps is Kong's port_maps ("80:8000": the port a listen is published at, the host
	// port, for a Kong port): Kong's router reads the host port as a request's net.dst.port
	// (kong/router/fields.lua reads ctx.host_port, which kong/runloop/handler.lua sets from
	// port_maps, before var.server_port). Kong port -> host port; nil without port_maps.
	PortMaps map[int]int
}

// KongListen is one listen: its port and whether it terminates TLS (ssl) or is UDP (udp, a
// stream listen's flag).
type KongListen struct {
	Port     int
	SSL, UDP bool
}

// routerPort is the port Kong's router reads (net.dst.port) of a request or connection
// accepted on port, a port Kong listens on: its host port when port_maps maps it.
func (l KongListens) routerPort(port int) int {
	if p, ok := l.PortMaps[port]; ok {
		return p
	}
	return port
}

// PublishedPort is one port of a publish Service as a Kong serves it.
type PublishedPort struct {
	// Port is the Service's port: the port of the Gateway listeners it serves.
	Port gatewayv1.PortNumber
	// Protocol is what Kong serves behind it: HTTP or HTTPS behind a proxy listen (HTTPS with
	// ssl), TLS behind a stream listen with ssl, otherwise the Service port's own protocol
	// (TCP or UDP; a stream listen's udp flag is not read, as in KIC).
	Protocol gatewayv1.ProtocolType
	// RouterPort is the net.dst.port Kong's router sees for what came through the port: the
	// listen its targetPort names, through port_maps (for an HTTP request, only when its Host
	// names no port: Kong's router reads the Host's port first). 0 when no listen of the Kong
	// is at the targetPort, or the targetPort is named (KIC reads its IntValue, 0, and so
	// matches none; resolving a name needs the proxy Pods' container ports, which are not
	// read).
	RouterPort int
}

// PublishedPorts are the ports of svcs as one Kong with listens l serves them, in the
// Services' order.
func PublishedPorts(svcs []*corev1.Service, l KongListens) []PublishedPort {
	proxy, stream := map[int]KongListen{}, map[int]KongListen{}
	for _, k := range l.Proxy {
		proxy[k.Port] = k
	}
	for _, k := range l.Stream {
		stream[k.Port] = k
	}
	var out []PublishedPort
	for _, svc := range svcs {
		for _, sp := range svc.Spec.Ports {
			// A named targetPort matches no listen, as an unset one is the port itself (the
			// API server defaults it).
			target := sp.TargetPort.IntValue()
			pp := PublishedPort{Port: gatewayv1.PortNumber(sp.Port), Protocol: gatewayv1.ProtocolType(sp.Protocol)}
			if sp.Protocol == "" {
				pp.Protocol = gatewayv1.TCPProtocolType
			}
			if k, ok := stream[target]; ok {
				pp.RouterPort = l.routerPort(target)
				if k.SSL {
					pp.Protocol = gatewayv1.TLSProtocolType
				}
			}
			if k, ok := proxy[target]; ok {
				pp.Protocol, pp.RouterPort = gatewayv1.HTTPProtocolType, l.routerPort(target)
				if k.SSL {
					pp.Protocol = gatewayv1.HTTPSProtocolType
				}
			}
			out = append(out, pp)
		}
	}
	return out
}

// HTTPRouterPorts are, for each port of svc that serves HTTP or HTTPS on every Kong of
// listens, the net.dst.port Kong's router sees its requests on when their Host names no port,
// when every Kong says the same one (PublishedPorts). A port whose router port is unknown (a named targetPort) or differs
// between the Kongs is left out: a route cannot be told to match it. nil without svc or
// listens.
func HTTPRouterPorts(svc *corev1.Service, listens []KongListens) map[gatewayv1.PortNumber]int {
	if svc == nil || len(listens) == 0 {
		return nil
	}
	out := map[gatewayv1.PortNumber]int{}
	disagree := map[gatewayv1.PortNumber]bool{}
	for i, l := range listens {
		seen := map[gatewayv1.PortNumber]bool{}
		for _, pp := range PublishedPorts([]*corev1.Service{svc}, l) {
			if pp.Protocol != gatewayv1.HTTPProtocolType && pp.Protocol != gatewayv1.HTTPSProtocolType {
				continue
			}
			seen[pp.Port] = true
			if prev, ok := out[pp.Port]; i > 0 && (!ok || prev != pp.RouterPort) {
				disagree[pp.Port] = true
			}
			if i == 0 {
				out[pp.Port] = pp.RouterPort
			}
		}
		for p := range out {
			if !seen[p] {
				disagree[p] = true
			}
		}
	}
	for p, rp := range out {
		if disagree[p] || rp == 0 {
			delete(out, p)
		}
	}
	return out
}
