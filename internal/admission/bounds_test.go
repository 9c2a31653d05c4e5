package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/testcert"
)

// Reviews that name namespaces that do not exist (the API server never sends one: an
// unauthenticated caller does) are judged, and their translations are not kept; those of
// namespaces that exist are kept within the count.
func TestReviewCacheIsBoundedWhateverTheReviewsName(t *testing.T) {
	v := newValidator(t, true, nil)
	v.opts.Namespaces = nil // every namespace watched, as by default
	bad := objects(t, ingress("bad", "kong", "bad.example.com", "/~/api/(v1", "ImplementationSpecific"))[0]
	for i := range 300 {
		bad.SetNamespace(fmt.Sprintf("made-up-%d", i))
		resp := v.Review(context.Background(), request(t, store.KindIngress, admissionv1.Create, bad))
		require.False(t, resp.Allowed, "a review is still judged")
	}
	require.Empty(t, v.CachedScopes(), "no translation of a namespace that does not exist is kept")

	bad.SetNamespace("default")
	require.False(t, v.Review(context.Background(), request(t, store.KindIngress, admissionv1.Create, bad)).Allowed)
	require.Equal(t, []string{"default"}, v.CachedScopes())
}

// The translations kept are bounded by count and by their estimated bytes: the least
// recently used go first, the one just made stays.
func TestScopeCacheBounds(t *testing.T) {
	v := newValidator(t, true, nil)
	full, err := v.translation(context.Background(), reviewScope{namespace: "default"})
	require.NoError(t, err)
	size := translationBytes(full.result)
	require.Positive(t, size)

	c := newScopeCache(2, 1<<40)
	for _, k := range []string{"a", "b", "c"} {
		c.put(k, full)
	}
	require.Nil(t, c.get("a"), "past the count, the least recently used goes")
	require.NotNil(t, c.get("b"))
	c.put("d", full) // c is now the least recently used
	require.Nil(t, c.get("c"))
	require.NotNil(t, c.get("b"))

	c = newScopeCache(100, 2*size)
	for _, k := range []string{"a", "b", "c"} {
		c.put(k, full)
	}
	require.Len(t, c.entries, 2, "past the bytes, the least recently used goes")
	require.LessOrEqual(t, c.bytes, 2*size)
	c = newScopeCache(100, size/2)
	c.put("huge", full)
	require.NotNil(t, c.get("huge"), "the translation just made stays, alone")
	c.put("next", full)
	require.Nil(t, c.get("huge"))
	require.Len(t, c.entries, 1)
}

// A review of a namespaced object names no object of another namespace: the object that
// holds what it wants is masked (docs/security.md, item 4).
func TestAnswersNameOnlyTheReviewsNamespace(t *testing.T) {
	m := &foreignMasker{own: "team-b", namespaces: map[string]bool{"team-a": true, "team-b": true, "application": false}}
	for in, want := range map[string]string{
		`KongConsumer team-b/impostor: username "alice" is already KongConsumer team-a/alice's`: `KongConsumer team-b/impostor: username "alice" is already KongConsumer [another namespace]'s`,
		`also claimed from namespace team-a`:                                                    `also claimed from namespace [another namespace]`,
		`Service team-b/x: of namespace "team-a"`:                                               `Service team-b/x: of namespace "[another namespace]"`,
		`path "/team-a/x" and content type application/json`:                                    `path "/team-a/x" and content type application/json`,
	} {
		require.Equal(t, want, m.String(in))
	}
}

// What one caller can hold: a body waits for its share of the budget, and is refused with
// 503 when it does not get it in time; the share is given back when the answer is written.
func TestBodiesShareABudget(t *testing.T) {
	v := newValidator(t, true, nil)
	good := objects(t, ingress("good", "kong", "good.example.com", "/api", "Prefix"))[0]
	body := reviewBody(t, "admission.k8s.io/v1", request(t, store.KindIngress, admissionv1.Create, good))
	h := HandlerWithBudget(v, logr.Discard(), int64(len(body)), 50*time.Millisecond)

	// A caller that sends its body slowly holds the whole budget.
	slowBody, writer := io.Pipe()
	slow := httptest.NewRequest(http.MethodPost, "/", slowBody)
	slow.ContentLength = int64(len(body))
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, slow)
		done <- rec.Code
	}()
	_, err := writer.Write(body[:10])
	require.NoError(t, err)

	code, _ := post(t, h, body)
	require.Equal(t, http.StatusServiceUnavailable, code, "no share of the budget left")

	_, err = writer.Write(body[10:])
	require.NoError(t, err)
	require.NoError(t, writer.Close())
	require.Equal(t, http.StatusOK, <-done)
	code, _ = post(t, h, body)
	require.Equal(t, http.StatusOK, code, "the share is back")
}

// A connection that stops sending is closed at the read deadline, and the connections held
// open are bounded: one more waits until a held one is closed.
func TestServerReadDeadlineAndConnectionLimit(t *testing.T) {
	certPEM, keyPEM := testcert.SelfSigned(t, "konductor-webhook")
	h := Handler(newValidator(t, true, nil), logr.Discard())
	s, err := NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", Cert: string(certPEM), Key: string(keyPEM),
		ReadTimeout: 5 * time.Second, MaxConnections: 2}, h)
	require.NoError(t, err)
	c := serve(t, s, certPEM)

	// Two callers that connect and send nothing hold both connections.
	var held []net.Conn
	for range 2 {
		conn, err := net.Dial("tcp", s.Addr().String())
		require.NoError(t, err)
		held = append(held, conn)
	}
	// A third is not served while they are held: its TLS handshake gets no answer.
	third, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer third.Close()
	require.NoError(t, third.SetDeadline(time.Now().Add(200*time.Millisecond)))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	err = tls.Client(third, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}).Handshake()
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "the third connection waits: %v", err)
	// Each held one is closed by the server at the read deadline (the TLS handshake is read under it).
	for _, conn := range held {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := io.Copy(io.Discard, conn)
		require.NoError(t, err, "the server closed the connection (EOF), before the client's own deadline")
		conn.Close()
	}
	// Then a review is served.
	askOverTLS(t, s, c)
}

// With --admission-webhook-client-ca-file only a caller whose client certificate that CA
// signed is served (the API server, as Kubernetes documents for webhooks); any other
// connection fails in the TLS handshake.
func TestServerAuthenticatesTheAPIServer(t *testing.T) {
	certPEM, keyPEM := testcert.SelfSigned(t, "konductor-webhook")
	clientCert, clientKey := testcert.SelfSigned(t, "kube-apiserver")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, clientCert, 0o600))
	h := Handler(newValidator(t, true, nil), logr.Discard())
	s, err := NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", Cert: string(certPEM), Key: string(keyPEM), ClientCAFile: caFile}, h)
	require.NoError(t, err)
	anonymous := serve(t, s, certPEM)
	_, err = anonymous.Post("https://"+s.Addr().String()+"/", "application/json", bytes.NewReader([]byte("{}")))
	require.Error(t, err, "a caller without a client certificate is refused")

	pair, err := tls.X509KeyPair(clientCert, clientKey)
	require.NoError(t, err)
	apiServer := serve(t, s, certPEM) // a second client, sharing the server
	apiServer.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{pair}
	askOverTLS(t, s, apiServer)

	_, err = NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", Cert: string(certPEM), Key: string(keyPEM), ClientCAFile: filepath.Join(dir, "missing")}, h)
	require.ErrorContains(t, err, "--admission-webhook-client-ca-file")
}
