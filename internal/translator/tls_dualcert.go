package translator

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"

	"github.com/konductor/konductor/internal/kongstate"
)

// dualCertificate is the one Kong certificate of a listener with two certificateRefs (ts,
// its Secrets ts.key's first half and ts.alt), with KIC's rules (getGatewayCerts): both
// Secrets exist and hold a valid pair; one certificate is RSA and the other ECDSA (Kong
// serves whichever the client supports); both name the same subject CN and DNS SANs, so
// that SNI selection stays unambiguous. The RSA pair goes to cert/key, the ECDSA pair to
// cert_alt/key_alt, and the certificate is the RSA Secret's (its UID as ID, its tags). It
// returns the certificate, its alternative pair, the RSA Secret, and the identity two listeners with the same
// pairs share (one certificate for both); nil when the pairs do not make one, reported on
// the listeners.
func (b *builder) dualCertificate(ts *tlsSecret) (*file.FCertificate, kongstate.CertificateAlt, *corev1.Secret, string) {
	type pair struct {
		secret    *corev1.Secret
		cert, key string
		parsed    *x509.Certificate
	}
	report := func(format string, args ...any) {
		for _, r := range ts.referrers {
			b.problem(r.obj, r.gvk, r.field, format, args...)
		}
	}
	var pairs [2]pair
	for i, key := range []string{ts.namespace + "/" + ts.name, ts.alt} {
		secret := b.secrets[key]
		// Each Secret is read, and reported, as the one Secret of an Ingress's TLS is.
		cert, pk, ok, problems := secretCertificate(&tlsSecret{key: key, referrers: ts.referrers}, secret)
		if !ok {
			b.problems = append(b.problems, problems...)
			return nil, kongstate.CertificateAlt{}, nil, ""
		}
		parsed, err := leafCertificate(cert, pk)
		if err != nil {
			report("failed to detect certificate algorithm of Secret %s", key)
			return nil, kongstate.CertificateAlt{}, nil, ""
		}
		pairs[i] = pair{secret, cert, pk, parsed}
	}
	rsa, ecdsa := pairs[0], pairs[1]
	if rsa.parsed.PublicKeyAlgorithm == x509.ECDSA {
		rsa, ecdsa = ecdsa, rsa
	}
	switch {
	case !slices.Contains([]x509.PublicKeyAlgorithm{x509.RSA, x509.ECDSA}, pairs[0].parsed.PublicKeyAlgorithm) ||
		!slices.Contains([]x509.PublicKeyAlgorithm{x509.RSA, x509.ECDSA}, pairs[1].parsed.PublicKeyAlgorithm):
		report("certificateRef with unsupported algorithm; only RSA and ECDSA are supported; the listener gets no certificate")
		return nil, kongstate.CertificateAlt{}, nil, ""
	case pairs[0].parsed.PublicKeyAlgorithm == pairs[1].parsed.PublicKeyAlgorithm:
		report("two certificateRefs with the same algorithm; one must be RSA and one ECDSA; the listener gets no certificate")
		return nil, kongstate.CertificateAlt{}, nil, ""
	}
	if msg := sameNames(rsa.parsed, ecdsa.parsed); msg != "" {
		report("certificateRefs with mismatched CN/SANs: %s; the listener gets no certificate", msg)
		return nil, kongstate.CertificateAlt{}, nil, ""
	}
	fc := &file.FCertificate{
		ID:   kong.String(certID(rsa.secret)),
		Cert: kong.String(rsa.cert),
		Key:  kong.String(rsa.key),
		Tags: b.entityTags(rsa.secret, gvkSecret),
	}
	return fc, kongstate.CertificateAlt{Cert: ecdsa.cert, Key: ecdsa.key}, rsa.secret, strings.Join([]string{rsa.cert, rsa.key, ecdsa.cert, ecdsa.key}, "\x00")
}

// leafCertificate is the first certificate of a pair certificatePair found valid.
func leafCertificate(cert, key string) (*x509.Certificate, error) {
	kp, err := tls.X509KeyPair([]byte(cert), []byte(key))
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(kp.Certificate[0])
}

// sameNames says how two certificates' subject CN or DNS SANs (in any order) differ, "" when
// they do not (KIC's verifyCertSANsMatch).
func sameNames(a, b *x509.Certificate) string {
	if a.Subject.CommonName != b.Subject.CommonName {
		return "CN " + quote(a.Subject.CommonName) + " != " + quote(b.Subject.CommonName)
	}
	da, db := slices.Clone(a.DNSNames), slices.Clone(b.DNSNames)
	slices.Sort(da)
	slices.Sort(db)
	if !slices.Equal(da, db) {
		return "DNS SANs [" + strings.Join(da, " ") + "] != [" + strings.Join(db, " ") + "]"
	}
	return ""
}

func quote(s string) string { return `"` + s + `"` }
