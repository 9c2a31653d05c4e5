package testcert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
)

// The certificate is what its comment promises: a key pair tls loads, named commonName,
// valid for 127.0.0.1 as a server and as a client, and verified by a pool of itself.
func TestSelfSignedVerifiesAsItsOwnCA(t *testing.T) {
	certPEM, keyPEM := SelfSigned(t, "echo")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "echo" {
		t.Fatalf("common name %q, want echo", cert.Subject.CommonName)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("the certificate is not PEM")
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Fatalf("usage %v: %v", usage, err)
		}
	}
	if err := cert.VerifyHostname(net.ParseIP("127.0.0.1").String()); err != nil {
		t.Fatal(err)
	}
}
