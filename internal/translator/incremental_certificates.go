package translator

import (
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
)

// takeCertificateSecrets takes out of changed (changedSecrets') the Secrets that only
// Ingresses and TCPIngresses read, through their spec.tls, and returns them for
// spliceCertificates; the others stay for spliceConsumers, which refuses what it does not
// know. A CA certificate's Secret (labelled) stays, and so does one that a Gateway
// listener (whose ResolvedRefs condition reads it), a Service's client certificate
// annotation (its Kong service names the certificate), a plugin or a KongConsumer also reads.
func takeCertificateSecrets(g *Graph, changed map[nsName]bool) map[nsName]struct{} {
	var out map[nsName]struct{}
	for k, caCert := range changed {
		if caCert {
			continue
		}
		from := g.ReferredBy(ref(gvkSecret, k.ns, k.name))
		if len(from) == 0 {
			continue
		}
		tlsOnly := true
		for _, f := range from {
			if !(f.Kind == gvkIngress.Kind && f.Group == gvkIngress.Group) && !(f.Kind == gvkTCPIngress.Kind && f.Group == gvkTCPIngress.Group) {
				tlsOnly = false
				break
			}
		}
		if !tlsOnly {
			continue
		}
		if out == nil {
			out = map[nsName]struct{}{}
		}
		out[k] = struct{}{}
		delete(changed, k)
	}
	return out
}

// spliceCertificates is Incremental's splice of TLS Secret changes (issue #13 item 2:
// cert-manager rotates a Secret's certificate and key, under the same name): the Kong
// certificate each changed Secret made is made again from its new version and put where the
// old one was, with the same SNIs; every other certificate is res's, the same pointer, so
// that a Renderer reuses its bytes. secrets are the changed Secrets that only Ingresses and
// TCPIngresses read (takeCertificateSecrets), previous their versions before, now their
// versions after.
//
// Which host each Secret serves is decided by the Ingresses alone (tls claims hosts in age
// order whatever the Secrets hold), and where a certificate stands by the first Secret of its
// pair in that order. So a rotation is local exactly when the certificate was one Secret's and
// stays one Secret's, both versions valid; anything else is a full Build (why says why):
//   - the Secret exists before and after, and both versions hold a valid key pair (a Secret
//     that appears, goes or turns valid or invalid adds or drops a certificate and problems on
//     its Ingresses);
//   - its previous certificate is in res (ID from its UID, the old pair), made of it alone
//     (sharedCertificates: Secrets of one pair make one certificate, the oldest one's ID);
//   - its new pair is no other certificate's (it would join that one), and its new ID no
//     other certificate's;
//   - no problem is reported on it, before (res) or after (its tags: konghq.com/tags).
//
// The problems and the graph do not change: both versions are valid, and the edges are the
// Ingresses' (to the Secret's name).
func spliceCertificates(res Result, secrets map[nsName]struct{}, previous map[nsName]*corev1.Secret, now func(nsName) *corev1.Secret) (Result, string) {
	for _, p := range res.Problems {
		n := nodeOf(p.Object)
		if n.isKind("", gvkSecret.Kind) {
			if _, in := secrets[nsName{p.Object.Namespace, p.Object.Name}]; in {
				return Result{}, "a problem is reported on a TLS Secret of the change"
			}
		}
	}
	certs := res.State.Certificates
	copied := false
	tags := &builder{} // entityTags' cache and problems only
	for k := range secrets {
		old, secret := previous[k], now(k)
		if old == nil || secret == nil {
			return Result{}, "a TLS Secret was added or deleted"
		}
		oldCert, oldKey, wasValid := certificatePair(old)
		cert, key, valid := certificatePair(secret)
		if !wasValid || !valid {
			return Result{}, "a TLS Secret of the change is not a valid certificate"
		}
		oldID, id := certID(old), certID(secret)
		at := -1
		for i, fc := range certs {
			switch {
			case str(fc.ID) == oldID && str(fc.Cert) == oldCert && str(fc.Key) == oldKey:
				if _, dual := res.State.CertificateAlts[oldID]; dual {
					return Result{}, "a TLS Secret of the change is a listener's certificate pair"
				}
				at = i
			case sameIdentity(res, fc, cert, key):
				return Result{}, "a TLS Secret of the change holds another certificate's pair"
			case id != oldID && str(fc.ID) == id:
				return Result{}, "a TLS Secret of the change has another certificate's ID"
			}
		}
		if at < 0 {
			return Result{}, "a TLS Secret of the change made no certificate of its own"
		}
		fc := certs[at]
		if _, shared := res.parts.sharedCertificates[fc]; shared {
			return Result{}, "a TLS Secret of the change shares its certificate"
		}
		nfc := &file.FCertificate{
			ID:   kong.String(id),
			Cert: kong.String(cert),
			Key:  kong.String(key),
			Tags: tags.entityTags(secret, gvkSecret),
		}
		if len(tags.problems) > 0 {
			return Result{}, "a TLS Secret of the change has a problem"
		}
		if fc.SNIs != nil {
			nfc.SNIs = make([]kong.SNI, len(fc.SNIs))
			for i, sni := range fc.SNIs {
				nfc.SNIs[i] = kong.SNI{Name: sni.Name, Certificate: &kong.Certificate{ID: kong.String(id)}}
			}
		}
		if !copied {
			certs, copied = append([]*file.FCertificate(nil), certs...), true
		}
		certs[at] = nfc
	}
	state := *res.State
	state.Certificates = certs
	res.State = &state
	return res, ""
}

// sameIdentity says whether the pair cert, key would join fc in tls (byPair): fc's own pair,
// or, for a listener's certificate with cert_alt, its pairs together.
func sameIdentity(res Result, fc *file.FCertificate, cert, key string) bool {
	alt, dual := res.State.CertificateAlts[str(fc.ID)]
	if !dual {
		return str(fc.Cert) == cert && str(fc.Key) == key
	}
	return pairKey(cert, key) == strings.Join([]string{str(fc.Cert), str(fc.Key), alt.Cert, alt.Key}, "\x00")
}
