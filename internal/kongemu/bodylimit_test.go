package kongemu

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongrules"
)

// configBodyOf is a valid {"config": ...} body of exactly size bytes (size >= 100): an
// upstream whose tag pads it.
func configBodyOf(t *testing.T, size int) string {
	t.Helper()
	head := `{"config":"{\"_format_version\":\"3.0\",\"upstreams\":[{\"name\":\"pad\",\"tags\":[\"`
	tail := `\"]}]}"}`
	require.GreaterOrEqual(t, size, len(head)+len(tail)+1)
	return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
}

func postConfigRequest(body io.Reader, length int64) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/config", body)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = length
	return r
}

func TestAdminBodyLimitDefaultIsKongs10m(t *testing.T) {
	e := New(Options{})
	_, body, _ := call(t, e, http.MethodGet, "/", nil)
	conf := body.(map[string]any)["configuration"].(map[string]any)
	assert.Equal(t, "10m", conf["nginx_admin_client_max_body_size"])
	assert.Equal(t, "10m", conf["nginx_admin_client_body_buffer_size"])

	over := configBodyOf(t, 10<<20+1)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, postConfigRequest(strings.NewReader(over), int64(len(over))))
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	assert.Equal(t, kongrules.RequestEntityTooLargeBody, rec.Body.String())
	assert.Equal(t, emptyHash, e.ConfigHash(), "nothing loaded")

	at := configBodyOf(t, 10<<20) // nginx refuses only a body larger than the limit
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, postConfigRequest(strings.NewReader(at), int64(len(at))))
	assert.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
}

func TestAdminBodyLimitAnswersAsNginx(t *testing.T) {
	e := New(Options{AdminMaxBodySize: "1k"})
	_, body, _ := call(t, e, http.MethodGet, "/", nil)
	assert.Equal(t, "1k", body.(map[string]any)["configuration"].(map[string]any)["nginx_admin_client_max_body_size"])

	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, postConfigRequest(strings.NewReader(configBodyOf(t, 1025)), 1025))
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	assert.Equal(t, "text/html", rec.Header().Get("Content-Type"))
	assert.Equal(t, "close", rec.Header().Get("Connection"))
	assert.Len(t, rec.Body.String(), 148, "the size in Kong's access log (KIC #5568)")

	// A chunked body (no Content-Length) is refused once more than the limit came.
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, postConfigRequest(strings.NewReader(configBodyOf(t, 1025)), -1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, postConfigRequest(strings.NewReader(configBodyOf(t, 1024)), -1))
	assert.Equal(t, http.StatusCreated, rec.Code, "read whole and handled: %s", rec.Body.String())

	// Every endpoint: the limit is the admin server's, before Kong's handlers.
	rec = httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/services", strings.NewReader(`{"host":"a.example","tags":["`+strings.Repeat("x", 1100)+`"]}`))
	r.Header.Set("Content-Type", "application/json")
	New(Options{Mode: Postgres, AdminMaxBodySize: "1k"}).ServeHTTP(rec, r)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
}

func TestAdminBodyLimitZeroIsNone(t *testing.T) {
	e := New(Options{AdminMaxBodySize: "0"})
	big := configBodyOf(t, 11<<20)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, postConfigRequest(strings.NewReader(big), int64(len(big))))
	assert.Equal(t, http.StatusCreated, rec.Code)
}

// Over the network the client gets the answer although nginx (here the emulator) does not
// read the body it refused.
func TestAdminBodyLimitOverTheNetwork(t *testing.T) {
	srv, err := New(Options{AdminMaxBodySize: "64k"}).Start()
	require.NoError(t, err)
	defer srv.Close()
	body := configBodyOf(t, 4<<20)
	resp, err := http.Post(srv.URL+"/config", "application/json", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, kongrules.RequestEntityTooLargeBody, string(got))
}

func TestParseNginxSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "10m": 10 << 20, "10M": 10 << 20, "512k": 512 << 10, "1g": 1 << 30, "12345": 12345} {
		got, err := kongrules.ParseNginxSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "m", "-1", "10mb", "1.5m", "ten"} {
		_, err := kongrules.ParseNginxSize(in)
		assert.Error(t, err, in)
	}
}
