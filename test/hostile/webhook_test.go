package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/admission"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/testcert"
)

// The attacks of a caller who reaches the admission webhook's port without being the API
// server (issue #44, item 1; docs/security.md, item 4), with the safe outcome of each.

// badIngress is an Ingress the webhook refuses (a regex Kong refuses) in namespace ns.
func badIngress(ns string) *netv1.Ingress {
	class, pt := "kong", netv1.PathTypeImplementationSpecific
	return &netv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: "probe.example.com",
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{
				Path: "/~/(", PathType: &pt,
				Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "svc", Port: netv1.ServiceBackendPort{Number: 80}}},
			}}}}}}},
	}
}

func webhookValidator(t *testing.T) *admission.Validator {
	t.Helper()
	st, err := store.NewForObjects([]client.Object{badIngress("tenant")}, store.Options{IngressClass: "kong"})
	require.NoError(t, err)
	return admission.NewValidator(admission.Options{Source: st})
}

// 300 reviews naming made-up namespaces (which grew a per-scope cache by 1.5 MiB each): every
// one is judged, and none is kept.
func TestHostileWebhookMadeUpNamespaces(t *testing.T) {
	v := webhookValidator(t)
	h := admission.Handler(v, logr.Discard())
	for i := range 300 {
		body, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"request": review(t, badIngress(fmt.Sprintf("made-up-%d", i)))})
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		require.Equal(t, http.StatusOK, rec.Code)
		var out admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		require.False(t, out.Response.Allowed, "the review is judged")
	}
	require.Empty(t, v.CachedScopes(), "no translation of a made-up namespace is kept")
}

// Connections that send a body just short of the limit and then stop (40 held 530 MiB, open
// for good): they are bounded in number, and closed at the read deadline; then a review is
// served.
func TestHostileWebhookSlowBodies(t *testing.T) {
	certPEM, keyPEM := testcert.SelfSigned(t, "konductor-webhook")
	s, err := admission.NewServer(admission.ServerOptions{ListenAddr: "127.0.0.1:0", Cert: string(certPEM), Key: string(keyPEM),
		ReadTimeout: 3 * time.Second, MaxConnections: 4}, admission.Handler(webhookValidator(t), logr.Discard()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.HTTP.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}

	var held []net.Conn
	for range 4 {
		conn, err := tls.Dial("tcp", s.Addr().String(), tlsCfg)
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"request\": {\"uid\": \"", 8<<20-1)
		require.NoError(t, err)
		held = append(held, conn)
	}
	// A fifth connection is not taken while four are held.
	extra, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer extra.Close()
	require.NoError(t, extra.SetDeadline(time.Now().Add(200*time.Millisecond)))
	err = tls.Client(extra, tlsCfg).Handshake()
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)

	// The held ones are closed by the server at its read deadline, long before the client's.
	for _, conn := range held {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		answer, err := io.ReadAll(conn)
		require.NoError(t, err, "closed by the server")
		require.False(t, strings.Contains(string(answer), "200 OK"))
		conn.Close()
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	body, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": review(t, badIngress("tenant"))})
	require.NoError(t, err)
	resp, err := c.Post("https://"+s.Addr().String()+"/", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
