package kongemu

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNodeEndpoints(t *testing.T) {
	cases := []struct {
		name   string
		mode   Mode
		method string
		path   string
		status int
		check  func(t *testing.T, body map[string]any)
	}{
		{"root dbless", DBLess, "GET", "/", 200, func(t *testing.T, b map[string]any) {
			require.Equal(t, "Welcome to kong", b["tagline"])
			require.Equal(t, "3.10.0", b["version"])
			require.Equal(t, "community", b["edition"])
			require.Regexp(t, `^[0-9a-f-]{36}$`, b["node_id"])
			conf := obj(b["configuration"])
			require.Equal(t, "off", conf["database"])
			require.Equal(t, "traditional_compatible", conf["router_flavor"])
			// Kong's default listens, parsed as listeners.lua reports them; stream off: {}.
			proxy := conf["proxy_listeners"].([]any)
			require.Len(t, proxy, 2)
			require.Equal(t, map[string]any{"ip": "0.0.0.0", "port": 8443.0, "listener": "0.0.0.0:8443 http2 ssl reuseport backlog=16384",
				"ssl": true, "http2": true, "proxy_protocol": false, "deferred": false, "bind": false, "reuseport": true, "backlog=16384": true}, proxy[1])
			require.Equal(t, false, obj(proxy[0])["ssl"])
			require.Equal(t, map[string]any{}, conf["stream_listeners"])
			avail := obj(obj(b["plugins"])["available_on_server"])
			for _, p := range []string{"key-auth", "basic-auth", "acl", "jwt", "cors", "rate-limiting",
				"request-transformer", "response-transformer", "ip-restriction", "correlation-id",
				"request-termination", "prometheus"} {
				require.Contains(t, avail, p)
			}
		}},
		{"root postgres", Postgres, "GET", "/", 200, func(t *testing.T, b map[string]any) {
			require.Equal(t, "postgres", obj(b["configuration"])["database"])
		}},
		{"root post", DBLess, "POST", "/", 405, func(t *testing.T, b map[string]any) {
			require.Equal(t, map[string]any{"message": "Method not allowed"}, b)
		}},
		{"root delete", Postgres, "DELETE", "/", 405, nil},
		{"status dbless", DBLess, "GET", "/status", 200, func(t *testing.T, b map[string]any) {
			require.Equal(t, emptyHash, b["configuration_hash"])
			require.NotContains(t, b, "database")
			srv := obj(b["server"])
			for _, k := range []string{"connections_accepted", "connections_active", "connections_handled",
				"connections_reading", "connections_writing", "connections_waiting", "total_requests"} {
				require.Contains(t, srv, k)
			}
			require.Contains(t, b, "memory")
		}},
		{"status postgres", Postgres, "GET", "/status", 200, func(t *testing.T, b map[string]any) {
			require.Equal(t, map[string]any{"reachable": true}, b["database"])
			require.NotContains(t, b, "configuration_hash")
		}},
		{"status post", DBLess, "POST", "/status", 405, nil},
		{"unknown path", Postgres, "GET", "/nope", 404, func(t *testing.T, b map[string]any) {
			require.Equal(t, map[string]any{"message": "Not found"}, b)
		}},
		{"bare targets", Postgres, "GET", "/targets", 404, nil},
		{"get config postgres", Postgres, "GET", "/config", 400, func(t *testing.T, b map[string]any) {
			require.Equal(t, "this endpoint is only available when Kong is configured to not use a database", b["message"])
		}},
		{"post config postgres", Postgres, "POST", "/config", 400, func(t *testing.T, b map[string]any) {
			require.Equal(t, "this endpoint is only available when Kong is configured to not use a database", b["message"])
		}},
		{"get config dbless empty", DBLess, "GET", "/config", 200, func(t *testing.T, b map[string]any) {
			require.Contains(t, b["config"], `_format_version: "3.0"`)
		}},
		{"plugins enabled", Postgres, "GET", "/plugins/enabled", 200, func(t *testing.T, b map[string]any) {
			require.Contains(t, b["enabled_plugins"], "cors")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Options{Mode: c.mode})
			status, body, _ := call(t, e, c.method, c.path, nil)
			require.Equal(t, c.status, status)
			if c.check != nil {
				c.check(t, obj(body))
			}
		})
	}
}

func TestStartPlainAndTLSWithToken(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		e := New(Options{Mode: Postgres, AdminToken: "s3cret"})
		srv, err := e.StartWith(StartOptions{TLS: useTLS})
		require.NoError(t, err)
		defer srv.Close()
		client := http.DefaultClient
		if useTLS {
			require.Regexp(t, regexp.MustCompile(`^https://127\.0\.0\.1:\d+$`), srv.URL)
			pool := x509.NewCertPool()
			require.True(t, pool.AppendCertsFromPEM(srv.CertPEM))
			client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		} else {
			require.Regexp(t, regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`), srv.URL)
		}
		res, err := client.Get(srv.URL + "/status")
		require.NoError(t, err)
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 401, res.StatusCode)
		require.JSONEq(t, `{"message":"Invalid credentials. Token or User credentials required"}`, string(raw))

		req, _ := http.NewRequest("GET", srv.URL+"/status", nil)
		req.Header.Set("Kong-Admin-Token", "s3cret")
		res, err = client.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
	}
}
