package translator

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

// derivedCertNamespace keys certificate IDs of Secrets that have no UID (manifests given to
// `konductor translate`; the API server always sets one). KIC would send an empty ID.
var derivedCertNamespace = uuid.MustParse("0b9f4d8e-7b8a-4c61-9d2e-6a0f3c1d5e72")

const annClientCert = "konghq.com/client-cert"

// tlsProtocols are the service protocols with TLS towards the upstream, where a client
// certificate and CA certificates make sense (kic-compat.md §7.3).
var tlsProtocols = map[string]bool{"https": true, "grpcs": true, "tls": true, "wss": true}

// tlsSecret is one Secret referenced by Ingress TLS, with the hosts it won; or, with alt
// set, the two Secrets of a listener with an RSA and an ECDSA certificate.
type tlsSecret struct {
	key       string // ns/name, or ns/name+ns/name for two
	namespace string
	name      string
	alt       string // the second Secret's ns/name, "" for one
	order     int    // its place among the Secrets tls reads (certificates are in that order)
	hosts     []string
	referrers []referrer
}

// hostClaim is the first object that named a TLS host, and with which Secret.
type hostClaim struct {
	obj    client.Object
	gvk    schema.GroupVersionKind
	field  string
	secret string // ns/name
}

// tls turns Ingress spec.tls into certificates and SNIs (kic-compat.md §7.1, §7.2). Hosts
// are claimed globally in Ingress age order: the first Secret to name a host gets it.
func (b *builder) tls() {
	claimed := map[string]bool{}
	// Who took each host, for the report when another Secret asks for it (a host is
	// global in Kong: a tenant's older Ingress can take another's).
	claimer := map[string]hostClaim{}
	bySecret := map[string]*tlsSecret{}
	var order []*tlsSecret
	secretFor := func(ns, name string) *tlsSecret {
		key := ns + "/" + name
		ts := bySecret[key]
		if ts == nil {
			ts = &tlsSecret{key: key, namespace: ns, name: name, order: len(order)}
			bySecret[key] = ts
			order = append(order, ts)
		}
		return ts
	}
	secretPairFor := func(ns, name, altNS, altName string) *tlsSecret {
		ts := secretFor(ns, name+"+"+altNS+"/"+altName)
		ts.name, ts.alt = name, altNS+"/"+altName
		return ts
	}
	claim := func(obj client.Object, gvk schema.GroupVersionKind, k int, hosts []string, secretName string) {
		if len(hosts) == 0 || secretName == "" {
			return
		}
		b.refer(obj, gvk, ref(gvkSecret, obj.GetNamespace(), secretName))
		ts := secretFor(obj.GetNamespace(), secretName)
		ts.addReferrer(obj, gvk, fmt.Sprintf("spec.tls[%d].secretName", k))
		for h, host := range hosts {
			if e := checkSNI(host); e != "" {
				b.problem(obj, gvk, fmt.Sprintf("spec.tls[%d].hosts[%d]", k, h), "%s; the host gets no certificate", e)
				continue
			}
			field := fmt.Sprintf("spec.tls[%d].hosts[%d]", k, h)
			if claimed[host] {
				if first, ok := claimer[host]; ok && first.secret != ts.key {
					// Reported on both: the one that lost the host and the one that has it.
					b.problem(obj, gvk, field, "TLS host %q is already served with Secret %s's certificate, named by %s %s/%s (older); this Ingress's Secret %s does not get it",
						host, first.secret, first.gvk.Kind, first.obj.GetNamespace(), first.obj.GetName(), ts.key)
					b.problem(first.obj, first.gvk, first.field, "TLS host %q is also named with Secret %s by %s %s/%s; this object's Secret %s keeps it (older)",
						host, ts.key, gvk.Kind, obj.GetNamespace(), obj.GetName(), first.secret)
				}
				continue
			}
			claimed[host] = true
			claimer[host] = hostClaim{obj: obj, gvk: gvk, field: field, secret: ts.key}
			ts.hosts = append(ts.hosts, host)
		}
	}
	// Ingresses first, then TCPIngresses, as KIC merges its sources (kic-compat.md §2).
	for _, ing := range b.ingresses {
		for k, t := range ing.Spec.TLS {
			claim(ing, gvkIngress, k, t.Hosts, t.SecretName)
		}
	}
	for _, ti := range b.tcpIngresses {
		for k, t := range ti.Spec.TLS {
			claim(ti, gvkTCPIngress, k, t.Hosts, t.SecretName)
		}
	}
	// Then Gateway listeners: a host an Ingress claimed keeps the Ingress's certificate.
	for _, lc := range b.gatewayListenerCerts() {
		var ts *tlsSecret
		if lc.altName == "" {
			ts = secretFor(lc.namespace, lc.name)
		} else {
			ts = secretPairFor(lc.namespace, lc.name, lc.altNamespace, lc.altName)
		}
		ts.addReferrer(lc.gateway, gvkGateway, lc.field)
		if !claimed[lc.sni] {
			claimed[lc.sni] = true
			ts.hosts = append(ts.hosts, lc.sni)
		}
	}

	// Service client certificates (kic-compat.md §7.3): certificates without SNIs.
	clientCerts := map[string][]*kongService{} // Secret ns/name -> Kong services using it
	for _, n := range b.kongServiceNames() {
		ks := b.kongServices[n]
		bk := b.backingService(ks)
		if bk == nil || bk.svc.Annotations[annClientCert] == "" {
			continue
		}
		svc := bk.svc
		name := svc.Annotations[annClientCert]
		b.refer(svc, gvkService, ref(gvkSecret, svc.Namespace, name))
		if p := str(ks.svc.Protocol); !tlsProtocols[p] {
			b.problem(svc, gvkService, annField(annClientCert), "Client certificate requested for incompatible service protocol '%s'", p)
			continue
		}
		key := svc.Namespace + "/" + name
		ts := secretFor(svc.Namespace, name)
		ts.addReferrer(svc, gvkService, annField(annClientCert))
		clientCerts[key] = append(clientCerts[key], ks)
	}

	// Secrets with an identical cert and key collapse into one certificate.
	fcByKey := map[string]*file.FCertificate{}
	byPair := map[string]*file.FCertificate{}
	owner := map[string]*corev1.Secret{}
	var certs []*file.FCertificate
	var certOrder []int                         // of each of certs, the order of the Secret that made it first
	pairKeys := map[*file.FCertificate]string{} // certificates with cert_alt: the ns/name+ns/name their ID is from
	alts := map[*file.FCertificate]kongstate.CertificateAlt{}
	for _, ts := range order {
		if ts.alt != "" {
			fc, alt, secret, identity := b.dualCertificate(ts)
			if fc == nil {
				continue
			}
			if byPair[identity] == nil {
				byPair[identity], owner[identity] = fc, secret
				certs, certOrder = append(certs, fc), append(certOrder, ts.order)
				pairKeys[fc], alts[fc] = ts.key, alt
			} else {
				b.shareCertificate(byPair[identity])
				if older(secret, owner[identity]) {
					byPair[identity].ID = fc.ID
					owner[identity] = secret
					pairKeys[byPair[identity]] = ts.key
				}
			}
			fc = byPair[identity]
			for _, h := range ts.hosts {
				fc.SNIs = append(fc.SNIs, kong.SNI{Name: kong.String(h)})
			}
			continue
		}
		secret := b.secrets[ts.key]
		if secret == nil {
			for _, r := range ts.referrers {
				b.problem(r.obj, r.gvk, r.field, "Failed to fetch the secret (%s)", ts.key)
			}
			continue
		}
		cert, key, ok := certificatePair(secret)
		if !ok {
			for _, r := range ts.referrers {
				b.problem(r.obj, r.gvk, r.field, "failed to construct certificate from secret")
			}
			b.problem(secret, gvkSecret, "data", "failed to construct certificate from secret")
			continue
		}
		pair := pairKey(cert, key)
		fc := byPair[pair]
		if fc == nil {
			fc = &file.FCertificate{
				ID:   kong.String(certID(secret)),
				Cert: kong.String(cert),
				Key:  kong.String(key),
				Tags: b.entityTags(secret, gvkSecret),
			}
			byPair[pair] = fc
			owner[pair] = secret
			certs, certOrder = append(certs, fc), append(certOrder, ts.order)
		} else {
			b.shareCertificate(fc)
			if older(secret, owner[pair]) {
				fc.ID = kong.String(certID(secret))
				owner[pair] = secret
			}
		}
		fcByKey[ts.key] = fc
		for _, h := range ts.hosts {
			fc.SNIs = append(fc.SNIs, kong.SNI{Name: kong.String(h)})
		}
	}
	// A certificate with cert_alt takes its RSA Secret's UID, as in KIC; when that Secret is
	// also a certificate of its own (KIC then sends two certificates with one ID, which Kong
	// refuses), the pair's ID is derived from both Secrets' names instead.
	single := map[string]bool{}
	for _, fc := range certs {
		if _, isPair := alts[fc]; !isPair {
			single[*fc.ID] = true
		}
	}
	for fc, key := range pairKeys {
		if single[*fc.ID] {
			fc.ID = kong.String(uuid.NewSHA1(derivedCertNamespace, []byte(key)).String())
		}
		if b.state.CertificateAlts == nil {
			b.state.CertificateAlts = map[string]kongstate.CertificateAlt{}
		}
		b.state.CertificateAlts[*fc.ID] = alts[fc]
	}
	for key, kss := range clientCerts {
		if fc := fcByKey[key]; fc != nil {
			for _, ks := range kss {
				ks.svc.ClientCertificate = &kong.Certificate{ID: kong.String(*fc.ID)}
			}
		}
	}
	b.recordCertificates(order, certOrder)
	for _, fc := range certs {
		for i := range fc.SNIs {
			fc.SNIs[i].Certificate = &kong.Certificate{ID: kong.String(*fc.ID)}
		}
		b.state.Certificates = append(b.state.Certificates, fc)
	}
}

// certificatePair is the certificate and key a TLS Secret holds, trimmed as Kong gets them;
// ok is false when they do not make a key pair.
func certificatePair(secret *corev1.Secret) (cert, key string, ok bool) {
	cert = strings.TrimSpace(string(secret.Data[corev1.TLSCertKey]))
	key = strings.TrimSpace(string(secret.Data[corev1.TLSPrivateKeyKey]))
	if cert == "" || key == "" {
		return "", "", false
	}
	if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); err != nil {
		return "", "", false
	}
	return cert, key, true
}

// pairKey is the key Secrets of one certificate and key share (one Kong certificate for all).
func pairKey(cert, key string) string { return cert + "\x00" + key }

// shareCertificate records that fc is made of several Secrets, for Incremental
// (spliceCertificates re-derives only a certificate that one Secret makes).
func (b *builder) shareCertificate(fc *file.FCertificate) {
	if b.parts.certificates.shared == nil {
		b.parts.certificates.shared = map[*file.FCertificate]struct{}{}
	}
	b.parts.certificates.shared[fc] = struct{}{}
}

func (ts *tlsSecret) addReferrer(obj client.Object, gvk schema.GroupVersionKind, field string) {
	for _, r := range ts.referrers {
		if r.obj == obj {
			return
		}
	}
	ts.referrers = append(ts.referrers, referrer{obj, gvk, field})
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
