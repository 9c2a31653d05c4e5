package gatewayapi

import (
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// MaxCertificateRefs is how many certificateRefs a listener may name, as in KIC: one
// certificate, or an RSA and an ECDSA one for the same names (Kong's cert_alt/key_alt).
const MaxCertificateRefs = 2

// ResolveCertificateRefs resolves the TLS certificateRefs of listener l of owner (a Gateway,
// or a ListenerSet, of kind from), for the listener's ResolvedRefs condition, with KIC's
// rules: a reference to another namespace needs a ReferenceGrant from the owner (a
// Gateway's grants do not cover its ListenerSets, nor the other way: GEP-1713)
// (RefNotPermitted); only core Secrets are
// certificates, and the Secret must exist and hold a key pair tls.crt/tls.key
// (InvalidCertificateRef). The first failing reference decides; "" means all resolve (or
// the listener terminates no TLS). secret looks a Secret up, nil when absent.
func ResolveCertificateRefs(owner client.Object, from schema.GroupVersionKind, l *gatewayv1.Listener, secret func(ns, name string) *corev1.Secret,
	grants []*gatewayv1beta1.ReferenceGrant) (gatewayv1.ListenerConditionReason, string) {
	if l.TLS == nil || (l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModePassthrough) {
		return "", ""
	}
	for i, ref := range l.TLS.CertificateRefs {
		ns, isSecret := CertificateSecretRef(owner.GetNamespace(), ref)
		where := fmt.Sprintf("tls.certificateRefs[%d] %s/%s", i, ns, ref.Name)
		if !isSecret {
			return gatewayv1.ListenerReasonInvalidCertificateRef, where + ": only core Secrets are certificates"
		}
		if _, ok := GrantAllows(grants, from, owner.GetNamespace(), "", "Secret", ns, string(ref.Name)); !ok {
			return gatewayv1.ListenerReasonRefNotPermitted, where + ": no ReferenceGrant permits it"
		}
		s := secret(ns, string(ref.Name))
		if s == nil {
			return gatewayv1.ListenerReasonInvalidCertificateRef, where + ": Secret not found"
		}
		if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
			return gatewayv1.ListenerReasonInvalidCertificateRef, where + ": not a valid TLS key pair: " + err.Error()
		}
	}
	return "", ""
}

// CertificateSecretRef is the namespace of the Secret a listener's certificateRef names
// (ownerNS, its Gateway's or ListenerSet's, when it names none), and whether it names a core
// Secret at all.
func CertificateSecretRef(ownerNS string, ref gatewayv1.SecretObjectReference) (string, bool) {
	ns := ownerNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return ns, (ref.Group == nil || *ref.Group == "" || *ref.Group == "core") && (ref.Kind == nil || *ref.Kind == "Secret")
}
