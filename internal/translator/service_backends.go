package translator

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service annotations of translation-rules.md §10.2.
const (
	annProtocol        = "konghq.com/protocol"
	annPath            = "konghq.com/path"
	annConnectTimeout  = "konghq.com/connect-timeout"
	annReadTimeout     = "konghq.com/read-timeout"
	annWriteTimeout    = "konghq.com/write-timeout"
	annRetries         = "konghq.com/retries"
	annTLSVerify       = "konghq.com/tls-verify"
	annTLSVerifyDepth  = "konghq.com/tls-verify-depth"
	annHostHeader      = "konghq.com/host-header"
	annServiceUpstream = "ingress.kubernetes.io/service-upstream"
)

var validServiceProtocols = map[string]bool{
	"http": true, "https": true, "grpc": true, "grpcs": true, "tcp": true, "tls": true,
	"tls_passthrough": true, "udp": true,
}

// populateServices resolves the Kubernetes Service behind every Kong service: tags, port,
// upstream and targets, then the Service's annotations (translation-rules.md §3.2, §4, §10.2). A
// missing Service or port keeps the Kong service and its routes, with port 80 and an
// upstream without targets, so Kong answers 503 instead of letting the traffic fall through
// to another route.
func (b *builder) populateServices() {
	for _, n := range b.kongServiceNames() {
		ks := b.kongServices[n]
		if ks.gateway != nil {
			b.populateGatewayService(ks)
			continue
		}
		// The upstream's name is the service's host, the same string: one pointer for both,
		// never written through (sharedvalues.go).
		ks.upstream = &file.FUpstream{Upstream: kong.Upstream{Name: ks.svc.Host}}
		bk := b.backingService(ks)
		if ks.facade != "" {
			for _, r := range ks.referrers {
				b.refer(r.obj, r.gvk, ref(gvkKongServiceFacade, ks.namespace, ks.facade))
			}
			if bk == nil && ks.svcName == "" {
				for _, r := range ks.referrers {
					b.problem(r.obj, r.gvk, r.field, "failed to get backend for KongServiceFacade %s/%s: not found", ks.namespace, ks.facade)
				}
				ks.svc.Tags = b.placeholderServiceTags()
				ks.upstream.Tags = ks.svc.Tags
				continue
			}
		} else {
			for _, r := range ks.referrers {
				b.refer(r.obj, r.gvk, ref(gvkService, ks.namespace, ks.svcName))
			}
		}
		var svc *corev1.Service
		if bk != nil {
			svc = bk.svc
		}
		if svc == nil {
			for _, r := range ks.referrers {
				b.problem(r.obj, r.gvk, r.field, "failed to resolve Kubernetes Service for backend: failed to fetch Service %s/%s: Service %s/%s not found",
					ks.namespace, ks.svcName, ks.namespace, ks.svcName)
				b.problem(r.obj, r.gvk, r.field, "can't add target for backend %s: no kubernetes service found", ks.svcName)
			}
			ks.svc.Tags = b.placeholderServiceTags()
			ks.upstream.Tags = ks.svc.Tags
			continue
		}
		ks.svc.Tags = b.entityTags(bk.owner, bk.gvk)
		ks.upstream.Tags = ks.svc.Tags

		sp, err := findPort(svc, ks.port)
		if err != nil {
			b.problem(svc, gvkService, "spec.ports", "%s", err)
			for _, r := range ks.referrers {
				b.problem(r.obj, r.gvk, r.field+".port", "%s", err)
			}
		} else {
			ks.svc.Port = b.servicePort(sp.Port)
			ks.upstream.Targets = b.targets(svc, sp)
		}
		b.serviceAnnotations(ks, svc)
	}
}

// servicePort is the value a Kong service's port points to: one for every service of the
// translation with that port, never written through (sharedvalues.go).
func (b *builder) servicePort(port int32) *int {
	p, ok := b.ports[port]
	if !ok {
		if b.ports == nil {
			b.ports = map[int32]*int{}
		}
		p = kong.Int(int(port))
		b.ports[port] = p
	}
	return p
}

var errNoPort = fmt.Errorf("can't find port for backend kubernetes service: no suitable port found")

// findPort is KIC's findPort (translation-rules.md §4.1).
func findPort(svc *corev1.Service, want netv1.ServiceBackendPort) (*corev1.ServicePort, error) {
	external := svc.Spec.Type == corev1.ServiceTypeExternalName
	switch {
	case want.Number != 0:
		if external {
			return &corev1.ServicePort{Port: want.Number, TargetPort: intstr.FromInt32(want.Number)}, nil
		}
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].Port == want.Number {
				return &svc.Spec.Ports[i], nil
			}
		}
	case want.Name != "":
		if external {
			return nil, fmt.Errorf("rules with an ExternalName service must specify numeric ports")
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.Name == want.Name || (p.TargetPort.StrVal != "" && p.TargetPort.StrVal == want.Name) {
				return p, nil
			}
		}
	default:
		if external {
			return nil, fmt.Errorf("rules with an ExternalName service must specify numeric ports")
		}
		if len(svc.Spec.Ports) != 1 {
			return nil, fmt.Errorf("in implicit mode, service must have exactly 1 port, has %d", len(svc.Spec.Ports))
		}
		return &svc.Spec.Ports[0], nil
	}
	return nil, errNoPort
}

// targets lists the upstream targets of one Service port (translation-rules.md §4.2, §4.3).
func (b *builder) targets(svc *corev1.Service, sp *corev1.ServicePort) []*file.FTarget {
	if svc.Annotations[annServiceUpstream] == "true" || b.opts.ServiceUpstream {
		host := svc.Name + "." + svc.Namespace + ".svc"
		if b.opts.ClusterDomain != "" {
			host += "." + b.opts.ClusterDomain
		}
		return []*file.FTarget{target(host+":"+strconv.Itoa(int(sp.Port)), nil)}
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if svc.Spec.ExternalName == "" {
			return nil
		}
		if !b.externalNameAllowed(svc) {
			return nil
		}
		return []*file.FTarget{target(joinHostPort(svc.Spec.ExternalName, sp.TargetPort.String()), nil)}
	}

	protocols := []corev1.Protocol{corev1.ProtocolTCP}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != "" && !containsProtocol(protocols, p.Protocol) {
			protocols = append(protocols, p.Protocol)
		}
	}
	type found struct {
		target string
		weight *int
	}
	var targets []found
	seen := map[string]bool{}
	for _, proto := range protocols {
		for _, es := range b.slices[svc.Namespace+"/"+svc.Name] {
			for _, p := range es.Ports {
				if p.Port == nil || *p.Port < 0 || strOrEmpty(p.Name) != sp.Name {
					continue
				}
				pp := corev1.ProtocolTCP
				if p.Protocol != nil {
					pp = *p.Protocol
				}
				if pp != proto {
					continue
				}
				port := strconv.Itoa(int(*p.Port))
				for _, ep := range es.Endpoints {
					if len(ep.Addresses) == 0 {
						continue
					}
					var weight *int
					if !endpointReady(ep) {
						if !b.opts.EnableDrainSupport || !endpointTerminating(ep) {
							continue
						}
						weight = &sharedZero
					}
					if k, hasPort, ok := hostKind(ep.Addresses[0]); !ok || hasPort || k == "" {
						// The API server validates addresses; a manifest given to
						// `konductor translate` may not be, and Kong would refuse the target.
						b.problem(es, gvkEndpointSlice, "endpoints", "invalid address %q; the endpoint is left out", ep.Addresses[0])
						continue
					}
					if !b.allowedTarget(svc, "", ep.Addresses[0]) {
						continue
					}
					t := joinHostPort(ep.Addresses[0], port)
					if seen[t] {
						continue
					}
					seen[t] = true
					targets = append(targets, found{t, weight})
				}
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	// The upstream's targets and the strings they point to in one array, rather than two
	// allocations per target (issue #13, start).
	type block struct {
		ft     file.FTarget
		target string
	}
	blocks := make([]block, len(targets))
	out := make([]*file.FTarget, len(targets))
	for i, t := range targets {
		blk := &blocks[i]
		blk.target = t.target
		blk.ft.Target = kong.Target{Target: &blk.target, Weight: t.weight}
		out[i] = &blk.ft
	}
	return out
}

func target(t string, weight *int) *file.FTarget {
	return &file.FTarget{Target: kong.Target{Target: kong.String(t), Weight: weight}}
}

func containsProtocol(ps []corev1.Protocol, p corev1.Protocol) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

func endpointReady(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

func endpointTerminating(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Terminating != nil && *ep.Conditions.Terminating
}

// joinHostPort brackets IPv6 addresses, as KIC's targets do. Only a host with a ":" is parsed.
func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") && net.ParseIP(host) != nil {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// serviceAnnotations applies the Service's annotations to the Kong service and upstream
// (translation-rules.md §10.2). Values KIC ignores are ignored; values KIC passes on but Kong would
// refuse are reported and ignored, since Kong would reject the whole configuration for them.
func (b *builder) serviceAnnotations(ks *kongService, svc *corev1.Service) {
	a := svc.Annotations
	if v, ok := a[annProtocol]; ok {
		if validServiceProtocols[v] {
			ks.svc.Protocol = kong.String(v)
		} else {
			b.problem(svc, gvkService, annField(annProtocol), "konghq.com/protocol annotation has invalid value: %s", v)
		}
	}
	if v, ok := a[annPath]; ok && strings.HasPrefix(v, "/") {
		if e := checkServicePath(v); e != "" {
			b.problem(svc, gvkService, annField(annPath), "%s; the annotation is ignored", e)
		} else {
			ks.svc.Path = kong.String(v)
		}
	}
	for _, t := range []struct {
		key string
		dst **int
		min int
		max int
	}{
		{annConnectTimeout, &ks.svc.ConnectTimeout, 1, 1<<31 - 2},
		{annReadTimeout, &ks.svc.ReadTimeout, 1, 1<<31 - 2},
		{annWriteTimeout, &ks.svc.WriteTimeout, 1, 1<<31 - 2},
		{annRetries, &ks.svc.Retries, 0, 32767},
		{annTLSVerifyDepth, &ks.svc.TLSVerifyDepth, 0, 64},
	} {
		v, ok := a[t.key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		if n < t.min || n > t.max {
			b.problem(svc, gvkService, annField(t.key), "value %d is out of range [%d, %d]; the annotation is ignored", n, t.min, t.max)
			continue
		}
		*t.dst = kong.Int(n)
	}
	if v, ok := annotationBool(a, annTLSVerify); ok {
		ks.svc.TLSVerify = kong.Bool(v)
	}
	if v, ok := a[annHostHeader]; ok && v != "" {
		if k, _, valid := hostKind(v); !valid || k == "" {
			b.problem(svc, gvkService, annField(annHostHeader), "invalid host %q; the annotation is ignored", v)
		} else {
			ks.upstream.HostHeader = kong.String(v)
		}
	}
	// KIC removes the path for grpc and grpcs. Kong also refuses a path on tcp, tls,
	// tls_passthrough and udp services, so konductor removes it there too rather than have
	// the whole configuration rejected.
	switch *ks.svc.Protocol {
	case "grpc", "grpcs", "tcp", "tls", "tls_passthrough", "udp":
		ks.svc.Path = nil
	}
}
