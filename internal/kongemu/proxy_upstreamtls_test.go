package kongemu

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCA is a CA (PEM) and a serving certificate it signed for names.
func testCA(t *testing.T, names ...string) (caPEM string, leaf tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return string(pemEncode("CERTIFICATE", caDER)), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// An https service's connection to its backend is TLS as Kong makes it: SNI and the name
// verified are the upstream Host ($upstream_host: the request's with preserve_host, else the
// upstream's host_header or the service's host), the certificate is verified only with
// tls_verify, against the service's ca_certificates. A wrong CA or name is a failed
// connection (502); a plain http service to a TLS backend gets the backend's 400.
func TestProxyUpstreamTLS(t *testing.T) {
	caPEM, leaf := testCA(t, "abc.example.com", "other.example.com")
	otherCA, _ := testCA(t, "abc.example.com")
	const caID, otherID = "00000000-0000-4000-8000-0000000000c1", "00000000-0000-4000-8000-0000000000c2"
	service := func(name, protocol string, verify *bool, cas []string, preserve bool, path string) map[string]any {
		s := map[string]any{"name": name, "host": "tls.default.443.svc", "port": 443, "protocol": protocol,
			"routes": []any{map[string]any{"name": name, "paths": []string{path}, "preserve_host": preserve, "protocols": []string{"http"}}}}
		if verify != nil {
			s["tls_verify"] = *verify
		}
		if cas != nil {
			s["ca_certificates"] = cas
		}
		return s
	}
	yes, no := true, false
	cfg := map[string]any{"_format_version": "3.0",
		"ca_certificates": []any{map[string]any{"id": caID, "cert": caPEM}, map[string]any{"id": otherID, "cert": otherCA}},
		"upstreams": []any{map[string]any{"name": "tls.default.443.svc", "host_header": "abc.example.com",
			"targets": []any{map[string]any{"target": "10.1.0.9:8443"}}}},
		"services": []any{
			service("verified", "https", &yes, []string{caID}, true, "/verified"),
			service("by-host-header", "https", &yes, []string{caID}, false, "/by-host-header"),
			service("wrong-ca", "https", &yes, []string{otherID}, true, "/wrong-ca"),
			service("unverified", "https", &no, []string{otherID}, true, "/unverified"),
			service("default-unverified", "https", nil, nil, true, "/default-unverified"),
			service("plain", "http", nil, nil, true, "/plain"),
		}}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	_, p := proxyWith(t, string(raw), nil)
	p.opts.Resolve = func(host string, port int) http.Handler {
		if host == "10.1.0.9" && port == 8443 {
			return &EchoBackend{Pod: "tls-backend"}
		}
		return nil
	}
	p.opts.BackendTLS = func(host string, port int) *tls.Config {
		if host == "10.1.0.9" && port == 8443 {
			return &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
		}
		return nil
	}
	for _, c := range []struct {
		path, host string
		status     int
		sni        string
	}{
		{"/verified", "abc.example.com", 200, "abc.example.com"},
		{"/verified", "other.example.com", 200, "other.example.com"},
		{"/verified", "nope.example.com", 502, ""}, // the name verified is the preserved Host
		{"/by-host-header", "nope.example.com", 200, "abc.example.com"},
		{"/wrong-ca", "abc.example.com", 502, ""},
		{"/unverified", "nope.example.com", 200, "nope.example.com"},
		{"/default-unverified", "abc.example.com", 200, "abc.example.com"},
		{"/plain", "abc.example.com", 400, ""},
	} {
		res, body := send(t, p, "GET", c.path, map[string]string{"Host": c.host})
		require.Equal(t, c.status, res.StatusCode, "%s with Host %s: %s", c.path, c.host, body)
		if c.status == 200 {
			echo := echoOf(t, body)
			require.NotNil(t, echo.TLS, "%s", body)
			require.Equal(t, c.sni, echo.TLS.ServerName, c.path)
		}
	}
}

// A grpcs service's backend over the network is spoken to in HTTP/2 over TLS (nginx's
// grpc_pass), an https one's in HTTP/1.1.
func TestProxyUpstreamTLSProtocols(t *testing.T) {
	backend := httptest.NewUnstartedServer(&EchoBackend{Pod: "net"})
	backend.EnableHTTP2 = true
	backend.StartTLS()
	t.Cleanup(backend.Close)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(backend.URL, "https://"))
	require.NoError(t, err)
	e := New(Options{})
	status, out, _ := call(t, e, http.MethodPost, "/config", `{"_format_version":"3.0",
 "services":[
  {"name":"g","host":"`+host+`","port":`+port+`,"protocol":"grpcs","routes":[{"name":"g","paths":["/grpc"],"protocols":["grpc"]}]},
  {"name":"h","host":"`+host+`","port":`+port+`,"protocol":"https","routes":[{"name":"h","paths":["/h"],"strip_path":false}]}]}`)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	p := e.Proxy(ProxyOptions{})

	r := httptest.NewRequest("POST", "/grpc/Echo", nil)
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	r.Header.Set("Content-Type", "application/grpc")
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, r)
	require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body.String())
	require.Equal(t, "HTTP/2.0", echoOf(t, rec.Body.Bytes()).Proto)

	res, body := send(t, p, "GET", "/h", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "HTTP/1.1", echoOf(t, body).Proto)
	require.NotNil(t, echoOf(t, body).TLS)
}
