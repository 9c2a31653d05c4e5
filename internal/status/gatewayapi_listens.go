package status

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
)

// Which of a Gateway's listeners Kong serves (KIC's determineListenersFromDataPlane and
// getListenerStatus; docs/kong-facts.md "Gateway listeners from Kong's listens").
//
// A Gateway listener is a port of the Kong proxy's Service. Each port of the publish Services
// (--publish-service, and --publish-service-udp) is matched by its targetPort with Kong's
// listens (GET /: proxy_listeners, stream_listeners; the listen's address is not compared):
// behind a proxy listen the port serves HTTPS when the listen has ssl, HTTP otherwise;
// behind a stream listen with ssl it serves TLS; otherwise (no listen, or a stream listen
// without ssl) it serves the Service port's own protocol, TCP or UDP. A listener whose protocol
// no port serves is not accepted (UnsupportedProtocol), one whose protocol is served on other
// ports only is not either (PortUnavailable). With several gateways, a port serves a protocol
// only when it does on every gateway that said its listens.
//
// The Gateway's konghq.com/publish-service annotation (comma-separated namespace/name) names
// which of the publish Services feed it; KIC writes it onto each Gateway (both Services when
// empty) and refuses a Service it was not given. konductor reads it and never writes it
// (absent means both, the same result; its role grants no update on Gateways): a KIC user's
// Gateways keep their meaning.

// PublishServiceAnnotation is the Gateway annotation naming its publish Services.
const PublishServiceAnnotation = "konghq.com/publish-service"

// kongPorts are the ports a Gateway's listeners may use: by protocol, the Service ports served.
type kongPorts map[gatewayv1.ProtocolType]map[gatewayv1.PortNumber]bool

func (p kongPorts) add(proto gatewayv1.ProtocolType, port int32) {
	if p[proto] == nil {
		p[proto] = map[gatewayv1.PortNumber]bool{}
	}
	p[proto][gatewayv1.PortNumber(port)] = true
}

// servedPorts are the ports svcs serve through one Kong with listens l.
func servedPorts(svcs []*corev1.Service, l dataplane.KongListens) kongPorts {
	out := kongPorts{}
	for _, pp := range gatewayapi.PublishedPorts(svcs, l) {
		out.add(pp.Protocol, int32(pp.Port))
	}
	return out
}

// commonPorts are the ports every gateway serves: each gateway's listens through svcs, then
// only what all of them serve. nil when no gateway said its listens (no check then).
func commonPorts(svcs []*corev1.Service, listens []dataplane.KongListens) kongPorts {
	var out kongPorts
	for i, l := range listens {
		p := servedPorts(svcs, l)
		if i == 0 {
			out = p
			continue
		}
		for proto, ports := range out {
			for port := range ports {
				if !p[proto][port] {
					delete(ports, port)
				}
			}
			if len(ports) == 0 {
				delete(out, proto)
			}
		}
	}
	return out
}

// unavailable is why a listener of proto on port is not served (its reason and message), ""
// when it is.
func (p kongPorts) unavailable(proto gatewayv1.ProtocolType, port gatewayv1.PortNumber) (gatewayv1.ListenerConditionReason, string) {
	switch {
	case p == nil || p[proto][port]:
		return "", ""
	case len(p[proto]) == 0:
		return gatewayv1.ListenerReasonUnsupportedProtocol, "no Kong listen with the requested protocol is configured"
	}
	return gatewayv1.ListenerReasonPortUnavailable, "no Kong listen with the requested protocol is configured for the requested port"
}

// publishServices are the Services whose ports gw's listeners use: those its annotation
// names, each one of configured (--publish-service, --publish-service-udp), else all of
// configured. An annotation naming another Service is an error (the Gateway is then not
// accepted, as KIC reconciles it no further).
func publishServices(gw *gatewayv1.Gateway, configured []string) ([]string, error) {
	v := strings.TrimSpace(gw.Annotations[PublishServiceAnnotation])
	if v == "" {
		return configured, nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(configured, s) {
			return nil, fmt.Errorf("annotation %s names %s, which is not a publish Service of this controller (%s)",
				PublishServiceAnnotation, s, strings.Join(configured, ", "))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return configured, nil
	}
	return out, nil
}

// serviceReader reads the publish Services once per pass, whatever the number of Gateways
// and of what each needs of them (addresses, ports).
type serviceReader struct {
	reader client.Reader
	read   map[string]*corev1.Service
}

// service is the Service "namespace/name".
func (r *serviceReader) service(ctx context.Context, name string) (*corev1.Service, error) {
	if svc, ok := r.read[name]; ok {
		return svc, nil
	}
	ns, n, _ := strings.Cut(name, "/")
	svc := &corev1.Service{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, svc); err != nil {
		return nil, err
	}
	if r.read == nil {
		r.read = map[string]*corev1.Service{}
	}
	r.read[name] = svc
	return svc, nil
}

func (r *serviceReader) get(ctx context.Context, names []string) ([]*corev1.Service, error) {
	var out []*corev1.Service
	for _, n := range names {
		svc, err := r.service(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("publish Service %s: %w", n, err)
		}
		out = append(out, svc)
	}
	return out, nil
}

// named restricts opts to the publish Services names (a Gateway's annotation): a Gateway
// publishes the addresses of the proxies it names.
func (o IngressOptions) named(names []string) IngressOptions {
	var out IngressOptions
	if slices.Contains(names, o.PublishService) {
		out.PublishService, out.PublishAddresses = o.PublishService, o.PublishAddresses
	}
	if slices.Contains(names, o.PublishServiceUDP) {
		out.PublishServiceUDP, out.PublishAddressesUDP = o.PublishServiceUDP, o.PublishAddressesUDP
	}
	return out
}
