package translator

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// Service annotations that set the Kong service's CA certificates (translation-rules.md §7.4):
// KIC's names (internal/annotations: CACertificatesSecretsKey, CACertificatesConfigMapsKey,
// singular), and the plural names konductor read alone before it was found that KIC spells
// them so, still read (their names join KIC's).
const (
	annCACertSecret          = "konghq.com/ca-certificates-secret"
	annCACertConfigMap       = "konghq.com/ca-certificates-configmap"
	annCACertSecretsPlural   = "konghq.com/ca-certificates-secrets"
	annCACertConfigMapPlural = "konghq.com/ca-certificates-configmaps"
)

// caCertAnnotations are the Service annotations that name CA certificates, each with the kind
// of object it names.
var caCertAnnotations = []struct {
	ann, kind string
	gvk       schema.GroupVersionKind
}{
	{annCACertSecret, "secret", gvkSecret}, {annCACertSecretsPlural, "secret", gvkSecret},
	{annCACertConfigMap, "configmap", gvkConfigMap}, {annCACertConfigMapPlural, "configmap", gvkConfigMap},
}

// caSource is a Secret or ConfigMap labelled konghq.com/ca-cert: "true".
type caSource struct {
	obj  client.Object
	gvk  schema.GroupVersionKind
	kind string // "secret" or "configmap", as KIC's messages say
	data func(key string) (string, bool)
}

// caCertificates turns labelled Secrets and ConfigMaps into CA certificates {id: data.id,
// cert, tags} (translation-rules.md §7.4), and so the ConfigMaps an applied BackendTLSPolicy
// names, labelled or not (an unlabelled one without data.id gets kongstate.CACertificateID), then sets the ca_certificates of Kong services whose
// Service names them. Of several objects with one id the oldest wins (ties by namespace and
// name). A certificate Kong would refuse (not exactly one PEM certificate, not a CA, expired)
// is reported on its object and left out.
func (b *builder) caCertificates() {
	var sources []caSource
	for _, s := range b.snap.Secrets {
		if s != nil && s.Labels[store.CACertLabel] == "true" {
			sources = append(sources, caSource{s, gvkSecret, "secret", func(k string) (string, bool) {
				if v, ok := s.Data[k]; ok {
					return string(v), true
				}
				v, ok := s.StringData[k]
				return v, ok
			}})
		}
	}
	for _, cm := range b.snap.ConfigMaps {
		if cm == nil {
			continue
		}
		labelled := cm.Labels[store.CACertLabel] == "true"
		if !labelled && !b.policyCAs[cm.Namespace+"/"+cm.Name] {
			continue
		}
		sources = append(sources, caSource{cm, gvkConfigMap, "configmap", func(k string) (string, bool) {
			if v, ok := cm.Data[k]; ok {
				return v, true
			}
			if v, ok := cm.BinaryData[k]; ok {
				return string(v), true
			}
			if k == "id" && !labelled {
				// Named by a BackendTLSPolicy, unlabelled: the Gateway API user writes no id.
				return kongstate.CACertificateID(b.opts.Workspace, cm.Namespace, cm.Name), true
			}
			return "", false
		}})
	}
	sort.SliceStable(sources, func(i, j int) bool {
		a, c := sources[i].obj, sources[j].obj
		ta, tc := a.GetCreationTimestamp(), c.GetCreationTimestamp()
		if !ta.Equal(&tc) {
			return ta.Before(&tc)
		}
		if a.GetNamespace() != c.GetNamespace() {
			return a.GetNamespace() < c.GetNamespace()
		}
		return a.GetName() < c.GetName()
	})
	// An id is global in Kong but claimed from namespaced objects: an id claimed from two
	// namespaces is rendered from neither (mtls-auth then refuses rather than trusts another
	// tenant's CA), and every claim says why (docs/security.md, item 1). Within one
	// namespace the oldest claim wins, as in KIC.
	claims := map[string][]caSource{}
	for _, src := range sources {
		if id, ok := src.data("id"); ok && strings.TrimSpace(id) != "" {
			claims[id] = append(claims[id], src)
		}
	}
	ids := map[string]caSource{}    // id -> the claim rendered
	byObject := map[string]string{} // kind/ns/name -> id, for the Service annotations
	for _, src := range sources {
		id, ok := src.data("id")
		if !ok || strings.TrimSpace(id) == "" {
			b.problem(src.obj, src.gvk, "data.id", "invalid %s CA certificate: missing 'id' field in data", src.kind)
			continue
		}
		if others := claimedElsewhere(claims[id], src.obj.GetNamespace()); len(others) > 0 {
			for _, o := range others {
				b.contend("ca_certificate "+id, src.obj, src.gvk, o.obj, o.gvk)
			}
			b.problem(src.obj, src.gvk, "data.id", "CA certificate id %q is also claimed from namespace %s (%s); an id claimed from two namespaces is rendered from neither",
				id, others[0].obj.GetNamespace(), strings.Join(claimNames(others), ", "))
			continue
		}
		if kept, dup := ids[id]; dup {
			b.contend("ca_certificate "+id, src.obj, src.gvk, kept.obj, kept.gvk)
			b.problem(src.obj, src.gvk, "data.id", "invalid %s CA certificate: duplicate 'id' field in multiple objects", src.kind)
			continue
		}
		cert, ok := src.data("cert")
		if !ok {
			cert, ok = src.data("ca.crt")
		}
		field := "data.cert"
		if !ok {
			b.problem(src.obj, src.gvk, field, "invalid %s CA certificate: no 'cert' or 'ca.crt' field in data", src.kind)
			continue
		}
		cert = strings.TrimSpace(cert)
		if msg := b.checkCACert(cert); msg != "" {
			b.problem(src.obj, src.gvk, field, "invalid %s CA certificate: %s", src.kind, msg)
			continue
		}
		ids[id] = src
		byObject[src.kind+"/"+src.obj.GetNamespace()+"/"+src.obj.GetName()] = id
		b.state.CACertificates = append(b.state.CACertificates, &file.FCACertificate{CACertificate: kong.CACertificate{
			ID:   kong.String(id),
			Cert: kong.String(cert),
			Tags: b.entityTags(src.obj, src.gvk),
		}})
	}

	for _, n := range b.kongServiceNames() {
		ks := b.kongServices[n]
		bk := b.backingService(ks)
		if bk == nil {
			continue
		}
		svc := bk.svc
		var refs []string
		named := ""
		for _, a := range caCertAnnotations {
			for _, name := range splitList(svc.Annotations[a.ann], ",") {
				if named == "" {
					named = a.ann
				}
				b.refer(svc, gvkService, ref(a.gvk, svc.Namespace, name))
				id, ok := byObject[a.kind+"/"+svc.Namespace+"/"+name]
				if !ok {
					b.problem(svc, gvkService, annField(a.ann), "CA certificate %s %s/%s not found, or not a valid CA certificate labelled %s", a.kind, svc.Namespace, name, store.CACertLabel)
					continue
				}
				if !slices.Contains(refs, id) {
					refs = append(refs, id)
				}
			}
		}
		if len(refs) == 0 {
			continue
		}
		if ks.svc.TLSVerify == nil || !*ks.svc.TLSVerify || !tlsProtocols[str(ks.svc.Protocol)] {
			b.problem(svc, gvkService, annField(named), "CA certificates need konghq.com/tls-verify: \"true\" and a TLS protocol (https, grpcs, tls); the annotation is ignored")
			continue
		}
		ks.svc.CACertificates = kong.StringSlice(refs...)
	}
}

// checkCACert is Kong's check of a CA certificate: exactly one PEM certificate, with the CA
// basic constraint, not expired at Options.Now (when set).
func (b *builder) checkCACert(certPEM string) string {
	block, rest := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return "no PEM certificate"
	}
	if more, _ := pem.Decode(rest); more != nil {
		return "more than one certificate"
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Sprintf("invalid certificate: %v", err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return `certificate does not appear to be a CA because it is missing the "CA" basic constraint`
	}
	b.readClock = b.readClock || !b.opts.Now.IsZero()
	if !b.opts.Now.IsZero() && b.opts.Now.After(cert.NotAfter) {
		return `certificate expired, "Not After" time is in the past`
	}
	return ""
}

// claimedElsewhere are the claims of an id from other namespaces than ns.
func claimedElsewhere(claims []caSource, ns string) []caSource {
	var out []caSource
	for _, c := range claims {
		if c.obj.GetNamespace() != ns {
			out = append(out, c)
		}
	}
	return out
}

// claimNames names the objects of claims ("ConfigMap ns/name").
func claimNames(claims []caSource) []string {
	out := make([]string, len(claims))
	for i, c := range claims {
		out[i] = c.gvk.Kind + " " + c.obj.GetNamespace() + "/" + c.obj.GetName()
	}
	return out
}
