package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A TLS Secret rotated in place (as cert-manager renews a certificate), then deleted, reaches
// Kong: the certificate keeps its ID (the Secret's UID) and takes the new pair, then goes.
// The controller splices these changes (translator.spliceCertificates) instead of translating
// the cluster again; what Kong gets must be the same.
func TestRotatedTLSSecretReachesKong(t *testing.T) {
	parallel(t)
	ns, kong := dblessSynced(t, 2, "--proxy-sync-seconds", "3600")
	ctx := context.Background()
	pemPair := func() (string, string) {
		c, _ := servingCert(t, []string{"app-0000.example.com"}, nil)
		keyDER, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
		require.NoError(t, err)
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})),
			string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	}
	certOf := func(uid types.UID) string {
		c := kong.Entity("certificates", string(uid))
		if c == nil {
			return ""
		}
		s, _ := c["cert"].(string)
		return s
	}

	cert, key := pemPair()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-tls", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte(cert), corev1.TLSPrivateKeyKey: []byte(key)}}
	require.NoError(t, admin.Create(ctx, secret))
	var ing netv1.Ingress
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-0000"}, &ing))
	ing.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{"app-0000.example.com"}, SecretName: "app-tls"}}
	require.NoError(t, admin.Update(ctx, &ing))
	require.Eventually(t, func() bool { return certOf(secret.UID) == strings.TrimSpace(cert) }, 30*time.Second, 5*time.Millisecond)

	rotated, rotatedKey := pemPair()
	secret.Data = map[string][]byte{corev1.TLSCertKey: []byte(rotated), corev1.TLSPrivateKeyKey: []byte(rotatedKey)}
	require.NoError(t, admin.Update(ctx, secret))
	require.Eventually(t, func() bool { return certOf(secret.UID) == strings.TrimSpace(rotated) }, 30*time.Second, 5*time.Millisecond)
	require.Len(t, kong.Entities("certificates"), 1)
	require.NotNil(t, kong.Entity("snis", "app-0000.example.com"), "the host keeps its SNI")

	require.NoError(t, admin.Delete(ctx, secret))
	require.Eventually(t, func() bool { return len(kong.Entities("certificates")) == 0 }, 30*time.Second, 5*time.Millisecond)
}
