package kongemu

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// certFor makes a self-signed certificate and key (PEM) for names.
func certFor(t *testing.T, names ...string) (string, string, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, _ := x509.ParseCertificate(der)
	return string(pemEncode("CERTIFICATE", der)), string(pemEncode("EC PRIVATE KEY", keyDER)), cert
}

// The HTTPS listener serves each configured certificate to the names of its SNIs (a name no SNI
// has gets the certificate of the SNI "*", as Kong's DEFAULT_SNI), and routes by Host and SNI;
// HTTP/2 is negotiated.
func TestProxyHTTPSBySNI(t *testing.T) {
	certA, keyA, a := certFor(t, "a.example.com")
	certB, keyB, b := certFor(t, "*.wild.example.com")
	certAny, keyAny, anyName := certFor(t, "example.org")
	cfg := map[string]any{"_format_version": "3.0",
		"certificates": []any{
			map[string]any{"cert": certA, "key": keyA, "snis": []any{map[string]any{"name": "a.example.com"}}},
			map[string]any{"cert": certB, "key": keyB, "snis": []any{map[string]any{"name": "*.wild.example.com"}}},
			map[string]any{"cert": certAny, "key": keyAny, "snis": []any{map[string]any{"name": "*"}}}},
		"services": []any{map[string]any{"name": "s", "host": "10.1.0.1", "port": 8080, "routes": []any{
			map[string]any{"name": "tls-only", "hosts": []string{"a.example.com"}, "protocols": []string{"https"}},
			map[string]any{"name": "by-sni", "snis": []string{"x.wild.example.com"}, "protocols": []string{"https"}}}}}}
	raw, _ := json.Marshal(cfg)
	_, p := proxyWith(t, string(raw), map[string]string{"10.1.0.1:8080": "echo"})
	srv, err := p.Start(ProxyListen{})
	require.NoError(t, err)
	defer srv.Close()

	get := func(serverName string, roots *x509.Certificate, host string) (*http.Response, string) {
		pool := x509.NewCertPool()
		pool.AddCert(roots)
		tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: serverName, RootCAs: pool}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", srv.TLSURL+"/p", nil)
		req.Host = host
		res, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err, serverName)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(body)
	}
	res, body := get("a.example.com", a, "a.example.com")
	require.Equal(t, 200, res.StatusCode, body)
	require.Equal(t, 2, res.ProtoMajor)
	require.Equal(t, "a.example.com", res.TLS.PeerCertificates[0].Subject.CommonName)
	res, body = get("x.wild.example.com", b, "whatever")
	require.Equal(t, 200, res.StatusCode, body)
	require.Equal(t, "*.wild.example.com", res.TLS.PeerCertificates[0].Subject.CommonName)
	res, _ = get("example.org", anyName, "a.example.com")
	require.Equal(t, "example.org", res.TLS.PeerCertificates[0].Subject.CommonName)

	// The same route over plain HTTP: 426.
	res2, err := http.Get(srv.URL + "/p")
	require.NoError(t, err)
	res2.Body.Close()
	require.Equal(t, 426, res2.StatusCode)
}

// gRPC through the proxy's plain listener (HTTP/2 without TLS) to a gRPC service in process.
func TestProxyGRPC(t *testing.T) {
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("echo", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	cfg := `{"_format_version":"3.0","services":[{"name":"g","host":"10.1.0.9","port":9000,"protocol":"grpc","routes":[
  {"name":"health","paths":["/grpc.health.v1.Health/"],"protocols":["grpc","grpcs"]}]}]}`
	e := New(Options{})
	status0, body, _ := call(t, e, http.MethodPost, "/config", cfg)
	require.Equal(t, 201, status0, "%v", body)
	p := e.Proxy(ProxyOptions{Resolve: func(host string, port int) http.Handler {
		if host == "10.1.0.9" && port == 9000 {
			return gs
		}
		return nil
	}})
	srv, err := p.Start(ProxyListen{})
	require.NoError(t, err)
	defer srv.Close()
	conn, err := grpc.NewClient(strings.TrimPrefix(srv.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := healthpb.NewHealthClient(conn)
	resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "echo"})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.Status)
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{Service: "missing"})
	require.Equal(t, codes.NotFound, status.Code(err), "the gRPC status travels in the trailers: %v", err)

	// Streaming: Watch sends the current status, then each change.
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "echo"})
	require.NoError(t, err)
	first, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, first.Status)
	hs.SetServingStatus("echo", healthpb.HealthCheckResponse_NOT_SERVING)
	second, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, second.Status)
}
