package gatewayapi

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/store"
)

// BackendTLSPolicyVerdict is what KIC's BackendTLSPolicy controller decides of a policy
// (its validateBackendTLSPolicy): whether it applies, and the conditions its ancestors
// entries carry. Translation applies only an accepted policy; status writes the conditions.
type BackendTLSPolicyVerdict struct {
	Accepted     metav1.Condition
	ResolvedRefs metav1.Condition
}

// Applies reports whether the policy is accepted.
func (v BackendTLSPolicyVerdict) Applies() bool { return v.Accepted.Status == metav1.ConditionTrue }

// BackendTLSPolicyFor is the BackendTLSPolicy of all that applies to the port named portName
// of Service namespace/service (nil when none does): the one that takes precedence among the
// policies selecting that port by sectionName, else among those selecting the whole Service.
// A policy naming a port applies to that port only, and outranks a whole-Service policy there
// (the API's "more specific" sectionName). portName "" (an unnamed port, or one not resolved)
// gets the whole-Service policy. Translation applies it; JudgeBackendTLSPolicy's Conflicted
// comes from the same precedence (precedentPolicy).
func BackendTLSPolicyFor(all []*gatewayv1.BackendTLSPolicy, namespace, service, portName string) *gatewayv1.BackendTLSPolicy {
	if portName != "" {
		if p := precedentPolicy(all, namespace, service, portName); p != nil {
			return p
		}
	}
	return precedentPolicy(all, namespace, service, "")
}

// precedentPolicy is the policy of all that takes precedence among those whose targetRefs
// select Service namespace/service with exactly sectionName section ("" the whole Service):
// the oldest by creationTimestamp, then the first by {namespace}/{name}, as
// BackendTLSPolicySpec.TargetRefs requires of policies selecting the same target and
// sectionName. nil when none selects it.
func precedentPolicy(all []*gatewayv1.BackendTLSPolicy, namespace, service, section string) *gatewayv1.BackendTLSPolicy {
	var best *gatewayv1.BackendTLSPolicy
	for _, p := range all {
		if p == nil || p.Namespace != namespace || !selectsService(p, service, section) {
			continue
		}
		if best == nil || Precedes(p, best) {
			best = p
		}
	}
	return best
}

// selectsService reports whether p has a targetRef naming the Service name (in p's
// namespace) with sectionName section.
func selectsService(p *gatewayv1.BackendTLSPolicy, name, section string) bool {
	for _, t := range p.Spec.TargetRefs {
		if IsServiceTarget(t) && string(t.Name) == name && sectionOf(t) == section {
			return true
		}
	}
	return false
}

func sectionOf(t gatewayv1.LocalPolicyTargetReferenceWithSectionName) string {
	if t.SectionName == nil {
		return ""
	}
	return string(*t.SectionName)
}

// Precedes is the Gateway API's conflict order: the older object by creationTimestamp, then
// the first by "{namespace}/{name}" as one string ("alphabetical order by
// {namespace}/{name}"), as KIC's store also lists Ingresses (translation-rules.md §1.1). That
// differs from namespace first, then name, when one namespace is the other's prefix followed
// by a byte below '/' ("team-a/y" before "team/x").
func Precedes(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if ta.Before(&tb) || tb.Before(&ta) {
		return ta.Before(&tb)
	}
	return namespacedNameLess(a.GetNamespace(), a.GetName(), b.GetNamespace(), b.GetName())
}

// namespacedNameLess compares aNS+"/"+aName with bNS+"/"+bName without building them.
func namespacedNameLess(aNS, aName, bNS, bName string) bool {
	if aNS == bNS {
		return aName < bName
	}
	n := min(len(aNS), len(bNS))
	if aNS[:n] != bNS[:n] {
		return aNS < bNS
	}
	// One namespace is the other's prefix: the shorter one has '/' where the longer goes on.
	if len(aNS) < len(bNS) {
		return '/' < bNS[n]
	}
	return aNS[n] < '/'
}

// IsServiceTarget reports whether a policy's targetRef names a core Service (KIC counts group
// "" or "core").
func IsServiceTarget(t gatewayv1.LocalPolicyTargetReferenceWithSectionName) bool {
	return (t.Group == "" || t.Group == "core") && t.Kind == "Service"
}

// JudgeBackendTLSPolicy judges p in KIC's order, with the spec's reasons: another policy takes
// precedence on each target p selects (Accepted False, Conflicted; conflictWinner; KIC
// refuses every policy of a Service targeted twice instead); else a caCertificateRef that is
// not a core ConfigMap or Secret (NoValidCACertificate, where KIC says Invalid; ResolvedRefs
// False, InvalidKind), one that does not exist or holds no certificate (exists says;
// NoValidCACertificate; ResolvedRefs False, InvalidCACertificateRef), subjectAltNames or
// wellKnownCACertificates, which KIC does not support (Invalid). all are the policies of the
// snapshot (p among them).
func JudgeBackendTLSPolicy(p *gatewayv1.BackendTLSPolicy, all []*gatewayv1.BackendTLSPolicy, exists func(kind, namespace, name string) bool) BackendTLSPolicyVerdict {
	v := BackendTLSPolicyVerdict{
		Accepted: metav1.Condition{Type: string(gatewayv1.PolicyConditionAccepted), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.PolicyReasonAccepted), Message: "policy accepted", ObservedGeneration: p.Generation},
		ResolvedRefs: metav1.Condition{Type: string(gatewayv1.BackendTLSPolicyConditionResolvedRefs), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.BackendTLSPolicyReasonResolvedRefs), Message: "all CA certificate references resolved", ObservedGeneration: p.Generation},
	}
	if winner := conflictWinner(p, all); winner != nil {
		v.Accepted.Status, v.Accepted.Reason = metav1.ConditionFalse, string(gatewayv1.PolicyReasonConflicted)
		v.Accepted.Message = fmt.Sprintf("BackendTLSPolicy %s takes precedence on the same targets (older, or first by name)", winner.Name)
		return v
	}
	var invalid []string
	reason := gatewayv1.PolicyReasonInvalid
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		if (ref.Group != "" && ref.Group != "core") || (ref.Kind != "ConfigMap" && ref.Kind != "Secret") {
			invalid = append(invalid, "CACertificateRefs must reference ConfigMaps or Secrets in the core group")
			reason = gatewayv1.BackendTLSPolicyReasonNoValidCACertificate
			v.ResolvedRefs.Status, v.ResolvedRefs.Reason = metav1.ConditionFalse, string(gatewayv1.BackendTLSPolicyReasonInvalidKind)
			v.ResolvedRefs.Message = fmt.Sprintf("%s %s is not a core ConfigMap or Secret", ref.Kind, ref.Name)
			break
		}
		if !exists(string(ref.Kind), p.Namespace, string(ref.Name)) {
			invalid = append(invalid, fmt.Sprintf("%s %s/%s set as CACertificateRef not found, or holds no PEM certificate in ca.crt", ref.Kind, p.Namespace, ref.Name))
			reason = gatewayv1.BackendTLSPolicyReasonNoValidCACertificate
			v.ResolvedRefs.Status, v.ResolvedRefs.Reason = metav1.ConditionFalse, string(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef)
			v.ResolvedRefs.Message = invalid[len(invalid)-1]
			break
		}
	}
	if len(p.Spec.Validation.SubjectAltNames) > 0 {
		invalid, reason = append(invalid, "SubjectAltNames feature is not currently supported"), gatewayv1.PolicyReasonInvalid
	}
	if p.Spec.Validation.WellKnownCACertificates != nil {
		invalid, reason = append(invalid, "WellKnownCACertificates feature is not currently supported"), gatewayv1.PolicyReasonInvalid
	}
	if len(invalid) > 0 {
		v.Accepted.Status, v.Accepted.Reason, v.Accepted.Message = metav1.ConditionFalse, string(reason), strings.Join(invalid, " - ")
	}
	return v
}

// conflictWinner is the policy that takes precedence over p on every target p selects
// (Service and sectionName, precedentPolicy): the first such, nil when p takes precedence on
// one of them, so that a policy applying anywhere is not reported Conflicted. A policy
// naming a port and one naming the whole Service do not conflict (BackendTLSPolicyFor).
func conflictWinner(p *gatewayv1.BackendTLSPolicy, all []*gatewayv1.BackendTLSPolicy) *gatewayv1.BackendTLSPolicy {
	var winner *gatewayv1.BackendTLSPolicy
	for _, t := range p.Spec.TargetRefs {
		if !IsServiceTarget(t) {
			continue
		}
		w := precedentPolicy(all, p.Namespace, string(t.Name), sectionOf(t))
		if w == nil || w.Name == p.Name {
			return nil
		}
		if winner == nil {
			winner = w
		}
	}
	return winner
}

// CAObjects reports whether a ConfigMap or Secret (kind) namespace/name is among
// configMaps and secrets and holds a CA certificate (HoldsCertificate): what
// JudgeBackendTLSPolicy asks of a caCertificateRef. The spec's NoValidCACertificate and
// InvalidCACertificateRef are for a reference that does not resolve to a certificate, one
// missing or malformed alike (the suite changes a ConfigMap's content to an invalid one and
// expects them); KIC checks only that the object exists. An object the cache holds without
// its data (store.PayloadNotCached: a ConfigMap a policy came to name after it was cached
// stays so until its next event; the status writers pass the sync loop's loaded copy instead
// where it has one, as translation reads it) counts as existing: its content cannot be judged.
func CAObjects(configMaps []*corev1.ConfigMap, secrets []*corev1.Secret) func(kind, namespace, name string) bool {
	have := map[string]bool{}
	for _, c := range configMaps {
		if c != nil && (store.PayloadNotCached(c) || HoldsCertificate(func(k string) []byte {
			if v, ok := c.Data[k]; ok {
				return []byte(v)
			}
			return c.BinaryData[k]
		})) {
			have["ConfigMap/"+c.Namespace+"/"+c.Name] = true
		}
	}
	for _, s := range secrets {
		if s != nil && (store.PayloadNotCached(s) || HoldsCertificate(func(k string) []byte { return s.Data[k] })) {
			have["Secret/"+s.Namespace+"/"+s.Name] = true
		}
	}
	return func(kind, namespace, name string) bool { return have[kind+"/"+namespace+"/"+name] }
}

// HoldsCertificate reports whether data's "ca.crt" (or KIC's "cert") begins with a PEM
// certificate that parses.
func HoldsCertificate(data func(key string) []byte) bool {
	for _, key := range []string{"ca.crt", "cert"} {
		block, _ := pem.Decode(data(key))
		if block == nil || block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err == nil {
			return true
		}
	}
	return false
}

// HTTPRouteServiceBackends are the Services (namespace/name) that route's rules name as
// backendRefs: the Services whose BackendTLSPolicies route can make apply.
func HTTPRouteServiceBackends(route *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, rule := range route.Spec.Rules {
		for _, be := range rule.BackendRefs {
			if key, ok := ServiceBackendKey(route.Namespace, be.BackendRef); ok {
				out = append(out, key)
			}
		}
	}
	return out
}

// ServiceBackendKey is "namespace/name" of the core Service a backendRef of a route in
// routeNamespace names; false when it names something else.
func ServiceBackendKey(routeNamespace string, be gatewayv1.BackendRef) (string, bool) {
	if (be.Group != nil && *be.Group != "" && *be.Group != "core") || (be.Kind != nil && *be.Kind != "Service") {
		return "", false
	}
	ns := routeNamespace
	if be.Namespace != nil && *be.Namespace != "" {
		ns = string(*be.Namespace)
	}
	return ns + "/" + string(be.Name), true
}
