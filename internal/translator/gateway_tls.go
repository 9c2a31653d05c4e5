package translator

import (
	"fmt"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// listenerCert is the certificate a Gateway listener terminates TLS with, and the SNI it
// serves it for.
type listenerCert struct {
	gateway         *gatewayv1.Gateway
	field           string // of the certificateRefs, for problems
	namespace, name string // of the Secret
	// altNamespace and altName are the second Secret of a listener with two
	// certificateRefs ("" for one): one RSA and one ECDSA pair make one Kong certificate,
	// the RSA pair in cert/key and the ECDSA pair in cert_alt/key_alt (dualCertificate).
	altNamespace, altName string
	sni                   string
}

// gatewayListenerCerts lists the certificates of our Gateways' listeners as KIC's
// getGatewayCerts finds them (docs/kong-facts.md "Gateway listener certificates"): the
// Secrets a listener's tls.certificateRefs name (one, or two: an RSA and an ECDSA pair), for
// the listener's hostname as SNI, or "*" (Kong's default certificate) without one. A
// listener naming more than two Secrets, a reference to something other than a core
// Secret, or one to another namespace that no ReferenceGrant permits is left out and
// reported; the listener's ResolvedRefs condition says the same
// (gatewayapi.ResolveCertificateRefs). A missing or invalid Secret, and two pairs that do
// not make one certificate, are reported by the certificate step (tls), as for Ingresses.
// Every Secret named is in the graph, so that its change wakes translation.
func (b *builder) gatewayListenerCerts() []listenerCert {
	var out []listenerCert
	for _, g := range b.gw.Gateways {
		gw := g.Gateway
		for i, l := range gw.Spec.Listeners {
			if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
				continue
			}
			if l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModePassthrough {
				continue
			}
			field := fmt.Sprintf("spec.listeners[%d].tls.certificateRefs", i)
			// Every Secret named is read by the listener's ResolvedRefs condition, even on a
			// listener that gets no certificate: each is in the graph.
			for _, cr := range l.TLS.CertificateRefs {
				if ns, isSecret := gatewayapi.CertificateSecretRef(gw, cr); isSecret {
					b.refer(gw, gvkGateway, ref(gvkSecret, ns, string(cr.Name)))
				}
			}
			if len(l.TLS.CertificateRefs) > gatewayapi.MaxCertificateRefs {
				b.problem(gw, gvkGateway, field, "listener %q has more than two certificateRefs, at most two are supported; the listener gets no certificate", l.Name)
				continue
			}
			lc := listenerCert{gateway: gw, field: field, sni: "*"}
			if l.Hostname != nil && *l.Hostname != "" {
				lc.sni = string(*l.Hostname)
			}
			usable := true
			for k, cr := range l.TLS.CertificateRefs {
				crField := fmt.Sprintf("%s[%d]", field, k)
				ns, isSecret := gatewayapi.CertificateSecretRef(gw, cr)
				if !isSecret {
					b.problem(gw, gvkGateway, crField, "only core Secrets are certificates; the listener gets no certificate")
					usable = false
					break
				}
				if !b.granted(gw, gvkGateway, "", "Secret", ns, string(cr.Name)) {
					b.problem(gw, gvkGateway, crField, "Secret %s/%s is not permitted by any ReferenceGrant; the listener gets no certificate", ns, cr.Name)
					usable = false
					break
				}
				if k == 0 {
					lc.namespace, lc.name = ns, string(cr.Name)
				} else {
					lc.altNamespace, lc.altName = ns, string(cr.Name)
				}
			}
			if !usable {
				continue
			}
			if lc.altName == "" {
				lc.field += "[0]"
			}
			out = append(out, lc)
		}
	}
	return out
}
