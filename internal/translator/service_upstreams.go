package translator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/konductor/konductor/internal/kongrules"
)

// Service annotations that select upstream settings (translation-rules.md §10.2, §10.3).
const (
	annOverride       = "konghq.com/override"
	annUpstreamPolicy = kongv1beta1.KongUpstreamPolicyAnnotationKey
)

var (
	// stickySessionsMinVersion is the first Kong that has the sticky-sessions algorithm.
	stickySessionsMinVersion = semver.MustParse("3.11.0")
)

// upstreamOverrides applies, to the upstream of every Kong service backed by a Kubernetes
// Service, that Service's KongIngress upstream section (konghq.com/override, deprecated), then
// its konghq.com/host-header annotation, then its KongUpstreamPolicy
// (konghq.com/upstream-policy), in KIC's order (translation-rules.md §10.3).
func (b *builder) upstreamOverrides() {
	for _, n := range b.kongServiceNames() {
		ks := b.kongServices[n]
		if ks.upstream == nil {
			continue
		}
		bk := b.backingService(ks)
		if bk == nil {
			continue
		}
		svc := bk.svc
		hostHeader := ks.upstream.HostHeader // from the annotation, which wins over KongIngress
		if name := svc.Annotations[annOverride]; name != "" {
			b.refer(svc, gvkService, ref(gvkKongIngress, svc.Namespace, name))
			if ki := b.kongIngress(svc.Namespace, name); ki == nil {
				b.problem(svc, gvkService, annField(annOverride), "failed fetching KongIngress: KongIngress %s/%s not found", svc.Namespace, name)
			} else if ki.Upstream != nil {
				if field, msg := upstreamKongRefuses(ki.Upstream.Slots, ki.Upstream.HashOnHeader, ki.Upstream.HashFallbackHeader); msg != "" {
					b.problem(ki, gvkKongIngress, "upstream."+field, "%s; the upstream section is not applied", msg)
					continue
				}
				applyKongIngressUpstream(&ks.upstream.Upstream, ki.Upstream)
			}
		}
		if hostHeader != nil {
			ks.upstream.HostHeader = hostHeader
		}
		if name := svc.Annotations[annUpstreamPolicy]; name != "" {
			// The owner refers to the policy: a KongServiceFacade, whose annotations apply,
			// is the ancestor of the policy's status (status.UpstreamPolicyUpdater).
			b.refer(bk.owner, bk.gvk, ref(gvkKongUpstreamPolicy, svc.Namespace, name))
			b.applyUpstreamPolicy(ks.upstream, svc, name)
		}
	}
}

// upstreamPolicyConflict starts the message (KIC's words) of the Problem sharedUpstreamPolicy
// reports on each Service of an upstream whose Services name different policies.
const upstreamPolicyConflict = "inconsistent KongUpstreamPolicy configuration for services "

// IsUpstreamPolicyConflict: p is the problem reported on a Service whose KongUpstreamPolicy
// translation did not apply to an upstream it shares with Services that name another policy,
// or none (an HTTPRoute rule's backends). The KongUpstreamPolicy status reports the Service
// Conflicted from it, so that status says what translation did.
func (p Problem) IsUpstreamPolicyConflict() bool {
	return p.Object.Kind == gvkService.Kind && p.Object.Group == gvkService.Group && p.Field == annField(annUpstreamPolicy) &&
		strings.HasPrefix(p.Message, upstreamPolicyConflict)
}

// sharedUpstreamPolicy applies to the upstream of a Kong service with several backend
// Services the KongUpstreamPolicy they all name (KIC's GetKongUpstreamPolicyForServices): none
// when none names one; when they name different ones, or some none, an upstream can take only
// one, so none applies and the failure is reported on each Service, in KIC's words.
func (b *builder) sharedUpstreamPolicy(u *file.FUpstream, resolved []*corev1.Service) {
	seen := map[string]bool{}
	var svcs []*corev1.Service
	names := map[string]bool{}
	for _, svc := range resolved {
		if key := svc.Namespace + "/" + svc.Name; !seen[key] {
			seen[key] = true
			svcs = append(svcs, svc)
			names[svc.Annotations[annUpstreamPolicy]] = true
		}
	}
	if len(names) == 1 {
		name := svcs[0].Annotations[annUpstreamPolicy]
		if name == "" {
			return
		}
		for _, svc := range svcs {
			b.refer(svc, gvkService, ref(gvkKongUpstreamPolicy, svc.Namespace, name))
		}
		b.applyUpstreamPolicy(u, svcs[0], name)
		return
	}
	keys := make([]string, 0, len(svcs))
	for _, svc := range svcs {
		keys = append(keys, svc.Namespace+"/"+svc.Name)
	}
	sort.Strings(keys)
	for _, svc := range svcs {
		b.problem(svc, gvkService, annField(annUpstreamPolicy), "%s%s", upstreamPolicyConflict, strings.Join(keys, ", "))
	}
}

func (b *builder) kongIngress(ns, name string) *kongv1.KongIngress {
	for _, ki := range b.snap.KongIngresses {
		if ki != nil && ki.Namespace == ns && ki.Name == name {
			return ki
		}
	}
	return nil
}

// applyKongIngressUpstream copies the fields KIC takes from a KongIngress's upstream section.
func applyKongIngressUpstream(u *kong.Upstream, ki *kongv1.KongIngressUpstream) {
	set := func(dst **string, v *string) {
		if v != nil {
			*dst = kong.String(*v)
		}
	}
	set(&u.HostHeader, ki.HostHeader)
	set(&u.Algorithm, ki.Algorithm)
	if ki.Slots != nil {
		u.Slots = kong.Int(*ki.Slots)
	}
	if ki.Healthchecks != nil {
		u.Healthchecks = ki.Healthchecks.DeepCopy()
	}
	set(&u.HashOn, ki.HashOn)
	set(&u.HashFallback, ki.HashFallback)
	set(&u.HashOnHeader, ki.HashOnHeader)
	set(&u.HashFallbackHeader, ki.HashFallbackHeader)
	set(&u.HashOnCookie, ki.HashOnCookie)
	set(&u.HashOnCookiePath, ki.HashOnCookiePath)
	set(&u.HashOnQueryArg, ki.HashOnQueryArg)
	set(&u.HashFallbackQueryArg, ki.HashFallbackQueryArg)
	set(&u.HashOnURICapture, ki.HashOnURICapture)
	set(&u.HashFallbackURICapture, ki.HashFallbackURICapture)
}

func (b *builder) upstreamPolicy(ns, name string) *kongv1beta1.KongUpstreamPolicy {
	for _, p := range b.snap.KongUpstreamPolicies {
		if p != nil && p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

// applyUpstreamPolicy maps a KongUpstreamPolicy onto u; only the fields set are copied
// (translation-rules.md §10.3). A policy Kong would refuse (a hash input it needs is missing, sticky
// sessions on a Kong that has none) is reported on the policy and not applied at all, so the
// upstream keeps Kong's defaults rather than half a policy.
func (b *builder) applyUpstreamPolicy(u *file.FUpstream, svc *corev1.Service, name string) {
	p := b.upstreamPolicy(svc.Namespace, name)
	if p == nil {
		b.problem(svc, gvkService, annField(annUpstreamPolicy), "failed fetching KongUpstreamPolicy: KongUpstreamPolicy %s/%s not found", svc.Namespace, name)
		return
	}
	spec := p.Spec
	// KIC reports this on the Service whose upstream it is (its translation failure names
	// the Service; KIC's envtest expects the Event there), and skips the whole policy. An
	// unknown version (konductor translate without --kong-version, gateways that have not
	// answered yet) is not checked: KIC's golden tests run without a version cut-off.
	if spec.Algorithm != nil && *spec.Algorithm == "sticky-sessions" && b.opts.KongVersion.LT(stickySessionsMinVersion) && !b.opts.KongVersion.EQ(semver.Version{}) {
		b.problem(svc, gvkService, annField(annUpstreamPolicy), "sticky sessions algorithm specified in KongUpstreamPolicy '%s' is not supported with Kong Gateway versions < 3.11.0", p.Name)
		return
	}
	out := u.Upstream
	if spec.Algorithm != nil {
		out.Algorithm = kong.String(*spec.Algorithm)
	}
	if spec.Slots != nil {
		out.Slots = kong.Int(*spec.Slots)
	}
	if spec.HashOn != nil {
		if msg := hashInput(spec.HashOn, &out.HashOn, &out.HashOnHeader, &out.HashOnCookie, &out.HashOnCookiePath, &out.HashOnQueryArg, &out.HashOnURICapture); msg != "" {
			b.problem(p, gvkKongUpstreamPolicy, "spec.hashOn", "%s", msg)
			return
		}
	}
	if spec.HashOnFallback != nil {
		cookie, cookiePath := out.HashOnCookie, out.HashOnCookiePath
		if msg := hashInput(spec.HashOnFallback, &out.HashFallback, &out.HashFallbackHeader, &cookie, &cookiePath, &out.HashFallbackQueryArg, &out.HashFallbackURICapture); msg != "" {
			b.problem(p, gvkKongUpstreamPolicy, "spec.hashOnFallback", "%s", msg)
			return
		}
		// A fallback cookie fills hash_on_cookie only when hashOn has none (Kong has one
		// cookie field for both).
		if out.HashOnCookie == nil {
			out.HashOnCookie, out.HashOnCookiePath = cookie, cookiePath
		}
	}
	if field, msg := upstreamKongRefuses(out.Slots, out.HashOnHeader, out.HashFallbackHeader); msg != "" {
		b.problem(p, gvkKongUpstreamPolicy, "spec."+field, "%s; the policy is not applied", msg)
		return
	}
	if hc := spec.Healthchecks; hc != nil {
		out.Healthchecks = healthchecks(hc)
	}
	if ss := spec.StickySessions; ss != nil {
		out.StickySessionsCookie = kong.String(ss.Cookie)
		if ss.CookiePath != nil {
			out.StickySessionsCookiePath = kong.String(*ss.CookiePath)
		}
	}
	u.Upstream = out
}

// hashInput maps one KongUpstreamHash: exactly one of input, header, cookie, queryArg and
// uriCapture. It returns a problem message when the hash names no input or several.
func hashInput(h *kongv1beta1.KongUpstreamHash, on, header, cookie, cookiePath, queryArg, uriCapture **string) string {
	var set []string
	if h.Input != nil {
		*on = kong.String(string(*h.Input))
		set = append(set, "input")
	}
	named := []struct {
		field, kind string
		v           *string
		dst         **string
	}{
		{"header", "header", h.Header, header},
		{"cookie", "cookie", h.Cookie, cookie},
		{"queryArg", "query_arg", h.QueryArg, queryArg},
		{"uriCapture", "uri_capture", h.URICapture, uriCapture},
	}
	for _, n := range named {
		if n.v == nil {
			continue
		}
		if *n.v == "" {
			return fmt.Sprintf("%s must not be empty", n.field)
		}
		*on = kong.String(n.kind)
		*n.dst = kong.String(*n.v)
		set = append(set, n.field)
	}
	if h.Cookie != nil && h.CookiePath != nil {
		*cookiePath = kong.String(*h.CookiePath)
	}
	switch {
	case len(set) == 0:
		return "one of input, header, cookie, queryArg or uriCapture is required"
	case len(set) > 1:
		return fmt.Sprintf("only one of input, header, cookie, queryArg and uriCapture may be set, got %v", set)
	}
	return ""
}

func healthchecks(hc *kongv1beta1.KongUpstreamHealthcheck) *kong.Healthcheck {
	out := &kong.Healthcheck{}
	if a := hc.Active; a != nil {
		out.Active = &kong.ActiveHealthcheck{
			Type: a.Type, Concurrency: a.Concurrency, HTTPPath: a.HTTPPath, HTTPSSni: a.HTTPSSNI,
			HTTPSVerifyCertificate: a.HTTPSVerifyCertificate, Timeout: a.Timeout,
			Healthy: healthy(a.Healthy), Unhealthy: unhealthy(a.Unhealthy),
		}
		if len(a.Headers) > 0 {
			out.Active.Headers = map[string][]string{}
			for k, v := range a.Headers {
				out.Active.Headers[k] = append([]string(nil), v...)
			}
		}
	}
	if p := hc.Passive; p != nil {
		out.Passive = &kong.PassiveHealthcheck{Type: p.Type, Healthy: healthy(p.Healthy), Unhealthy: unhealthy(p.Unhealthy)}
	}
	if hc.Threshold != nil {
		out.Threshold = kong.Float64(float64(*hc.Threshold))
	}
	return out
}

func statuses(in []kongv1beta1.HTTPStatus) []int {
	var out []int
	for _, s := range in {
		out = append(out, int(s))
	}
	return out
}

func healthy(h *kongv1beta1.KongUpstreamHealthcheckHealthy) *kong.Healthy {
	if h == nil {
		return nil
	}
	return &kong.Healthy{HTTPStatuses: statuses(h.HTTPStatuses), Interval: h.Interval, Successes: h.Successes}
}

func unhealthy(h *kongv1beta1.KongUpstreamHealthcheckUnhealthy) *kong.Unhealthy {
	if h == nil {
		return nil
	}
	return &kong.Unhealthy{HTTPFailures: h.HTTPFailures, HTTPStatuses: statuses(h.HTTPStatuses), TCPFailures: h.TCPFailures, Timeouts: h.Timeouts, Interval: h.Interval}
}

// upstreamKongRefuses is what Kong's upstream schema says of these fields ("" when it takes
// them), and the field: slots between 10 and 65536, hash headers valid header names. Checked
// here so that one policy does not make a DB-less gateway refuse the whole configuration.
func upstreamKongRefuses(slots *int, hashOnHeader, hashFallbackHeader *string) (field, msg string) {
	if slots != nil && (*slots < 10 || *slots > 65536) {
		return "slots", fmt.Sprintf("slots must be between 10 and 65536 (Kong's schema), got %d", *slots)
	}
	for _, h := range []struct {
		field string
		v     *string
	}{{"hashOn.header", hashOnHeader}, {"hashOnFallback.header", hashFallbackHeader}} {
		if h.v != nil && kongrules.HeaderName(*h.v) != "" {
			return h.field, fmt.Sprintf("bad header name %q, allowed characters are A-Z, a-z, 0-9, '_', and '-'", *h.v)
		}
	}
	return "", ""
}
