package translator

import (
	"encoding/hex"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Targets a tenant must not reach (docs/security.md, item 2). An ExternalName Service or an
// EndpointSlice is written by a tenant, and becomes an upstream target Kong connects to from
// its own Pod: a loopback address reaches what listens there (in the shipped DB-less overlay,
// Kong's Admin API on 127.0.0.1:8001, konductor's own ports), a link-local one the cloud's
// metadata service (169.254.169.254: the node's credentials), the unspecified address
// (0.0.0.0, ::) the host itself. Such a target is refused, with a problem on the Service,
// unless Options.AllowLocalTargets (--allow-local-targets). KIC sends them.

// allowedTarget reports whether host (an address or a DNS name) may be a target of svc's
// upstream; when not, it reports why on the Service (field: where the Service names it, ""
// for an endpoint of its EndpointSlices).
func (b *builder) allowedTarget(svc *corev1.Service, field, host string) bool {
	if b.opts.AllowLocalTargets {
		return true
	}
	what := localTarget(host)
	if what == "" {
		return true
	}
	source := ""
	if field == "" {
		source = " (an endpoint of its EndpointSlices)"
	}
	b.problem(svc, gvkService, field, "target %q%s is %s, which a Service may not make Kong connect to; the target is left out (--allow-local-targets allows it)",
		host, source, what)
	return false
}

// localTarget says what kind of local address host is ("" when it is none): a loopback,
// unspecified or link-local IP address, or a name known to resolve to one (localName).
func localTarget(host string) string {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // fe80::1%eth0
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return localAddress(a)
	}
	if labels := strings.Split(h, "."); len(labels) == 4 {
		if a, ok := decimalIPv4(labels); ok {
			return localAddress(a) // 127.000.000.001: Kong takes it for an address, as nginx reads it
		}
	}
	return localName(h)
}

// decimalIPv4 reads four labels as an IPv4 address the way nginx does (ngx_inet_addr): decimal
// numbers up to 255, leading zeros allowed (127.000.000.001 is 127.0.0.1), which Go's parser
// refuses and a DNS name may be.
func decimalIPv4(labels []string) (netip.Addr, bool) {
	var b [4]byte
	for i, l := range labels {
		n := 0
		for _, c := range l {
			if c < '0' || c > '9' || n > 255 {
				return netip.Addr{}, false
			}
			n = n*10 + int(c-'0')
		}
		if l == "" || n > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

// localAddress says what kind of local address a is ("" when it is none).
func localAddress(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address"
	}
	return ""
}

// Names known to resolve to a local address (docs/security.md, item 2, lists them and their
// limits). A name is checked as written: konductor does not resolve names (Kong does, later,
// with its own resolver), so a domain of the tenant's own that resolves to 127.0.0.1 is not
// caught; --externalname-services=same-namespace or deny is what closes that.
var (
	// loopbackHostsNames are names of a Pod's /etc/hosts (the kubelet writes localhost,
	// ip6-localhost and ip6-loopback; distributions add the others), which Kong's resolver
	// reads.
	loopbackHostsNames = []string{"localhost", "ip6-localhost", "ip6-loopback", "localhost4", "localhost6",
		"localhost.localdomain", "localhost4.localdomain4", "localhost6.localdomain6"}
	// loopbackDomains resolve, with every name under them, to 127.0.0.1 (public wildcard DNS
	// names for local development).
	loopbackDomains = []string{"localtest.me", "lvh.me", "vcap.me", "localho.st", "lacolhost.com"}
	// embeddedIPDomains answer a name with the address written in it (a.127.0.0.1.nip.io,
	// a-127-0-0-1.nip.io, 7f000001.nip.io, --1.sslip.io for ::1).
	embeddedIPDomains = []string{"nip.io", "sslip.io", "xip.io", "nip.direct", "traefik.me", "backname.io", "local.gd"}
	// metadataNames are the cloud metadata services' names (169.254.169.254).
	metadataNames = []string{"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.internal"}

	dashedIPv4 = regexp.MustCompile(`(?:^|[^0-9])([0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3})$`)
	hexIPv4    = regexp.MustCompile(`(?:^|-)([0-9a-f]{8})$`)
)

// localName says what local address the name h (lower case, no final dot) is known to
// resolve to ("" when none).
func localName(h string) string {
	switch {
	case slices.Contains(loopbackHostsNames, h), strings.HasPrefix(h, "localhost."), strings.HasSuffix(h, ".localhost"):
		return "a loopback name"
	case slices.ContainsFunc(loopbackDomains, func(d string) bool { return h == d || strings.HasSuffix(h, "."+d) }):
		return "a name that resolves to a loopback address"
	case slices.Contains(metadataNames, h):
		return "the cloud metadata service's name"
	}
	resolvesTo := func(a netip.Addr) string {
		if what := localAddress(a); what != "" {
			return "a name that resolves to " + what
		}
		return ""
	}
	labels := strings.Split(h, ".")
	// Four labels that make an address (127.0.0.1.nip.io, a.169.254.169.254.example.com):
	// the wildcard DNS services answer with it, and no other name is written so.
	for i := 0; i+4 <= len(labels); i++ {
		if a, ok := decimalIPv4(labels[i : i+4]); ok && resolvesTo(a) != "" {
			return resolvesTo(a)
		}
	}
	for _, l := range labels {
		if m := dashedIPv4.FindStringSubmatch(l); m != nil {
			if a, ok := decimalIPv4(strings.Split(m[1], "-")); ok && resolvesTo(a) != "" {
				return resolvesTo(a)
			}
		}
	}
	if !slices.ContainsFunc(embeddedIPDomains, func(d string) bool { return strings.HasSuffix(h, "."+d) }) {
		return ""
	}
	// Under the embedded-address domains only: the hexadecimal and IPv6 forms.
	for _, l := range labels {
		if m := hexIPv4.FindStringSubmatch(l); m != nil {
			if b, err := hex.DecodeString(m[1]); err == nil && resolvesTo(netip.AddrFrom4([4]byte(b))) != "" {
				return resolvesTo(netip.AddrFrom4([4]byte(b)))
			}
		}
		if strings.Contains(l, "--") || strings.Count(l, "-") >= 2 {
			if a, err := netip.ParseAddr(strings.ReplaceAll(l, "-", ":")); err == nil && resolvesTo(a) != "" {
				return resolvesTo(a)
			}
		}
	}
	return ""
}

// The values of Options.ExternalNameServices ("" is ExternalNameAllow).
const (
	ExternalNameAllow         = "allow"
	ExternalNameSameNamespace = "same-namespace"
	ExternalNameDeny          = "deny"
)

// externalNameAllowed reports whether svc's ExternalName may be a target; when not, it says
// why on the Service. In order: the policy (--externalname-services=deny), a local target
// (allowedTarget), the Kong Admin API's Services and hosts (never, whatever the settings),
// then a Service DNS name of another namespace (a ReferenceGrant of that namespace needed;
// refused with same-namespace) and any other name (refused with same-namespace).
func (b *builder) externalNameAllowed(svc *corev1.Service) bool {
	name := svc.Spec.ExternalName
	policy := b.opts.ExternalNameServices
	if policy == ExternalNameDeny {
		b.problem(svc, gvkService, "spec.externalName", "ExternalName Services are not targets here (--externalname-services=deny); the target is left out")
		return false
	}
	if !b.allowedTarget(svc, "spec.externalName", name) {
		return false
	}
	if b.adminTarget(name) {
		b.problem(svc, gvkService, "spec.externalName", "the external name %q is the Kong Admin API konductor configures, which a Service may never make Kong connect to; the target is left out", name)
		return false
	}
	target, isService := b.serviceDNSName(svc, name)
	switch {
	case isService && target.Namespace == svc.Namespace:
		return true
	case isService && policy == ExternalNameSameNamespace:
		b.problem(svc, gvkService, "spec.externalName", "the external name %q is Service %s of namespace %s, and ExternalName Services may only name Services of their own namespace (--externalname-services=same-namespace); the target is left out", name, target.Name, target.Namespace)
		return false
	case isService:
		if !b.granted(svc, gvkService, "", "Service", target.Namespace, target.Name) {
			b.problem(svc, gvkService, "spec.externalName", "the external name %q is Service %s of namespace %s: no ReferenceGrant in namespace %s lets Services of namespace %s reach it; the target is left out", name, target.Name, target.Namespace, target.Namespace, svc.Namespace)
			return false
		}
		return true
	case policy == ExternalNameSameNamespace:
		b.problem(svc, gvkService, "spec.externalName", "the external name %q is not a Service of namespace %s (<service>.%s.svc), and ExternalName Services may only name those (--externalname-services=same-namespace); the target is left out", name, svc.Namespace, svc.Namespace)
		return false
	}
	return true
}

// serviceDNSName reads name as a Service's DNS name: <svc>.<ns>.svc, <svc>.<ns>.svc.<cluster
// domain>, a Pod of a headless Service <pod>.<svc>.<ns>.svc[...], or <svc>.<ns> when namespace
// <ns> exists (otherwise it is an ordinary domain name, as example.com). from is the Service
// that names it (which reads the Namespace: namespaceExists).
func (b *builder) serviceDNSName(from *corev1.Service, name string) (types.NamespacedName, bool) {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(name), "."), ".")
	if i := slices.Index(labels, "svc"); i >= 2 {
		svc, ns := labels[i-2], labels[i-1]
		return types.NamespacedName{Namespace: ns, Name: svc}, dnsLabel(svc) && dnsLabel(ns)
	}
	if len(labels) == 2 && dnsLabel(labels[0]) && dnsLabel(labels[1]) &&
		(labels[1] == from.Namespace || b.namespaceExists(from, labels[1])) {
		return types.NamespacedName{Namespace: labels[1], Name: labels[0]}, true
	}
	return types.NamespacedName{}, false
}

// adminTarget reports whether name reaches a Kong Admin API konductor configures: a host of
// --kong-admin-url, or a DNS name of a --kong-admin-svc Service (or of a Service a
// --kong-admin-url names) in any form, its Pods' included, and its bare name, which Kong's
// resolver completes with the search domains of its own namespace, where the admin Service
// usually is.
func (b *builder) adminTarget(name string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
	admins := slices.Clone(b.opts.AdminServices)
	for _, host := range b.opts.AdminHosts {
		host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
		if h == host {
			return true
		}
		if labels := strings.Split(host, "."); len(labels) >= 3 && labels[2] == "svc" {
			admins = append(admins, types.NamespacedName{Namespace: labels[1], Name: labels[0]})
		}
	}
	labels := strings.Split(h, ".")
	for _, a := range admins {
		if h == a.Name || h == a.Name+"."+a.Namespace {
			return true
		}
		if i := slices.Index(labels, "svc"); i >= 2 && labels[i-2] == a.Name && labels[i-1] == a.Namespace {
			return true
		}
	}
	return false
}

// dnsLabel reports whether s is a DNS label (as Kubernetes names namespaces and Services).
func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// namespaceExists reports whether the snapshot knows namespace ns (its labels, or a Service
// of it, when the Namespaces are not read): "<svc>.<ns>" is also an ordinary two-label
// domain name (example.com). svc reads the Namespace, and the Service of it that tells
// (edges: their creation or deletion reaches svc).
func (b *builder) namespaceExists(svc *corev1.Service, ns string) bool {
	b.refer(svc, gvkService, ref(gvkNamespace, "", ns))
	if _, ok := b.snap.NamespaceLabels[ns]; ok {
		return true
	}
	for _, s := range b.snap.Services {
		if s != nil && s.Namespace == ns {
			b.refer(svc, gvkService, ref(gvkService, s.Namespace, s.Name))
			return true
		}
	}
	return false
}
