package manager

import (
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
