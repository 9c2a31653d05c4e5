package translator

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/konductor/konductor/internal/kongstate"
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
// unspecified or link-local IP address, or a name that always resolves to one (localhost,
// *.localhost, the cloud metadata service's names).
func localTarget(host string) string {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // fe80::1%eth0
	}
	if a, err := netip.ParseAddr(h); err == nil {
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
	switch {
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return "a loopback name"
	case h == "metadata.google.internal" || h == "metadata" || h == "instance-data" || h == "instance-data.ec2.internal":
		return "the cloud metadata service's name"
	}
	return ""
}

// foreignServiceName reports, as a warning, an ExternalName that is another namespace's
// Service DNS name (<svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.<cluster domain>): Kong then
// reaches that Service through this one, which no ReferenceGrant of that namespace allowed.
// The target stays (it is a name any Pod may resolve); the Service's owner is told.
func (b *builder) foreignServiceName(svc *corev1.Service) {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(svc.Spec.ExternalName), "."), ".")
	if len(labels) < 2 || (len(labels) > 2 && labels[2] != "svc") {
		return
	}
	if len(labels) == 2 && !dnsLabel(labels[0]) {
		return
	}
	if ns := labels[1]; ns != svc.Namespace && dnsLabel(ns) && (len(labels) > 2 || b.namespaceExists(svc, ns)) {
		b.problems = append(b.problems, Problem{Object: kongstate.RefFor(svc, gvkService), Field: "spec.externalName", Warning: true,
			Message: fmt.Sprintf("the external name %q is Service %s/%s of namespace %s: Kong reaches it through this Service, which that namespace did not grant", svc.Spec.ExternalName, ns, labels[0], ns)})
	}
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
