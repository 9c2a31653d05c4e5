package diagnostics

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
)

const (
	aliceKey   = "alice-very-secret-key"
	bobPass    = "bob-password-9"
	pluginPass = "redis-pw-secret"
	privateKey = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
)

// secretState is a configuration with one secret of each kind the dumps mask.
func secretState(service string) *kongstate.State {
	return &kongstate.State{
		Services: []*file.FService{{Service: kong.Service{Name: kong.String(service), Host: kong.String("echo.default.80.svc")}}},
		Consumers: []*file.FConsumer{{
			Consumer:   kong.Consumer{Username: kong.String("alice")},
			KeyAuths:   []*kong.KeyAuth{{Key: kong.String(aliceKey)}},
			BasicAuths: []*kong.BasicAuth{{Username: kong.String("bob"), Password: kong.String(bobPass)}},
		}},
		Certificates: []*file.FCertificate{{ID: kong.String("cert-1"), Cert: kong.String("PUBLIC-CERT"), Key: kong.String(privateKey)}},
		Plugins: []*file.FPlugin{{Plugin: kong.Plugin{Name: kong.String("rate-limiting"),
			Config: kong.Configuration{"minute": 5, "redis_password": pluginPass}}}},
	}
}

func target(service string) *dataplane.Target {
	return dataplane.NewTarget(translator.Result{State: secretState(service)}, nil)
}

func get(t *testing.T, h http.Handler, path string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, rec.Header().Get("Content-Type"), string(body)
}

// dump is the {"hash", "config"} body, with the configuration's bytes as served.
type dump struct {
	Hash   string          `json:"hash"`
	Config json.RawMessage `json:"config"`
}

func readDump(t *testing.T, body string) dump {
	t.Helper()
	var d dump
	require.NoError(t, json.Unmarshal([]byte(body), &d), body)
	return d
}

func requireNoSecrets(t *testing.T, s string) {
	t.Helper()
	for _, secret := range []string{aliceKey, bobPass, pluginPass, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"} {
		require.NotContains(t, s, secret)
	}
}

// Before any sync the dumps are empty (204), the fallback not triggered; diffs are not
// recorded, and without --dump-sensitive-config the report says why it shows none.
func TestEndpointsBeforeAnySync(t *testing.T) {
	s := New(Options{DumpConfig: true})
	for _, path := range []string{"/debug/config/successful", "/debug/config/failed", "/debug/config/raw-error"} {
		code, _, body := get(t, s.Handler(), path)
		require.Equal(t, http.StatusNoContent, code, path)
		require.Empty(t, body, path)
	}
	code, ctype, body := get(t, s.Handler(), "/debug/config/fallback")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/json", ctype)
	require.JSONEq(t, `{"status":"not-triggered"}`, body)

	code, _, body = get(t, s.Handler(), "/debug/config/diff-report")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "diffs include sensitive data: set CONTROLLER_DUMP_SENSITIVE_CONFIG=true in environment to enable")
	_, _, body = get(t, New(Options{DumpConfig: true, DumpSensitiveConfig: true}).Handler(), "/debug/config/diff-report")
	require.Contains(t, body, `"message":"no diffs available"`)
}

// Without --dump-config there are no dumps and the loop is given no Diagnostics (a nil
// interface, not a nil *Recorder), so it keeps nothing; profiling handlers are served when
// given.
func TestWithoutDumpConfig(t *testing.T) {
	pprof := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("profile")) })
	s := New(Options{Profiling: map[string]http.Handler{"/debug/pprof/": pprof}})
	require.Nil(t, s.Diagnostics())
	code, _, _ := get(t, s.Handler(), "/debug/config/successful")
	require.Equal(t, http.StatusNotFound, code)
	code, _, body := get(t, s.Handler(), "/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "profile", body)

	code, _, _ = get(t, New(Options{DumpConfig: true}).Handler(), "/debug/pprof/")
	require.Equal(t, http.StatusNotFound, code, "no profiling without --profiling")
}

// The last configuration taken is served with the SHA-256 of what was sent; its secrets
// (credentials, a certificate's key, a plugin's secret field) are masked unless
// --dump-sensitive-config, and the rest is left as it was.
func TestSuccessfulDumpIsRedactedUnlessSensitive(t *testing.T) {
	tg := target("echo")
	sent, err := tg.SentConfig()
	require.NoError(t, err)
	sum := sha256.Sum256(sent)

	s := New(Options{DumpConfig: true})
	s.Diagnostics().Succeeded("http://kong:8001", tg, false)
	code, ctype, body := get(t, s.Handler(), "/debug/config/successful")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/json", ctype)
	d := readDump(t, body)
	require.Equal(t, hex.EncodeToString(sum[:]), d.Hash)
	requireNoSecrets(t, body)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(d.Config, &cfg))
	require.Equal(t, "echo", cfg["services"].([]any)[0].(map[string]any)["name"])
	require.Equal(t, "PUBLIC-CERT", cfg["certificates"].([]any)[0].(map[string]any)["cert"], "a certificate is no secret")
	require.Contains(t, string(d.Config), "[redacted]")

	sensitive := New(Options{DumpConfig: true, DumpSensitiveConfig: true})
	sensitive.Diagnostics().Succeeded("http://kong:8001", tg, false)
	_, _, body = get(t, sensitive.Handler(), "/debug/config/successful")
	d = readDump(t, body)
	require.Equal(t, string(sent), string(d.Config), "with --dump-sensitive-config: the configuration as sent")
	require.Equal(t, hex.EncodeToString(sum[:]), d.Hash)
}

// A refused configuration is served under failed, Kong's answer under raw-error (text, with
// the configuration's secrets Kong quoted masked), and neither replaces the last taken one.
func TestRefusalIsServedUnderFailedAndRawError(t *testing.T) {
	good, bad := target("good"), target("bad")
	raw := `{"code":14,"name":"invalid declarative configuration","message":"declarative config is invalid",` +
		`"flattened_errors":[{"entity_type":"keyauth_credential","entity":{"key":"` + aliceKey + `"},` +
		`"errors":[{"type":"field","field":"key","message":"duplicate"}]}]}`
	for _, sensitive := range []bool{false, true} {
		s := New(Options{DumpConfig: true, DumpSensitiveConfig: sensitive})
		s.Diagnostics().Succeeded("http://kong:8001", good, false)
		s.Diagnostics().Failed("http://kong:8001", bad, &dataplane.RejectedError{Gateway: "http://kong:8001", Raw: []byte(raw)}, false)

		code, _, body := get(t, s.Handler(), "/debug/config/failed")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"name":"bad"`)
		code, _, body = get(t, s.Handler(), "/debug/config/successful")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"name":"good"`)

		code, ctype, body := get(t, s.Handler(), "/debug/config/raw-error")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "text/plain", ctype)
		require.Contains(t, body, "declarative config is invalid")
		if sensitive {
			require.Equal(t, raw, body, "with --dump-sensitive-config: Kong's body as it came")
		} else {
			require.NotContains(t, body, aliceKey)
			require.Contains(t, body, `"field":"key"`, "what Kong said stays")
		}
	}
}

// A refusal without a body (database mode) clears raw-error: the body beside the failed
// dump is always that refusal's.
func TestRefusalWithoutBodyClearsRawError(t *testing.T) {
	s := New(Options{DumpConfig: true})
	s.Diagnostics().Failed("a", target("x"), &dataplane.RejectedError{Raw: []byte("first")}, false)
	code, _, body := get(t, s.Handler(), "/debug/config/raw-error")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "first", body)
	s.Diagnostics().Failed("a", target("y"), &dataplane.RejectedError{RestApplied: true}, false)
	code, _, _ = get(t, s.Handler(), "/debug/config/raw-error")
	require.Equal(t, http.StatusNoContent, code)
}

// The fallback in force is served until the gateway that needed it takes a whole
// configuration again; another gateway's success does not clear it.
func TestFallbackIsServedUntilItsGatewayTakesAWholeConfiguration(t *testing.T) {
	s := New(Options{DumpConfig: true})
	d := s.Diagnostics()
	plugin := kongstate.ObjectRef{Group: "configuration.konghq.com", Version: "v1", Kind: "KongPlugin", Namespace: "default", Name: "broken", UID: "uid-p"}
	ing := kongstate.ObjectRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "default", Name: "b", UID: "uid-b"}
	d.Fallback("a", dataplane.FallbackResult{Broken: []kongstate.ObjectRef{plugin}, Excluded: []kongstate.ObjectRef{ing, plugin}})
	want := `{"status":"triggered",
		"brokenObjects":[{"group":"configuration.konghq.com","version":"v1","kind":"KongPlugin","namespace":"default","name":"broken","id":"uid-p"}],
		"excludedObjects":[{"group":"networking.k8s.io","version":"v1","kind":"Ingress","namespace":"default","name":"b","id":"uid-b"},
			{"group":"configuration.konghq.com","version":"v1","kind":"KongPlugin","namespace":"default","name":"broken","id":"uid-p"}]}`
	_, _, body := get(t, s.Handler(), "/debug/config/fallback")
	require.JSONEq(t, want, body)

	d.Succeeded("b", target("x"), false)
	d.Succeeded("a", target("x"), true)
	_, _, body = get(t, s.Handler(), "/debug/config/fallback")
	require.JSONEq(t, want, body, "another gateway's success, or the fallback taken, leaves it")

	d.Succeeded("a", target("x"), false)
	_, _, body = get(t, s.Handler(), "/debug/config/fallback")
	require.JSONEq(t, `{"status":"not-triggered"}`, body)
}

// The server listens on its port, serves, and stops with its context.
func TestServerStartsAndStops(t *testing.T) {
	s := New(Options{DumpConfig: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	require.Eventually(t, func() bool { return s.Addr() != nil }, 5*time.Second, time.Millisecond)
	_, port, err := net.SplitHostPort(s.Addr().String())
	require.NoError(t, err)
	resp, err := http.Get("http://127.0.0.1:" + port + "/debug/config/successful")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.False(t, s.NeedLeaderElection())
	cancel()
	require.NoError(t, <-done)
}

// A port in use is logged and the controller goes on (KIC's behaviour): Start returns nil.
func TestPortInUseDoesNotStopTheController(t *testing.T) {
	first := New(Options{DumpConfig: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = first.Start(ctx) }()
	require.Eventually(t, func() bool { return first.Addr() != nil }, 5*time.Second, time.Millisecond)
	_, port, err := net.SplitHostPort(first.Addr().String())
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	require.NoError(t, New(Options{Port: p}).Start(ctx))
}

// /debug/graph passes the object asked for to the controller's answer and serves it as JSON;
// a query without kind or name, or one the answer refuses, is a 400 that says why.
func TestGraphEndpoint(t *testing.T) {
	s := New(Options{Graph: func(_ *http.Request, kind, namespace, name string) (any, error) {
		if kind != "Secret" {
			return nil, errors.New("kind " + kind + ": not a kind konductor reads")
		}
		return map[string]string{"object": kind + " " + namespace + "/" + name}, nil
	}})
	code, ctype, body := get(t, s.Handler(), "/debug/graph?kind=Secret&namespace=default&name=x")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/json", ctype)
	require.JSONEq(t, `{"object":"Secret default/x"}`, body)
	code, _, body = get(t, s.Handler(), "/debug/graph?kind=Secret")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "needs kind and name")
	code, _, body = get(t, s.Handler(), "/debug/graph?kind=Nothing&name=x")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "kind Nothing: not a kind konductor reads")
	code, _, _ = get(t, New(Options{DumpConfig: true}).Handler(), "/debug/graph?kind=Secret&name=x")
	require.Equal(t, http.StatusNotFound, code, "no graph without an answer")
}
