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
	cs := certificateSplice{res: res, certs: res.State.Certificates, order: res.parts.certificates.order, drop: map[Problem]struct{}{}}
	for k := range secrets {
		if why := cs.secret(k, previous[k], now(k)); why != "" {
			return Result{}, why
		}
	}
	problems, why := cs.problems(secrets)
	if why != "" {
		return Result{}, why
	}
	state := *res.State
	state.Certificates = cs.certs
	if len(cs.certs) == 0 {
		state.Certificates = nil // as Build leaves it
	}
	p := *res.parts
	p.certificates.order = cs.order
	res.State, res.parts = &state, &p
	if len(cs.add) > 0 || len(problems) != len(res.Problems) {
		res.Problems = sortProblems(append(problems, cs.add...))
	}
	return res, ""
}

// certificateSplice is spliceCertificates under way: res's certificates and their order,
// copied once one changes, and the problems about the changed Secrets before (drop) and
// after (add).
type certificateSplice struct {
	res    Result
	certs  []*file.FCertificate
	order  []int
	copied bool
	drop   map[Problem]struct{}
	add    []Problem
}

// secret makes again the certificate of the Secret k, old before and secret now (nil:
// absent), in its place; it says why it cannot ("" when it can).
func (cs *certificateSplice) secret(k nsName, old, secret *corev1.Secret) string {
	parts := cs.res.parts.certificates
	ts := parts.secrets[k]
	if ts == nil {
		return "a TLS Secret of the change makes no certificate of its own"
	}
	before, oldCert, oldKey, oldValid := certificateProblems(ts, old)
	after, cert, key, valid := certificateProblems(ts, secret)
	at := -1
	if oldValid {
		for i, fc := range cs.certs {
			if str(fc.ID) == certID(old) && str(fc.Cert) == oldCert && str(fc.Key) == oldKey {
				at = i
				break
			}
		}
		if at < 0 {
			return "a TLS Secret of the change made no certificate of its own"
		}
		if _, dual := cs.res.State.CertificateAlts[str(cs.certs[at].ID)]; dual {
			return "a TLS Secret of the change is a listener's certificate pair"
		}
		if _, shared := parts.shared[cs.certs[at]]; shared {
			return "a TLS Secret of the change shares its certificate"
		}
	}
	for _, p := range before {
		cs.drop[p] = struct{}{}
	}
	cs.add = append(cs.add, after...)
	if !cs.copied {
		cs.certs, cs.order, cs.copied = slices.Clone(cs.certs), slices.Clone(cs.order), true
	}
	if !valid {
		if at >= 0 {
			cs.certs, cs.order = slices.Delete(cs.certs, at, at+1), slices.Delete(cs.order, at, at+1)
		}
		return ""
	}
	id := certID(secret)
	for i, fc := range cs.certs {
		if i == at {
			continue
		}
		if sameIdentity(cs.res, fc, cert, key) {
			return "a TLS Secret of the change holds another certificate's pair"
		}
		if str(fc.ID) == id {
			return "a TLS Secret of the change has another certificate's ID"
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
		cs.certs[at] = nfc
		return ""
	}
	at, _ = slices.BinarySearch(cs.order, ts.order)
	cs.certs, cs.order = slices.Insert(cs.certs, at, nfc), slices.Insert(cs.order, at, ts.order)
	return ""
}

// problems are res's problems without those about the changed Secrets before, which give way
// to those after (cs.add); it says why not when res has another about them, or lacks one.
func (cs *certificateSplice) problems(secrets map[nsName]bool) ([]Problem, string) {
	problems := make([]Problem, 0, len(cs.res.Problems)+len(cs.add))
	for _, p := range cs.res.Problems {
		if _, about := cs.drop[p]; about {
			delete(cs.drop, p)
			continue
		}
		if n := objgraph.NodeOf(p.Object); n.IsKind("", gvkSecret.Kind) && hasKey(secrets, nsName{p.Object.Namespace, p.Object.Name}) {
			return nil, "another problem is reported on a TLS Secret of the change"
		}
		problems = append(problems, p)
	}
	if len(cs.drop) > 0 {
		return nil, "a problem about a TLS Secret of the change was not reported"
	}
	return problems, ""
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
