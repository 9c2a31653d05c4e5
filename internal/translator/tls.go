package translator

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
)

// derivedCertNamespace keys certificate IDs of Secrets that have no UID (manifests given to
// `konductor translate`; the API server always sets one). KIC would send an empty ID.
var derivedCertNamespace = uuid.MustParse("0b9f4d8e-7b8a-4c61-9d2e-6a0f3c1d5e72")

// tlsSecret is one Secret referenced by Ingress TLS, with the hosts it won.
type tlsSecret struct {
	key       string // ns/name
	namespace string
	name      string
	hosts     []string
	referrers []referrer
}

// tls turns Ingress spec.tls into certificates and SNIs (kic-compat.md §7.1, §7.2). Hosts
// are claimed globally in Ingress age order: the first Secret to name a host gets it.
func (b *builder) tls() {
	claimed := map[string]bool{}
	bySecret := map[string]*tlsSecret{}
	var order []*tlsSecret
	for _, ing := range b.ingresses {
		for k, t := range ing.Spec.TLS {
			if len(t.Hosts) == 0 || t.SecretName == "" {
				continue
			}
			key := ing.Namespace + "/" + t.SecretName
			ts := bySecret[key]
			if ts == nil {
				ts = &tlsSecret{key: key, namespace: ing.Namespace, name: t.SecretName}
				bySecret[key] = ts
				order = append(order, ts)
			}
			ts.addReferrer(ing, fmt.Sprintf("spec.tls[%d].secretName", k))
			for h, host := range t.Hosts {
				if e := checkSNI(host); e != "" {
					b.problem(ing, gvkIngress, fmt.Sprintf("spec.tls[%d].hosts[%d]", k, h), "%s; the host gets no certificate", e)
					continue
				}
				if claimed[host] {
					continue
				}
				claimed[host] = true
				ts.hosts = append(ts.hosts, host)
			}
		}
	}

	// Secrets with an identical cert and key collapse into one certificate.
	byPair := map[string]*file.FCertificate{}
	owner := map[string]*corev1.Secret{}
	var certs []*file.FCertificate
	for _, ts := range order {
		secret := b.secrets[ts.key]
		if secret == nil {
			for _, r := range ts.referrers {
				b.problem(r.ing, gvkIngress, r.field, "Failed to fetch the secret (%s)", ts.key)
			}
			continue
		}
		cert := strings.TrimSpace(string(secret.Data[corev1.TLSCertKey]))
		key := strings.TrimSpace(string(secret.Data[corev1.TLSPrivateKeyKey]))
		if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); cert == "" || key == "" || err != nil {
			for _, r := range ts.referrers {
				b.problem(r.ing, gvkIngress, r.field, "failed to construct certificate from secret")
			}
			b.problem(secret, gvkSecret, "data", "failed to construct certificate from secret")
			continue
		}
		pair := cert + "\x00" + key
		fc := byPair[pair]
		if fc == nil {
			fc = &file.FCertificate{
				ID:   kong.String(certID(secret)),
				Cert: kong.String(cert),
				Key:  kong.String(key),
				Tags: kong.StringSlice(b.tags(secret, gvkSecret)...),
			}
			byPair[pair] = fc
			owner[pair] = secret
			certs = append(certs, fc)
		} else if older(secret, owner[pair]) {
			fc.ID = kong.String(certID(secret))
			owner[pair] = secret
		}
		for _, h := range ts.hosts {
			fc.SNIs = append(fc.SNIs, kong.SNI{Name: kong.String(h)})
		}
	}
	for _, fc := range certs {
		for i := range fc.SNIs {
			fc.SNIs[i].Certificate = &kong.Certificate{ID: kong.String(*fc.ID)}
		}
		b.state.Certificates = append(b.state.Certificates, fc)
	}
}

func (ts *tlsSecret) addReferrer(ing *netv1.Ingress, field string) {
	for _, r := range ts.referrers {
		if r.ing == ing {
			return
		}
	}
	ts.referrers = append(ts.referrers, referrer{ing, field})
}

// certID is the Secret's UID (kic-compat.md §6), or a UUID derived from ns/name when the
// Secret has no UID or one Kong would not take as an ID.
func certID(s *corev1.Secret) string {
	if _, err := uuid.Parse(string(s.UID)); err == nil {
		return string(s.UID)
	}
	return uuid.NewSHA1(derivedCertNamespace, []byte(s.Namespace+"/"+s.Name)).String()
}

// older reports whether a is older than b: by creationTimestamp, then the smaller UID.
func older(a, b *corev1.Secret) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return certID(a) < certID(b)
}
