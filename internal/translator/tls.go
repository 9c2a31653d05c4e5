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
// certificate and CA certificates make sense (translation-rules.md §7.3).
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

// tls turns Ingress spec.tls into certificates and SNIs (translation-rules.md §7.1, §7.2). Hosts
// are claimed globally in Ingress age order: the first Secret to name a host gets it.
func (b *builder) tls() {
	c := b.tlsClaims()
	clientCerts := b.clientCertificates(c)
	certs := b.certificatesOf(c.order)
	certs.pairIDs(b)
	for key, kss := range clientCerts {
		if fc := certs.byKey[key]; fc != nil {
			for _, ks := range kss {
				ks.svc.ClientCertificate = &kong.Certificate{ID: kong.String(*fc.ID)}
			}
		}
	}
	b.recordCertificates(c.order, certs.order)
	for _, fc := range certs.list {
		for i := range fc.SNIs {
			fc.SNIs[i].Certificate = &kong.Certificate{ID: kong.String(*fc.ID)}
		}
		b.state.Certificates = append(b.state.Certificates, fc)
	}
}

// tlsClaimSet is the TLS Secrets translation reads, in the order it reads them, and which
// took each host.
type tlsClaimSet struct {
	claimed map[string]bool
	// Who took each host, for the report when another Secret asks for it (a host is
	// global in Kong: a tenant's older Ingress can take another's).
	claimer  map[string]hostClaim
	bySecret map[string]*tlsSecret
	order    []*tlsSecret
}

func (c *tlsClaimSet) secretFor(ns, name string) *tlsSecret {
	key := ns + "/" + name
	ts := c.bySecret[key]
	if ts == nil {
		ts = &tlsSecret{key: key, namespace: ns, name: name, order: len(c.order)}
		c.bySecret[key] = ts
		c.order = append(c.order, ts)
	}
	return ts
}

func (c *tlsClaimSet) secretPairFor(ns, name, altNS, altName string) *tlsSecret {
	ts := c.secretFor(ns, name+"+"+altNS+"/"+altName)
	ts.name, ts.alt = name, altNS+"/"+altName
	return ts
}

// tlsClaims are the hosts Ingresses, then TCPIngresses (as KIC merges its sources,
// translation-rules.md §2), then Gateway listeners claim, with their Secrets: a host an
// Ingress claimed keeps the Ingress's certificate.
func (b *builder) tlsClaims() *tlsClaimSet {
	c := &tlsClaimSet{claimed: map[string]bool{}, claimer: map[string]hostClaim{}, bySecret: map[string]*tlsSecret{}}
	for _, ing := range b.ingresses {
		for k, t := range ing.Spec.TLS {
			b.claimTLSHosts(c, ing, gvkIngress, k, t.Hosts, t.SecretName)
		}
	}
	for _, ti := range b.tcpIngresses {
		for k, t := range ti.Spec.TLS {
			b.claimTLSHosts(c, ti, gvkTCPIngress, k, t.Hosts, t.SecretName)
		}
	}
	for _, lc := range b.gatewayListenerCerts() {
		var ts *tlsSecret
		if lc.altName == "" {
			ts = c.secretFor(lc.namespace, lc.name)
		} else {
			ts = c.secretPairFor(lc.namespace, lc.name, lc.altNamespace, lc.altName)
		}
		ts.addReferrer(lc.owner, lc.gvk, lc.field)
		if !c.claimed[lc.sni] {
			c.claimed[lc.sni] = true
			c.claimer[lc.sni] = hostClaim{obj: lc.owner, gvk: lc.gvk, field: lc.field, secret: ts.key}
			ts.hosts = append(ts.hosts, lc.sni)
		} else if first := c.claimer[lc.sni]; first.secret != ts.key && first.obj != lc.owner {
			// The listener's host keeps the certificate of whoever named it first.
			b.contend("sni "+lc.sni, lc.owner, lc.gvk, first.obj, first.gvk)
		}
	}
	return c
}

// claimTLSHosts claims the hosts of obj's spec.tls[k] for its Secret secretName.
func (b *builder) claimTLSHosts(c *tlsClaimSet, obj client.Object, gvk schema.GroupVersionKind, k int, hosts []string, secretName string) {
	if len(hosts) == 0 || secretName == "" {
		return
	}
	b.refer(obj, gvk, ref(gvkSecret, obj.GetNamespace(), secretName))
	ts := c.secretFor(obj.GetNamespace(), secretName)
	ts.addReferrer(obj, gvk, fmt.Sprintf("spec.tls[%d].secretName", k))
	for h, host := range hosts {
		if e := checkSNI(host); e != "" {
			b.problem(obj, gvk, fmt.Sprintf("spec.tls[%d].hosts[%d]", k, h), "%s; the host gets no certificate", e)
			continue
		}
		field := fmt.Sprintf("spec.tls[%d].hosts[%d]", k, h)
		if c.claimed[host] {
			if first, ok := c.claimer[host]; ok && first.secret != ts.key {
				// Reported on both: the one that lost the host and the one that has it.
				b.contend("sni "+host, obj, gvk, first.obj, first.gvk)
				b.problem(obj, gvk, field, "TLS host %q is already served with Secret %s's certificate, named by %s %s/%s (older); this Ingress's Secret %s does not get it",
					host, first.secret, first.gvk.Kind, first.obj.GetNamespace(), first.obj.GetName(), ts.key)
				b.problem(first.obj, first.gvk, first.field, "TLS host %q is also named with Secret %s by %s %s/%s; this object's Secret %s keeps it (older)",
					host, ts.key, gvk.Kind, obj.GetNamespace(), obj.GetName(), first.secret)
			}
			continue
		}
		c.claimed[host] = true
		c.claimer[host] = hostClaim{obj: obj, gvk: gvk, field: field, secret: ts.key}
		ts.hosts = append(ts.hosts, host)
	}
}

// clientCertificates are the Services' client certificates (translation-rules.md §7.3),
// certificates without SNIs: the Kong services using each Secret, by ns/name.
func (b *builder) clientCertificates(c *tlsClaimSet) map[string][]*kongService {
	clientCerts := map[string][]*kongService{}
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
		ts := c.secretFor(svc.Namespace, name)
		ts.addReferrer(svc, gvkService, annField(annClientCert))
		clientCerts[key] = append(clientCerts[key], ks)
	}
	return clientCerts
}

// certificateSet is the certificates the TLS Secrets make: Secrets with an identical cert and
// key collapse into one certificate.
type certificateSet struct {
	byKey  map[string]*file.FCertificate // by the Secret's ns/name
	byPair map[string]*file.FCertificate // by its cert and key (pairKey), or its pair's identity
	owner  map[string]*corev1.Secret     // the Secret whose UID the certificate's ID is, by the same key
	list   []*file.FCertificate
	order  []int // of each of list, the order of the Secret that made it first
	// Certificates with cert_alt: the ns/name+ns/name their ID is from, and the alternative.
	pairKeys map[*file.FCertificate]string
	alts     map[*file.FCertificate]kongstate.CertificateAlt
}

// certificatesOf makes the certificates of the TLS Secrets read, in order.
func (b *builder) certificatesOf(order []*tlsSecret) *certificateSet {
	cs := &certificateSet{byKey: map[string]*file.FCertificate{}, byPair: map[string]*file.FCertificate{}, owner: map[string]*corev1.Secret{},
		pairKeys: map[*file.FCertificate]string{}, alts: map[*file.FCertificate]kongstate.CertificateAlt{}}
	for _, ts := range order {
		if ts.alt != "" {
			b.addCertificatePair(cs, ts)
		} else {
			b.addCertificate(cs, ts)
		}
	}
	return cs
}

// addCertificatePair adds the RSA+ECDSA certificate of a Gateway listener's two Secrets.
func (b *builder) addCertificatePair(cs *certificateSet, ts *tlsSecret) {
	fc, alt, secret, identity := b.dualCertificate(ts)
	if fc == nil {
		return
	}
	if cs.byPair[identity] == nil {
		cs.byPair[identity], cs.owner[identity] = fc, secret
		cs.list, cs.order = append(cs.list, fc), append(cs.order, ts.order)
		cs.pairKeys[fc], cs.alts[fc] = ts.key, alt
	} else {
		b.shareCertificate(cs.byPair[identity])
		b.contend("certificate "+hashed(identity), secret, gvkSecret, cs.owner[identity], gvkSecret)
		if older(secret, cs.owner[identity]) {
			cs.byPair[identity].ID = fc.ID
			cs.owner[identity] = secret
			cs.pairKeys[cs.byPair[identity]] = ts.key
		}
	}
	fc = cs.byPair[identity]
	for _, h := range ts.hosts {
		fc.SNIs = append(fc.SNIs, kong.SNI{Name: kong.String(h)})
	}
}

// addCertificate adds the certificate of one TLS Secret, or its hosts to the certificate an
// identical Secret made (the oldest Secret's UID is its ID).
func (b *builder) addCertificate(cs *certificateSet, ts *tlsSecret) {
	secret := b.secrets[ts.key]
	cert, key, ok, problems := secretCertificate(ts, secret)
	if !ok {
		b.problems = append(b.problems, problems...)
		return
	}
	pair := pairKey(cert, key)
	fc := cs.byPair[pair]
	if fc == nil {
		fc = &file.FCertificate{
			ID:   kong.String(certID(secret)),
			Cert: kong.String(cert),
			Key:  kong.String(key),
			Tags: b.entityTags(secret, gvkSecret),
		}
		cs.byPair[pair] = fc
		cs.owner[pair] = secret
		cs.list, cs.order = append(cs.list, fc), append(cs.order, ts.order)
	} else {
		b.shareCertificate(fc)
		b.contend("certificate "+hashed(pair), secret, gvkSecret, cs.owner[pair], gvkSecret)
		if older(secret, cs.owner[pair]) {
			fc.ID = kong.String(certID(secret))
			cs.owner[pair] = secret
		}
	}
	cs.byKey[ts.key] = fc
	for _, h := range ts.hosts {
		fc.SNIs = append(fc.SNIs, kong.SNI{Name: kong.String(h)})
	}
}

// pairIDs gives the certificates with cert_alt their IDs and records their alternatives. A
// certificate with cert_alt takes its RSA Secret's UID, as in KIC; when that Secret is also a
// certificate of its own (KIC then sends two certificates with one ID, which Kong refuses),
// the pair's ID is derived from both Secrets' names instead.
func (cs *certificateSet) pairIDs(b *builder) {
	single := map[string]bool{}
	for _, fc := range cs.list {
		if _, isPair := cs.alts[fc]; !isPair {
			single[*fc.ID] = true
		}
	}
	for fc, key := range cs.pairKeys {
		if single[*fc.ID] {
			fc.ID = kong.String(uuid.NewSHA1(derivedCertNamespace, []byte(key)).String())
		}
		if b.state.CertificateAlts == nil {
			b.state.CertificateAlts = map[string]kongstate.CertificateAlt{}
		}
		b.state.CertificateAlts[*fc.ID] = cs.alts[fc]
	}
}

// secretCertificate is the certificate and key ts's Secret s holds (s nil: missing), or,
// when it holds none, the problems about it: tls reports them, and the certificates' splice
// (spliceCertificates) must find the same ones to know a Secret's change is local.
func secretCertificate(ts *tlsSecret, s *corev1.Secret) (cert, key string, ok bool, problems []Problem) {
	if s == nil {
		for _, r := range ts.referrers {
			problems = append(problems, Problem{Object: kongstate.RefFor(r.obj, r.gvk), Field: r.field, Message: "Failed to fetch the secret (" + ts.key + ")"})
		}
		return "", "", false, problems
	}
	if cert, key, ok = certificatePair(s); ok {
		return cert, key, true, nil
	}
	const invalid = "failed to construct certificate from secret"
	for _, r := range ts.referrers {
		problems = append(problems, Problem{Object: kongstate.RefFor(r.obj, r.gvk), Field: r.field, Message: invalid})
	}
	return "", "", false, append(problems, Problem{Object: kongstate.RefFor(s, gvkSecret), Field: "data", Message: invalid})
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

// certID is the Secret's UID (translation-rules.md §6), or a UUID derived from ns/name when the
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
