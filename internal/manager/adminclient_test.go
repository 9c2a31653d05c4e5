package manager

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
)

// --proxy-timeout-seconds bounds every Admin API request (KIC's flag, default 30s).
func TestAdminHTTPClientTimeout(t *testing.T) {
	cfg, err := config.Parse([]string{"--proxy-timeout-seconds=2"}, func(string) string { return "" })
	require.NoError(t, err)
	c, err := AdminHTTPClient(cfg)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.Timeout)

	cfg, err = config.Parse(nil, func(string) string { return "" })
	require.NoError(t, err)
	c, err = AdminHTTPClient(cfg)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, c.Timeout)
}

// The Admin API client follows no redirect: a gateway (or whatever answers on its address)
// that redirects does not get the token sent elsewhere (docs/security.md, item 3).
func TestAdminHTTPClientFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		require.Empty(t, r.Header.Get("Kong-Admin-Token"))
	}))
	defer thief.Close()
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer admin.Close()
	cfg, err := config.Parse([]string{"--kong-admin-url", admin.URL, "--kong-admin-token", "the-token"}, func(string) string { return "" })
	require.NoError(t, err)
	c, err := AdminHTTPClient(cfg)
	require.NoError(t, err)
	_, err = c.Get(admin.URL + "/status")
	require.ErrorContains(t, err, "does not follow redirects")
	require.Zero(t, elsewhere.Load(), "nothing reached the redirect's target")
}

// A user:password@ in --kong-admin-url is sent as basic auth to that gateway, and the URL that
// names the gateway (logs, errors, Events, metric labels) has none.
func TestAdminURLCredentialsAreBasicAuthOnly(t *testing.T) {
	var got string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		got = user + ":" + pass
	}))
	defer admin.Close()
	withUser := strings.Replace(admin.URL, "http://", "http://ops:pa55word@", 1)
	cfg, err := config.Parse([]string{"--kong-admin-url", withUser}, func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, []string{admin.URL}, cfg.KongAdminURLs)
	c, err := AdminHTTPClient(cfg)
	require.NoError(t, err)
	resp, err := c.Get(cfg.KongAdminURLs[0] + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "ops:pa55word", got)

	_, err = config.Parse([]string{"--kong-admin-url", "ftp://ops:pa55word@kong:8001"}, func(string) string { return "" })
	require.Error(t, err)
	require.NotContains(t, err.Error(), "pa55word")
}

// /debug/pprof/cmdline serves the command line without its secrets.
func TestRedactArgs(t *testing.T) {
	in := []string{"konductor", "--kong-admin-token", "t0ken", "--kong-admin-token=t0ken", "-kong-admin-tls-client-key=PEMKEY",
		"--kong-admin-url=http://ops:pa55word@kong:8001,http://kong-2:8001", "--kong-admin-url", "https://u:p4ss@k:8444",
		"--ingress-class", "kong", "--konnect-tls-client-key", "PEMKEY"}
	out := strings.Join(RedactArgs(in), " ")
	for _, secret := range []string{"t0ken", "PEMKEY", "pa55word", "p4ss"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, out, "--ingress-class kong")
	require.Contains(t, out, "http://kong-2:8001")
}

// KIC's inline TLS flags and --kong-admin-tls-server-name: the inline CA is trusted, the
// certificate is verified against the given name (not the URL's host), the inline client
// certificate is presented, and --kong-admin-header's headers go with every request.
func TestAdminHTTPClientKICTLSFlagsAndHeaders(t *testing.T) {
	clientCert, clientKey := selfSigned(t)
	var presented atomic.Int32
	var headers http.Header
	admin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		presented.Store(int32(len(r.TLS.PeerCertificates)))
		headers = r.Header.Clone()
	}))
	admin.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	admin.StartTLS()
	defer admin.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: admin.Certificate().Raw}))
	parse := func(serverName string) *http.Client {
		cfg, err := config.Parse([]string{"--kong-admin-url", admin.URL, "--kong-admin-ca-cert", caPEM,
			"--kong-admin-tls-server-name", serverName, "--kong-admin-tls-client-cert", clientCert, "--kong-admin-tls-client-key", clientKey,
			"--kong-admin-header", "X-Tenant:a,X-Trace:1"}, func(string) string { return "" })
		require.NoError(t, err)
		c, err := AdminHTTPClient(cfg)
		require.NoError(t, err)
		return c
	}
	// httptest's certificate names example.com and 127.0.0.1; the URL's host is 127.0.0.1.
	resp, err := parse("example.com").Get(admin.URL + "/status")
	require.NoError(t, err)
	resp.Body.Close()
	require.EqualValues(t, 1, presented.Load(), "the inline client certificate was presented")
	require.Equal(t, "a", headers.Get("X-Tenant"))
	require.Equal(t, "1", headers.Get("X-Trace"))
	_, err = parse("kong.example.org").Get(admin.URL + "/status")
	require.ErrorContains(t, err, "kong.example.org", "the certificate is checked against --kong-admin-tls-server-name")
}

func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "konductor"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}
