package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/testcert"
)

// reviewBody is an AdmissionReview of apiVersion holding req, as the API server POSTs it.
func reviewBody(t *testing.T, apiVersion string, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "AdmissionReview", "request": req})
	require.NoError(t, err)
	return body
}

// post sends body to h and returns the status code and the response body.
func post(t *testing.T, h http.Handler, body []byte) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
	return rec.Code, rec.Body.Bytes()
}

// The API server sends admission.k8s.io/v1 (konductor's manifests) or v1beta1 (KIC's Helm
// chart); each is answered in its own version, with the request's UID, and a denial carries
// the message.
func TestHandlerAnswersInTheReviewsVersion(t *testing.T) {
	h := Handler(newValidator(t, true, nil), logr.Discard())
	bad := objects(t, ingress("bad", "kong", "bad.example.com", "/~/api/(v1", "ImplementationSpecific"))[0]
	req := request(t, store.KindIngress, admissionv1.Create, bad)

	code, body := post(t, h, reviewBody(t, "admission.k8s.io/v1", req))
	require.Equal(t, http.StatusOK, code)
	var v1 admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &v1))
	require.Equal(t, "admission.k8s.io/v1", v1.APIVersion)
	require.Equal(t, "AdmissionReview", v1.Kind)
	require.Equal(t, req.UID, v1.Response.UID)
	require.False(t, v1.Response.Allowed)
	require.Contains(t, v1.Response.Result.Message, "spec.rules[0].http.paths[0].path")

	code, body = post(t, h, reviewBody(t, "admission.k8s.io/v1beta1", req))
	require.Equal(t, http.StatusOK, code)
	var v1beta1 admissionv1beta1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &v1beta1))
	require.Equal(t, "admission.k8s.io/v1beta1", v1beta1.APIVersion)
	require.Equal(t, req.UID, v1beta1.Response.UID)
	require.False(t, v1beta1.Response.Allowed)

	good := objects(t, ingress("good", "kong", "good.example.com", "/api", "Prefix"))[0]
	_, body = post(t, h, reviewBody(t, "admission.k8s.io/v1", request(t, store.KindIngress, admissionv1.Create, good)))
	require.NoError(t, json.Unmarshal(body, &v1))
	require.True(t, v1.Response.Allowed)
}

// What is not an AdmissionReview is refused with 400 (the API server then applies the
// failure policy); only POST is served.
func TestHandlerRefusesWhatIsNotAReview(t *testing.T) {
	h := Handler(newValidator(t, true, nil), logr.Discard())
	tooLarge := `{"request": {"uid": "` + string(bytes.Repeat([]byte("x"), maxReviewBytes)) + `"}}`
	for name, body := range map[string]string{
		"not JSON":    "{apiVersion: admission",
		"no request":  `{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}`,
		"wrong shape": `{"request": "yes"}`,
		"empty":       "",
	} {
		t.Run(name, func(t *testing.T) {
			code, _ := post(t, h, []byte(body))
			require.Equal(t, http.StatusBadRequest, code)
		})
	}
	// Larger than 8 MiB: refused before it is read when it says so, after 8 MiB when it
	// does not (chunked).
	code, _ := post(t, h, []byte(tooLarge))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	rec := httptest.NewRecorder()
	chunked := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(tooLarge)))
	chunked.ContentLength = -1
	h.ServeHTTP(rec, chunked)
	require.Equal(t, http.StatusBadRequest, rec.Code)

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// panickingSource is a cache whose read panics, as a defect in konductor would.
type panickingSource struct{}

func (panickingSource) Snapshot(context.Context) (*store.Snapshot, error) { panic("defect") }

// A defect in konductor never blocks a user's write: a review that panics is allowed, with a
// warning that the object was not checked.
func TestHandlerAllowsWhenTheReviewPanics(t *testing.T) {
	h := Handler(NewValidator(Options{Source: panickingSource{}}), logr.Discard())
	obj := objects(t, ingress("bad", "kong", "bad.example.com", "/~/(", "ImplementationSpecific"))[0]
	req := request(t, store.KindIngress, admissionv1.Create, obj)
	code, body := post(t, h, reviewBody(t, "admission.k8s.io/v1", req))
	require.Equal(t, http.StatusOK, code)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &review))
	require.True(t, review.Response.Allowed)
	require.Equal(t, req.UID, review.Response.UID)
	require.Equal(t, []string{"konductor failed while checking this object; it was not checked"}, review.Response.Warnings)
}

// serve starts s until the test ends and returns a client that trusts certPEM.
func serve(t *testing.T, s *Server, certPEM []byte) *http.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.HTTP.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// askOverTLS POSTs a review of a bad Ingress to s and requires the denial.
func askOverTLS(t *testing.T, s *Server, c *http.Client) {
	t.Helper()
	obj := objects(t, ingress("bad", "kong", "bad.example.com", "/~/(", "ImplementationSpecific"))[0]
	body := reviewBody(t, "admission.k8s.io/v1", request(t, store.KindIngress, admissionv1.Create, obj))
	resp, err := c.Post("https://"+s.Addr().String()+"/", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&review))
	require.False(t, review.Response.Allowed)
}

// --admission-webhook-cert and -key (inline PEM, KIC's flags) serve HTTPS with that
// certificate; a certificate that does not parse stops the controller at start.
func TestServerWithInlineCertificate(t *testing.T) {
	certPEM, keyPEM := testcert.SelfSigned(t, "konductor-webhook")
	h := Handler(newValidator(t, true, nil), logr.Discard())
	s, err := NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", Cert: string(certPEM), Key: string(keyPEM)}, h)
	require.NoError(t, err)
	require.Nil(t, s.Certificates, "inline PEM is not watched")
	askOverTLS(t, s, serve(t, s, certPEM))

	_, err = NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", Cert: string(certPEM), Key: "not a key"}, h)
	require.ErrorContains(t, err, "--admission-webhook-cert/--admission-webhook-key")
}

// --admission-webhook-cert-file and -key-file serve HTTPS with the certificate of the files;
// missing files stop the controller at start.
func TestServerWithCertificateFiles(t *testing.T) {
	certPEM, keyPEM := testcert.SelfSigned(t, "konductor-webhook")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	h := Handler(newValidator(t, true, nil), logr.Discard())
	s, err := NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}, h)
	require.NoError(t, err)
	require.NotNil(t, s.Certificates)
	askOverTLS(t, s, serve(t, s, certPEM))

	_, err = NewServer(ServerOptions{ListenAddr: "127.0.0.1:0", CertFile: filepath.Join(dir, "missing.crt"), KeyFile: keyFile}, h)
	require.ErrorContains(t, err, "--admission-webhook-cert-file/--admission-webhook-key-file")
}
