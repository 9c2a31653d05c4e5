package translator

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
)

// withBackendTLSPolicy is svc as KIC reads it once the BackendTLSPolicy that applies to its
// port named portName (gatewayapi.BackendTLSPolicyFor: the one taking precedence among those
// naming that port, else among those naming the whole Service) is accepted (its
// handleBackendTLSPolices, docs/kong-facts.md "BackendTLSPolicy"): a copy whose annotations
// say konghq.com/protocol https, konghq.com/tls-verify true, konghq.com/host-header the
// policy's validation hostname, the policy's caCertificateRefs added to
// konghq.com/ca-certificates-configmap, and konghq.com/tls-verify-depth from the option
// tls-verify-depth when it is a number >= 0. The annotations then apply like the user's, to
// the Kong service backed by that port of the Service (Ingress backends too). svc itself is
// not modified. Only with the GatewayAlpha gate, and only for a Service that an HTTPRoute of
// one of our Gateways names as a backend (KIC applies a policy only when it has such
// ancestors).
//
// A policy that is not accepted (gatewayapi.JudgeBackendTLSPolicy: no valid CA certificate,
// unsupported fields) leaves svc as it is and is returned as refused: the Gateway API Kong
// service then answers 500 instead of sending plain HTTP to a TLS port (populateGatewayService).
//
// Unlike KIC, policies selecting one Service are resolved by the spec's precedence, per port,
// where KIC refuses them all; a caCertificateRef ConfigMap is read without the
// konghq.com/ca-cert label (policyCAs, tls_cacerts.go), and the routes to the Service send
// the policy's hostname as Host and SNI (backendTLSHost).
func (b *builder) withBackendTLSPolicy(svc *corev1.Service, portName string) (applied *corev1.Service, refused *gatewayv1.BackendTLSPolicy) {
	if !b.opts.GatewayAlpha || !b.httpRouteBackends()[svc.Namespace+"/"+svc.Name] {
		return svc, nil
	}
	for _, p := range b.snap.BackendTLSPolicies {
		if p != nil && p.Namespace == svc.Namespace && slices.ContainsFunc(p.Spec.TargetRefs, func(t gatewayv1.LocalPolicyTargetReferenceWithSectionName) bool {
			return gatewayapi.IsServiceTarget(t) && string(t.Name) == svc.Name
		}) {
			// Every policy naming the Service: one created or deleted changes which applies.
			b.refer(svc, gvkService, kongstate.RefFor(p, gvkBackendTLSPolicy))
		}
	}
	p := gatewayapi.BackendTLSPolicyFor(b.snap.BackendTLSPolicies, svc.Namespace, svc.Name, portName)
	if p == nil {
		return svc, nil
	}
	for _, r := range p.Spec.Validation.CACertificateRefs {
		switch r.Kind { // a CA object created later makes the policy apply
		case "ConfigMap":
			// The policy's own edge tells the cache to keep the ConfigMap's data though it
			// has no label (store.Payloads, manager's payloadReferenced).
			b.refer(svc, gvkService, ref(gvkConfigMap, p.Namespace, string(r.Name)))
			b.refer(p, gvkBackendTLSPolicy, ref(gvkConfigMap, p.Namespace, string(r.Name)))
		case "Secret":
			b.refer(svc, gvkService, ref(gvkSecret, p.Namespace, string(r.Name)))
		}
	}
	if v := gatewayapi.JudgeBackendTLSPolicy(p, b.snap.BackendTLSPolicies, gatewayapi.CAObjects(b.snap.ConfigMaps, b.snap.Secrets)); !v.Applies() {
		b.problem(p, gvkBackendTLSPolicy, "", "BackendTLSPolicy not applied to Service %s (%s): %s", svc.Name, v.Accepted.Reason, v.Accepted.Message)
		return svc, p
	}
	out := svc.DeepCopy()
	out.Annotations = maps.Clone(svc.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[annTLSVerify] = "true"
	out.Annotations[annHostHeader] = string(p.Spec.Validation.Hostname)
	out.Annotations[annProtocol] = "https"
	var names []string
	for _, r := range p.Spec.Validation.CACertificateRefs {
		names = append(names, string(r.Name))
		if r.Kind == "ConfigMap" {
			if b.policyCAs == nil {
				b.policyCAs = map[string]bool{}
			}
			b.policyCAs[p.Namespace+"/"+string(r.Name)] = true
		}
	}
	if existing := out.Annotations[annCACertConfigMap]; existing != "" {
		names = append([]string{existing}, names...)
	}
	out.Annotations[annCACertConfigMap] = strings.Join(names, ",")
	if v, ok := p.Spec.Options["tls-verify-depth"]; ok {
		if depth, err := strconv.Atoi(string(v)); err == nil && depth >= 0 {
			out.Annotations[annTLSVerifyDepth] = strconv.Itoa(depth)
		}
	}
	return out, nil
}

// httpRouteBackends are the Services (ns/name) that the HTTPRoutes naming one of our Gateways
// as parent name as backends: the Services whose BackendTLSPolicy has ancestors in KIC's
// sense. Computed once per translation.
func (b *builder) httpRouteBackends() map[string]bool {
	if b.routeBackends != nil {
		return b.routeBackends
	}
	b.routeBackends = map[string]bool{}
	for _, hr := range b.snap.HTTPRoutes {
		if hr == nil || b.gw.Route(gatewayapi.KindHTTPRoute, hr) == nil {
			continue
		}
		for _, key := range gatewayapi.HTTPRouteServiceBackends(hr) {
			b.routeBackends[key] = true
		}
	}
	return b.routeBackends
}

// backendTLSHost makes the routes of a Gateway API Kong service whose one backend has an
// applied BackendTLSPolicy send the policy's hostname as SNI. Kong's SNI, and the name it
// verifies, is its upstream Host ($upstream_host, nginx's proxy_ssl_name), which KIC's
// routes (preserve_host true) take from the client. Without preserve_host,
// balancer.set_host_header would make it the upstream's host_header with the target's port
// when it is not 443 ("secure.internal:8443"), which the backend then sees as Host. So the
// routes keep preserve_host and get request-transformer's replace.headers host:<hostname>,
// which sets $upstream_host to exactly the hostname (its transform_headers, and the PDK's
// set_header("host")): SNI, verified name and the Host the backend sees are the policy's
// hostname (docs/gateway-api.md). A route whose URLRewrite filter sets the hostname keeps
// it: Kong sends that as SNI too, reported. A rule with several backends gets no Service's
// annotations (populateGatewayService), so no policy applies to it: reported on the route
// for each backend a policy targets, rather than silently sending plain HTTP.
func (b *builder) backendTLSHost(ks *kongService, resolved []*corev1.Service, ports []*corev1.ServicePort) {
	if len(resolved) == 1 {
		bk := b.backingService(ks)
		if bk == nil || bk.gvk != gvkService || bk.svc == bk.owner { // a copy when the policy applied
			return
		}
		host := bk.svc.Annotations[annHostHeader]
		for _, r := range ks.routes {
			if rewritten := setRequestHost(r.FRoute, host); rewritten != "" {
				b.problem(ks.gateway.route, ks.gateway.gvk, ks.gateway.field,
					"the URLRewrite hostname %s is what Kong sends as SNI and verifies, not the BackendTLSPolicy hostname %s of Service %s/%s", rewritten, host, bk.svc.Namespace, bk.svc.Name)
			}
		}
		return
	}
	for i, svc := range resolved {
		if applied, _ := b.withBackendTLSPolicy(svc, ports[i].Name); applied != svc {
			b.problem(ks.gateway.route, ks.gateway.gvk, ks.gateway.field,
				"the BackendTLSPolicy of Service %s/%s does not apply to a rule with several backends (one Kong service, one upstream); give the Service a rule of its own", svc.Namespace, svc.Name)
		}
	}
}

// setRequestHost makes route r's request-transformer replace the Host with host, adding the
// plugin when r has none; when its request-transformer already replaces the Host (a
// URLRewrite hostname), it is left alone and that hostname returned.
func setRequestHost(r *file.FRoute, host string) (rewritten string) {
	entry := "host:" + host
	for _, p := range r.Plugins {
		if p.Name == nil || *p.Name != "request-transformer" {
			continue
		}
		replace, _ := p.Config["replace"].(map[string]any)
		headers, _ := replace["headers"].([]string)
		for _, h := range headers {
			if name, value, _ := strings.Cut(h, ":"); strings.EqualFold(name, "host") {
				return value
			}
		}
		// A copy: the configuration may be shared with other routes of the rule.
		replace = maps.Clone(replace)
		if replace == nil {
			replace = map[string]any{}
		}
		replace["headers"] = append(slices.Clone(headers), entry)
		p.Config = maps.Clone(p.Config)
		p.Config["replace"] = replace
		return ""
	}
	r.Plugins = append(r.Plugins, &file.FPlugin{Plugin: kong.Plugin{Name: kong.String("request-transformer"),
		Config: kong.Configuration{"replace": map[string]any{"headers": []string{entry}}}, Tags: r.Tags}})
	return ""
}
