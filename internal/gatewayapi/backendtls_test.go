package gatewayapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/testcert"
)

func TestJudgeBackendTLSPolicy(t *testing.T) {
	policy := func(name, svc string, v gatewayv1.BackendTLSPolicyValidation) *gatewayv1.BackendTLSPolicy {
		return &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 3},
			Spec: gatewayv1.BackendTLSPolicySpec{
				TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: gatewayv1.ObjectName(svc)}}},
				Validation: v,
			}}
	}
	ca := func(group, kind, name string) gatewayv1.BackendTLSPolicyValidation {
		return gatewayv1.BackendTLSPolicyValidation{Hostname: "x.internal",
			CACertificateRefs: []gatewayv1.LocalObjectReference{{Group: gatewayv1.Group(group), Kind: gatewayv1.Kind(kind), Name: gatewayv1.ObjectName(name)}}}
	}
	system := gatewayv1.WellKnownCACertificatesSystem
	other := policy("other", "shared", ca("", "ConfigMap", "ca"))
	exists := func(kind, ns, name string) bool { return kind == "ConfigMap" && ns == "default" && name == "ca" }
	for _, tc := range []struct {
		name              string
		p                 *gatewayv1.BackendTLSPolicy
		accepted, refs    string
		acceptedMessageIn string
	}{
		{"accepted", policy("p", "svc", ca("", "ConfigMap", "ca")), "True/Accepted", "True/ResolvedRefs", ""},
		{"core group", policy("p", "svc", ca("core", "ConfigMap", "ca")), "True/Accepted", "True/ResolvedRefs", ""},
		{"conflicted", policy("p", "shared", ca("", "ConfigMap", "ca")), "False/Conflicted", "True/ResolvedRefs", "BackendTLSPolicy other takes precedence"},
		{"missing ConfigMap", policy("p", "svc", ca("", "ConfigMap", "absent")), "False/NoValidCACertificate", "False/InvalidCACertificateRef", "absent"},
		{"missing Secret", policy("p", "svc", ca("", "Secret", "ca")), "False/NoValidCACertificate", "False/InvalidCACertificateRef", "Secret default/ca"},
		// The spec's reason (the suite's BackendTLSPolicyInvalidKind); KIC says Invalid.
		{"bad kind", policy("p", "svc", ca("example.com", "Bundle", "ca")), "False/NoValidCACertificate", "False/InvalidKind", "core group"},
		{"well known", policy("p", "svc", gatewayv1.BackendTLSPolicyValidation{Hostname: "x", WellKnownCACertificates: &system}), "False/Invalid", "True/ResolvedRefs", "WellKnownCACertificates"},
		{"subjectAltNames", policy("p", "svc", func() gatewayv1.BackendTLSPolicyValidation {
			v := ca("", "ConfigMap", "ca")
			v.SubjectAltNames = []gatewayv1.SubjectAltName{{Type: gatewayv1.HostnameSubjectAltNameType, Hostname: "y"}}
			return v
		}()), "False/Invalid", "True/ResolvedRefs", "SubjectAltNames"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := JudgeBackendTLSPolicy(tc.p, []*gatewayv1.BackendTLSPolicy{other, tc.p}, exists)
			require.Equal(t, tc.accepted, string(v.Accepted.Status)+"/"+v.Accepted.Reason)
			require.Equal(t, tc.refs, string(v.ResolvedRefs.Status)+"/"+v.ResolvedRefs.Reason)
			require.Contains(t, v.Accepted.Message, tc.acceptedMessageIn)
			require.Equal(t, tc.accepted == "True/Accepted", v.Applies())
			require.Equal(t, int64(3), v.Accepted.ObservedGeneration)
		})
	}
}

// Among policies selecting the same Service and sectionName the oldest wins, then the first by
// name; one naming a port applies to that port only and outranks a whole-Service policy there
// (BackendTLSPolicySpec.TargetRefs; the suite's BackendTLSPolicyConflictResolution). Translation
// (BackendTLSPolicyFor) and status (JudgeBackendTLSPolicy's Conflicted) agree.
func TestBackendTLSPolicyPrecedence(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(1_800_000_000+sec, 0)) }
	policy := func(name, svc, section string, created metav1.Time) *gatewayv1.BackendTLSPolicy {
		ref := gatewayv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: gatewayv1.ObjectName(svc)}}
		if section != "" {
			s := gatewayv1.SectionName(section)
			ref.SectionName = &s
		}
		return &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: created},
			Spec: gatewayv1.BackendTLSPolicySpec{TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{ref},
				Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "h", CACertificateRefs: []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}}}}
	}
	all := []*gatewayv1.BackendTLSPolicy{
		policy("b-newer", "whole", "", at(2)), policy("z-older", "whole", "", at(1)), // the older wins though named later
		policy("tie-2", "tied", "", at(1)), policy("tie-1", "tied", "", at(1)), // same second: by name
		policy("sec-2", "sectioned", "https-1", at(1)), policy("sec-1", "sectioned", "https-1", at(1)),
		policy("port-only", "mixed", "https-1", at(5)), policy("whole-svc", "mixed", "", at(1)), // no conflict
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "a", CreationTimestamp: at(0)}, Spec: policy("a", "whole", "", at(0)).Spec}, // another namespace's Service
	}
	name := func(p *gatewayv1.BackendTLSPolicy) string {
		if p == nil {
			return ""
		}
		return p.Name
	}
	for _, tc := range []struct{ svc, port, want string }{
		{"whole", "https", "z-older"},
		{"whole", "", "z-older"},
		{"tied", "https", "tie-1"},
		{"sectioned", "https-1", "sec-1"},
		{"sectioned", "https-2", ""}, // no policy names it or the whole Service
		{"mixed", "https-1", "port-only"},
		{"mixed", "https-2", "whole-svc"},
		{"mixed", "", "whole-svc"},
		{"absent", "https", ""},
	} {
		require.Equal(t, tc.want, name(BackendTLSPolicyFor(all, "ns", tc.svc, tc.port)), "%s port %q", tc.svc, tc.port)
	}
	exists := func(kind, ns, name string) bool { return true }
	for p, want := range map[string]string{
		"z-older": "True/Accepted", "b-newer": "False/Conflicted",
		"tie-1": "True/Accepted", "tie-2": "False/Conflicted",
		"sec-1": "True/Accepted", "sec-2": "False/Conflicted",
		"port-only": "True/Accepted", "whole-svc": "True/Accepted",
	} {
		for _, x := range all {
			if x.Namespace == "ns" && x.Name == p {
				v := JudgeBackendTLSPolicy(x, all, exists)
				require.Equal(t, want, string(v.Accepted.Status)+"/"+v.Accepted.Reason, p)
			}
		}
	}
}

// A caCertificateRef resolves only to a ConfigMap or Secret that holds a PEM certificate: the
// suite makes a policy's ConfigMap malformed and expects NoValidCACertificate (issue #40).
func TestCAObjects(t *testing.T) {
	cert, _ := testcert.SelfSigned(t, "ca")
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: data}
	}
	exists := CAObjects([]*corev1.ConfigMap{
		cm("good", map[string]string{"ca.crt": string(cert)}),
		cm("kic-key", map[string]string{"cert": string(cert)}),
		cm("malformed", map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"}),
		cm("empty", nil),
		func() *corev1.ConfigMap { // cached without its data: cannot be judged, counts
			c := cm("not-cached", nil)
			c.Annotations = map[string]string{store.PayloadNotCachedAnnotation: "true"}
			return c
		}(),
	}, []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "secret"}, Data: map[string][]byte{"ca.crt": cert}}})
	for name, want := range map[string]bool{"good": true, "kic-key": true, "malformed": false, "empty": false, "absent": false, "not-cached": true} {
		require.Equal(t, want, exists("ConfigMap", "default", name), name)
	}
	require.True(t, exists("Secret", "default", "secret"))
	require.False(t, exists("Secret", "default", "good"), "kinds are apart")
}
