package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/konductor/konductor/internal/kongemu"
)

// The summary `make run` prints: every kind Kong holds, with names resolved.
func TestKongSummary(t *testing.T) {
	srv, err := kongemu.New(kongemu.Options{Mode: kongemu.Postgres}).Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, req := range []struct{ path, body string }{
		{"/services", `{"name":"default.echo.80","host":"echo.default.80.svc"}`},
		{"/services/default.echo.80/routes", `{"name":"default.echo.echo..80","paths":["/"]}`},
		{"/routes/default.echo.echo..80/plugins", `{"name":"correlation-id"}`},
		{"/upstreams", `{"name":"echo.default.80.svc"}`},
		{"/upstreams/echo.default.80.svc/targets", `{"target":"10.0.0.1:8080"}`},
	} {
		resp, err := http.Post(srv.URL+req.path, "application/json", strings.NewReader(req.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d", req.path, resp.StatusCode)
		}
	}
	var out bytes.Buffer
	if err := kongSummary([]string{"--url", srv.URL}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"SERVICES (1)", "default.echo.80", "ROUTES (1)", "default.echo.echo..80",
		"PLUGINS (1)", "correlation-id", "route default.echo.echo..80",
		"UPSTREAMS (1)", "TARGETS (1)", "10.0.0.1:8080", "upstream echo.default.80.svc",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
