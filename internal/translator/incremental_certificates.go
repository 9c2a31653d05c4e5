package translator

import (
	"slices"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// readsTLSSecrets: Ingresses and TCPIngresses read Secrets through their spec.tls only. A
// Secret that a Gateway listener (whose ResolvedRefs condition reads it), a Service's client
// certificate annotation (its Kong service names the certificate), a plugin or a KongConsumer
// also reads is not spliceCertificates' (takeSecretsReadOnlyBy).
func readsTLSSecrets(r kongstate.ObjectRef) bool {
	return r.Group == gvkIngress.Group && r.Kind == gvkIngress.Kind || r.Group == gvkTCPIngress.Group && r.Kind == gvkTCPIngress.Kind
}

// spliceCertificates is Incremental's splice of TLS Secret changes (issue #13 item 2:
// cert-manager rotates a Secret's certificate and key, under the same name, or creates the
// Secret of a new Certificate): the Kong certificate each changed Secret makes is made again
// from its new version, where the Secret's place among those tls reads puts it, with the
// hosts it won as SNIs, and the problems about it (on the Secret and on the objects naming
// it: missing, not a key pair, its tags) are made again; every other certificate is res's,
// the same pointer, so that a Renderer reuses its bytes. secrets are the changed Secrets that
// only Ingresses and TCPIngresses read (takeSecretsReadOnlyBy, readsTLSSecrets), previous their versions
// before (nil: created), now their versions after (nil: deleted).
//
// Which hosts a Secret serves is decided by the Ingresses alone (tls claims hosts in age
// order whatever the Secrets hold), and where a certificate stands by the first Secret of its
// pair in that order. So a Secret's change is local exactly when its certificate, before and
// after, is its own; anything else is a full Build (why says why):
//   - the Secret was one tls read for one certificate (certificateParts.secrets);
//   - before, it made a certificate of its own (certificateParts.shared: Secrets of one pair
//     make one certificate, the oldest one's ID), or none (missing or not a key pair), and
//     the problems about it are those its previous version makes;
//   - after, its pair is no other certificate's (it would join that one), and its ID no
//     other certificate's.
//
// The graph does not change: its edges are the Ingresses' (to the Secret's name).
func spliceCertificates(res Result, secrets map[nsName]bool, previous map[nsName]*corev1.Secret, now func(nsName) *corev1.Secret) (Result, string) {
	parts := res.parts.certificates
	certs, order := res.State.Certificates, parts.order
	copied := false
	drop := map[Problem]struct{}{} // the problems about the changed Secrets before
	var add []Problem              // and after
	for k := range secrets {
		ts := parts.secrets[k]
		if ts == nil {
			return Result{}, "a TLS Secret of the change makes no certificate of its own"
		}
		old, secret := previous[k], now(k)
		before, oldCert, oldKey, oldValid := certificateProblems(ts, old)
		after, cert, key, valid := certificateProblems(ts, secret)
		at := -1
		if oldValid {
			for i, fc := range certs {
				if str(fc.ID) == certID(old) && str(fc.Cert) == oldCert && str(fc.Key) == oldKey {
					at = i
					break
				}
			}
			if at < 0 {
				return Result{}, "a TLS Secret of the change made no certificate of its own"
			}
			if _, dual := res.State.CertificateAlts[str(certs[at].ID)]; dual {
				return Result{}, "a TLS Secret of the change is a listener's certificate pair"
			}
			if _, shared := parts.shared[certs[at]]; shared {
				return Result{}, "a TLS Secret of the change shares its certificate"
			}
		}
		for _, p := range before {
			drop[p] = struct{}{}
		}
		add = append(add, after...)
		if !copied {
			certs, order, copied = append([]*file.FCertificate(nil), certs...), append([]int(nil), order...), true
		}
		if !valid {
			if at >= 0 {
				certs, order = append(certs[:at], certs[at+1:]...), append(order[:at], order[at+1:]...)
			}
			continue
		}
		id := certID(secret)
		for i, fc := range certs {
			if i == at {
				continue
			}
			if sameIdentity(res, fc, cert, key) {
				return Result{}, "a TLS Secret of the change holds another certificate's pair"
			}
			if str(fc.ID) == id {
				return Result{}, "a TLS Secret of the change has another certificate's ID"
			}
		}
		tags := &builder{} // entityTags' cache only: its problems are in after
		nfc := &file.FCertificate{ID: kong.String(id), Cert: kong.String(cert), Key: kong.String(key), Tags: tags.entityTags(secret, gvkSecret)}
		if len(ts.hosts) > 0 {
			nfc.SNIs = make([]kong.SNI, len(ts.hosts))
			for i, h := range ts.hosts {
				nfc.SNIs[i] = kong.SNI{Name: kong.String(h), Certificate: &kong.Certificate{ID: kong.String(id)}}
			}
		}
		if at >= 0 {
			certs[at] = nfc
			continue
		}
		at, _ = slices.BinarySearch(order, ts.order)
		certs, order = slices.Insert(certs, at, nfc), slices.Insert(order, at, ts.order)
	}
	// The problems: those about the changed Secrets before, and no other about them, give way
	// to those after.
	problems := make([]Problem, 0, len(res.Problems)+len(add))
	for _, p := range res.Problems {
		if _, about := drop[p]; about {
			delete(drop, p)
			continue
		}
		if n := objgraph.NodeOf(p.Object); n.IsKind("", gvkSecret.Kind) && hasKey(secrets, nsName{p.Object.Namespace, p.Object.Name}) {
			return Result{}, "another problem is reported on a TLS Secret of the change"
		}
		problems = append(problems, p)
	}
	if len(drop) > 0 {
		return Result{}, "a problem about a TLS Secret of the change was not reported"
	}
	state := *res.State
	state.Certificates = certs
	if len(certs) == 0 {
		state.Certificates = nil // as Build leaves it
	}
	p := *res.parts
	p.certificates.order = order
	res.State, res.parts = &state, &p
	if len(add) > 0 || len(problems) != len(res.Problems) {
		res.Problems = sortProblems(append(problems, add...))
	}
	return res, ""
}

// certificateProblems are the problems tls reports about ts's Secret s (nil: missing), and
// its pair when it is valid (its tags' problems aside: entityTags reports those). The
// tags' problems of s before are among the problems when s was valid: an old version's are
// made again here.
func certificateProblems(ts *tlsSecret, s *corev1.Secret) (problems []Problem, cert, key string, valid bool) {
	cert, key, valid, problems = secretCertificate(ts, s) // the full Build's own checks
	if !valid {
		return problems, "", "", false
	}
	tags := &builder{}
	tags.entityTags(s, gvkSecret)
	return tags.problems, cert, key, true
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
