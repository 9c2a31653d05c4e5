package gatewayapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// keyPairSecret is a kubernetes.io/tls Secret with a fresh self-signed key pair.
func keyPairSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}}
}

func TestResolveCertificateRefs(t *testing.T) {
	secrets := map[string]*corev1.Secret{
		"infra/cert":   keyPairSecret(t, "infra", "cert"),
		"certs/shared": keyPairSecret(t, "certs", "shared"),
		"certs/other":  keyPairSecret(t, "certs", "other"),
		"infra/broken": {ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "broken"}, Data: map[string][]byte{corev1.TLSCertKey: []byte("nope")}},
	}
	lookup := func(ns, name string) *corev1.Secret { return secrets[ns+"/"+name] }
	shared := gatewayv1.ObjectName("shared")
	grants := []*gatewayv1beta1.ReferenceGrant{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "gateways"},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: Group, Kind: "Gateway", Namespace: "infra"}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Secret", Name: &shared}},
		},
	}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "kong"}}
	ref := func(ns, name string) gatewayv1.SecretObjectReference {
		r := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(name)}
		if ns != "" {
			n := gatewayv1.Namespace(ns)
			r.Namespace = &n
		}
		return r
	}
	configMap := ref("", "cert")
	kind := gatewayv1.Kind("ConfigMap")
	configMap.Kind = &kind
	passthrough := gatewayv1.TLSModePassthrough
	for _, tc := range []struct {
		name string
		tls  *gatewayv1.ListenerTLSConfig
		want gatewayv1.ListenerConditionReason
	}{
		{"no TLS", nil, ""},
		{"passthrough needs no certificate", &gatewayv1.ListenerTLSConfig{Mode: &passthrough}, ""},
		{"Secret in the Gateway's namespace", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref("", "cert")}}, ""},
		{"granted Secret elsewhere", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref("certs", "shared")}}, ""},
		{"Secret elsewhere without a grant", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref("certs", "other")}}, gatewayv1.ListenerReasonRefNotPermitted},
		{"missing Secret", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref("", "absent")}}, gatewayv1.ListenerReasonInvalidCertificateRef},
		{"not a key pair", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref("", "broken")}}, gatewayv1.ListenerReasonInvalidCertificateRef},
		{"not a Secret", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{configMap}}, gatewayv1.ListenerReasonInvalidCertificateRef},
		{"the first failing reference decides", &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref("", "cert"), ref("certs", "other"), ref("", "absent")}}, gatewayv1.ListenerReasonRefNotPermitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &gatewayv1.Listener{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, TLS: tc.tls}
			got, msg := ResolveCertificateRefs(gw, gatewayv1.SchemeGroupVersion.WithKind("Gateway"), l, lookup, grants)
			require.Equal(t, tc.want, got, msg)
			require.Equal(t, got == "", msg == "")
		})
	}
}
