package explain

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongrouter"
	"github.com/konductor/konductor/internal/manifest"
)

// goldenDir holds the translator's golden cases: objects in, Kong configuration out.
const goldenDir = "../translator/testdata"

// goldenCase is a translator golden case loaded as explain and the emulator take it.
type goldenCase struct {
	name    string
	objects []client.Object
	// config is the case's golden output, every upstream given a target (so that a request
	// a route takes reaches a backend), as JSON.
	config []byte
	flavor kongrouter.Flavor
}

func loadGoldenCase(t *testing.T, dir string) goldenCase {
	t.Helper()
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	out, err := os.ReadFile(filepath.Join(dir, "out_golden.yaml"))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, sigsyaml.Unmarshal(out, &cfg))
	ups, _ := cfg["upstreams"].([]any)
	for _, u := range ups {
		u := u.(map[string]any)
		if ts, _ := u["targets"].([]any); len(ts) == 0 {
			u["targets"] = []any{map[string]any{"target": "10.99.0.1:80"}}
		}
	}
	js, err := json.Marshal(cfg)
	require.NoError(t, err)
	flavor := kongrouter.TraditionalCompatible
	if strings.Contains(string(out), "expression:") {
		flavor = kongrouter.Expressions
	}
	return goldenCase{name: filepath.Base(dir), objects: objs, config: js, flavor: flavor}
}

// requestsFor are requests each of the case's Ingress paths and HTTPRoute matches asks for
// (a path that is a regex of more than literal characters is left out: no request is made up
// for it), and one no route is meant to take.
func requestsFor(objs []client.Object) []Request {
	host := func(h string) string {
		if h == "" {
			return "example.com"
		}
		return strings.Replace(h, "*", "x", 1)
	}
	literal := func(p string) (string, bool) {
		p = strings.TrimPrefix(p, "/~")
		p = strings.TrimPrefix(strings.TrimSuffix(p, "$"), "^")
		return p, strings.HasPrefix(p, "/") && !strings.ContainsAny(p, `\[](){}*+?|.^$`)
	}
	out := []Request{{URL: "http://nothing.example.net/no/such/path"}}
	for _, o := range objs {
		switch o := o.(type) {
		case *netv1.Ingress:
			for _, r := range o.Spec.Rules {
				if r.HTTP == nil {
					continue
				}
				for _, p := range r.HTTP.Paths {
					if path, ok := literal(p.Path); ok {
						out = append(out, Request{URL: "http://" + host(r.Host) + path})
						out = append(out, Request{URL: "http://" + host(r.Host) + strings.TrimSuffix(path, "/") + "/more?q=1"})
					}
				}
			}
		case *gatewayv1.HTTPRoute:
			hosts := []string{""}
			for _, h := range o.Spec.Hostnames {
				hosts = append(hosts[:0:0], string(h))
				break
			}
			for _, rule := range o.Spec.Rules {
				for _, m := range rule.Matches {
					r := Request{Method: "GET", Header: http.Header{}}
					path := "/"
					if m.Path != nil && m.Path.Value != nil {
						var ok bool
						if path, ok = literal(*m.Path.Value); !ok {
							continue
						}
					}
					if m.Method != nil {
						r.Method = string(*m.Method)
					}
					for _, h := range m.Headers {
						if h.Type == nil || *h.Type == gatewayv1.HeaderMatchExact {
							r.Header.Set(string(h.Name), h.Value)
						}
					}
					r.URL = "http://" + host(hosts[0]) + path
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// Every explanation names the route the Kong emulator's proxy takes for the same request (the
// router of internal/kongrouter in its two uses), answers the status the proxy answers, and,
// when the request is proxied, the path and Host the backend receives: over the requests the
// objects of every translator golden case ask for.
func TestExplanationsAreWhatTheProxyDoes(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "*", "in.yaml"))
	require.NoError(t, err)
	checked, routed := 0, 0
	for _, in := range dirs {
		c := loadGoldenCase(t, filepath.Dir(in))
		t.Run(c.name, func(t *testing.T) {
			opts := kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: string(c.flavor), Edition: kongemu.Enterprise}
			emu := kongemu.New(opts)
			rec := httptest.NewRecorder()
			emu.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/config", strings.NewReader(string(c.config))))
			if rec.Code != http.StatusCreated {
				t.Skipf("Kong refuses the configuration: %.200s", rec.Body.String())
			}
			proxy := emu.Proxy(kongemu.ProxyOptions{AllowDebugHeader: true, Resolve: func(host string, port int) http.Handler {
				return &kongemu.EchoBackend{Pod: fmt.Sprintf("%s:%d", host, port)}
			}})
			cfg, err := kongrouter.ConfigFromDeclarative(c.flavor, c.config)
			require.NoError(t, err)
			e, err := New(Input{Config: cfg, Objects: c.objects})
			require.NoError(t, err)
			for _, r := range requestsFor(c.objects) {
				x, err := e.Explain(r)
				require.NoError(t, err, r.URL)
				got := sendThroughProxy(t, proxy, r)
				what := fmt.Sprintf("%s %s %v", r.Method, r.URL, r.Header)
				wantRoute := ""
				if x.Route != nil {
					wantRoute = x.Route.Name
					routed++
				}
				require.Equal(t, got.route, wantRoute, "%s: the route", what)
				if x.Service != nil {
					require.Equal(t, got.service, x.Service.Name, "%s: the service", what)
				}
				if x.Answer != nil {
					require.Equal(t, got.status, x.Answer.Status, "%s: Kong's answer (%s)", what, x.Answer.By)
				} else {
					require.Equal(t, http.StatusOK, got.status, "%s: %s", what, got.body)
					if x.Forward.Path == "/health" {
						// The echo server answers its health check itself.
						require.Equal(t, "OK", got.body)
						continue
					}
					require.Equal(t, got.echo.Path, x.Forward.Path, "%s: the upstream path (%s)", what, got.body)
					require.Equal(t, got.echo.Host, x.Forward.Host, "%s: the upstream Host", what)
				}
				checked++
			}
		})
	}
	t.Logf("%d requests explained as the proxy routes them, %d of them taken by a route", checked, routed)
	require.Greater(t, routed, 100)
}

type proxied struct {
	route, service string
	status         int
	body           string
	echo           kongemu.EchoResponse
}

func sendThroughProxy(t *testing.T, proxy http.Handler, r Request) proxied {
	t.Helper()
	u, err := url.Parse(r.URL)
	require.NoError(t, err)
	// As a client sends it: the path in the request line, the host in Host.
	req := httptest.NewRequest(r.Method, u.RequestURI(), nil)
	req.Host = u.Host
	if r.Method == "" {
		req.Method = http.MethodGet
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Set("Kong-Debug", "1")
	rec := httptest.NewRecorder()
	proxy.ServeHTTP(rec, req)
	out := proxied{route: rec.Header().Get("Kong-Route-Name"), service: rec.Header().Get("Kong-Service-Name"), status: rec.Code,
		body: rec.Body.String()}
	if rec.Code == http.StatusOK {
		_ = json.Unmarshal(rec.Body.Bytes(), &out.echo)
	}
	return out
}
