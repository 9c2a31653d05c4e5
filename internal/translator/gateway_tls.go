package translator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// listenerCert is the certificate a Gateway listener (or a ListenerSet's) terminates TLS
// with, and the SNI it serves it for.
type listenerCert struct {
	owner           client.Object // the Gateway or ListenerSet
	gvk             schema.GroupVersionKind
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
// Every Secret named is in the graph, so that its change wakes translation. The listeners
// of the Gateways' attached ListenerSets follow the Gateway's own, in the spec's
// precedence, with the ListenerSet as their owner (its ReferenceGrants, its problems); a
// conflicted one gets no certificate.
func (b *builder) gatewayListenerCerts() []listenerCert {
	var out []listenerCert
	for _, g := range b.gw.Gateways {
		for i, l := range g.Gateway.Spec.Listeners {
			out = b.listenerCert(out, g.Gateway, gvkGateway, i, &l)
		}
		for _, s := range g.ListenerSets {
			for i, l := range s.Listeners {
				if l.Usable() { // a usable listener's set is attached
					out = b.listenerCert(out, s.ListenerSet, gvkListenerSet, i, l.Listener)
				} else {
					// Left out, but its ResolvedRefs condition reads its Secrets as a Gateway
					// listener's (kept whole in the cache: store.SecretPayloads).
					b.referCertificateSecrets(s.ListenerSet, gvkListenerSet, l.Listener)
				}
			}
		}
	}
	return out
}

// referCertificateSecrets puts every Secret listener l of owner names in the graph: the
// listener's ResolvedRefs condition reads each, even on a listener that gets no certificate
// (one left out of its Gateway, a conflicted ListenerSet listener), so each is kept whole in
// the cache and its change wakes translation.
func (b *builder) referCertificateSecrets(owner client.Object, gvk schema.GroupVersionKind, l *gatewayv1.Listener) {
	if l.TLS == nil {
		return
	}
	for _, cr := range l.TLS.CertificateRefs {
		if ns, isSecret := gatewayapi.CertificateSecretRef(owner.GetNamespace(), cr); isSecret {
			b.refer(owner, gvk, ref(gvkSecret, ns, string(cr.Name)))
		}
	}
}

// listenerCert appends to out the certificate of listener l, spec.listeners[i] of owner (a
// Gateway or a ListenerSet, of kind gvk), if it has a usable one (gatewayListenerCerts).
func (b *builder) listenerCert(out []listenerCert, owner client.Object, gvk schema.GroupVersionKind, i int, l *gatewayv1.Listener) []listenerCert {
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		return out
	}
	if l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModePassthrough {
		return out
	}
	field := fmt.Sprintf("spec.listeners[%d].tls.certificateRefs", i)
	b.referCertificateSecrets(owner, gvk, l)
	if len(l.TLS.CertificateRefs) > gatewayapi.MaxCertificateRefs {
		b.problem(owner, gvk, field, "listener %q has more than two certificateRefs, at most two are supported; the listener gets no certificate", l.Name)
		return out
	}
	lc := listenerCert{owner: owner, gvk: gvk, field: field, sni: "*"}
	if l.Hostname != nil && *l.Hostname != "" {
		lc.sni = string(*l.Hostname)
	}
	for k, cr := range l.TLS.CertificateRefs {
		crField := fmt.Sprintf("%s[%d]", field, k)
		ns, isSecret := gatewayapi.CertificateSecretRef(owner.GetNamespace(), cr)
		if !isSecret {
			b.problem(owner, gvk, crField, "only core Secrets are certificates; the listener gets no certificate")
			return out
		}
		if !b.granted(owner, gvk, "", "Secret", ns, string(cr.Name)) {
			b.problem(owner, gvk, crField, "Secret %s/%s is not permitted by any ReferenceGrant; the listener gets no certificate", ns, cr.Name)
			return out
		}
		if k == 0 {
			lc.namespace, lc.name = ns, string(cr.Name)
		} else {
			lc.altNamespace, lc.altName = ns, string(cr.Name)
		}
	}
	if lc.altName == "" {
		lc.field += "[0]"
	}
	return append(out, lc)
}
