package manager

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kong/go-kong/kong"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/kongemu"
)

// fakeSleeps records the waits of a retryTransport instead of sleeping.
type fakeSleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (f *fakeSleeps) sleep(ctx context.Context, d time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	return ctx.Err() == nil
}

func retryClient(t *testing.T, mode kongemu.Mode) (*kongemu.Server, *http.Client, *fakeSleeps) {
	t.Helper()
	srv, err := kongemu.New(kongemu.Options{Mode: mode}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	sleeps := &fakeSleeps{}
	rt := newRetryTransport(http.DefaultTransport.(*http.Transport).Clone())
	rt.sleep = sleeps.sleep
	return srv, &http.Client{Transport: rt, Timeout: 10 * time.Second}, sleeps
}

func do(t *testing.T, c *http.Client, method, url string, body []byte) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestRetryTransport(t *testing.T) {
	const cfg = `{"_format_version":"3.0","services":[{"name":"s","host":"example.com"}]}`
	for _, tc := range []struct {
		name         string
		mode         kongemu.Mode
		fault        kongemu.Fault
		method, path string
		body         string
		wantStatus   int
		wantRequests int
		// wantMinWaits are the least waits expected between attempts, in order.
		wantMinWaits []time.Duration
	}{
		{name: "5xx then success", fault: kongemu.Fault{Count: 2, Status: 500},
			method: "GET", path: "/status", wantStatus: 200, wantRequests: 3,
			wantMinWaits: []time.Duration{adminRetryBase / 2, adminRetryBase}},
		{name: "429 honours Retry-After", fault: kongemu.Fault{Count: 1, Status: 429, RetryAfter: 3},
			method: "GET", path: "/status", wantStatus: 200, wantRequests: 2,
			wantMinWaits: []time.Duration{3 * time.Second}},
		{name: "connection closed without an answer", fault: kongemu.Fault{Count: 2, Drop: true},
			method: "GET", path: "/status", wantStatus: 200, wantRequests: 3},
		{name: "DB-less POST /config is sent again, body included", fault: kongemu.Fault{Count: 1, Status: 503},
			method: "POST", path: "/config", body: cfg, wantStatus: 201, wantRequests: 2},
		{name: "database-mode PUT is idempotent", mode: kongemu.Postgres, fault: kongemu.Fault{Count: 1, Status: 502},
			method: "PUT", path: "/services/s", body: `{"host":"example.com"}`, wantStatus: 200, wantRequests: 2},
		{name: "database-mode POST could create twice: not retried", mode: kongemu.Postgres, fault: kongemu.Fault{Count: 1, Status: 500},
			method: "POST", path: "/services", body: `{"name":"s","host":"example.com"}`, wantStatus: 500, wantRequests: 1},
		{name: "PATCH not retried", mode: kongemu.Postgres, fault: kongemu.Fault{Count: 1, Status: 500},
			method: "PATCH", path: "/services/s", body: `{"host":"example.org"}`, wantStatus: 500, wantRequests: 1},
		{name: "a refusal is an answer: not retried", fault: kongemu.Fault{Count: 1, Status: 400},
			method: "GET", path: "/status", wantStatus: 400, wantRequests: 1},
		{name: "gives up after the last attempt with the gateway's answer", fault: kongemu.Fault{Status: 500},
			method: "GET", path: "/status", wantStatus: 500, wantRequests: adminRetryAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, c, sleeps := retryClient(t, tc.mode)
			srv.InjectFault(tc.fault)
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			status, respBody := do(t, c, tc.method, srv.URL+tc.path, body)
			require.Equal(t, tc.wantStatus, status, respBody)
			require.Equal(t, tc.wantRequests, srv.RequestCount(tc.method, tc.path))
			require.Len(t, sleeps.waits, tc.wantRequests-1)
			for i, least := range tc.wantMinWaits {
				require.GreaterOrEqual(t, sleeps.waits[i], least)
			}
			for i, w := range sleeps.waits {
				if tc.fault.RetryAfter == 0 {
					require.LessOrEqual(t, w, adminRetryMaxBackoff, "wait %d", i)
				}
			}
			if tc.wantStatus == 500 && tc.wantRequests > 1 {
				require.Contains(t, respBody, "An unexpected error occurred", "the last answer is handed back readable")
			}
		})
	}
}

// A Retry-After longer than what is left of the request's time (--proxy-timeout-seconds) is
// not waited for: the answer comes back at once.
func TestRetryTransportDoesNotWaitPastTheDeadline(t *testing.T) {
	srv, c, sleeps := retryClient(t, "")
	srv.InjectFault(kongemu.Fault{Status: 429, RetryAfter: 60})
	c.Timeout = 5 * time.Second
	status, _ := do(t, c, "GET", srv.URL+"/status", nil)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, 1, srv.RequestCount("GET", "/status"))
	require.Empty(t, sleeps.waits)
}

func TestRetryAfter(t *testing.T) {
	require.Equal(t, 2*time.Second, retryAfter("2"))
	require.Equal(t, time.Duration(0), retryAfter(""))
	require.Equal(t, time.Duration(0), retryAfter("soon"))
	require.Equal(t, time.Duration(0), retryAfter("-1"))
	require.Equal(t, time.Duration(0), retryAfter(time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)))
	require.Greater(t, retryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), 50*time.Minute)
}

// The controller's Admin API client retries: go-kong's DB-less push and its /status read go
// through a gateway that answers 500 and drops connections a few times.
func TestAdminHTTPClientRetries(t *testing.T) {
	srv, err := kongemu.New(kongemu.Options{}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	cfg, err := config.Parse(nil, func(string) string { return "" })
	require.NoError(t, err)
	hc, err := AdminHTTPClient(cfg)
	require.NoError(t, err)
	hc.Transport.(interface{ Unwrap() http.RoundTripper }).Unwrap().(*retryTransport).sleep = (&fakeSleeps{}).sleep
	kc, err := kong.NewClient(kong.String(srv.URL), hc)
	require.NoError(t, err)

	srv.InjectFault(kongemu.Fault{Method: "POST", PathPrefix: "/config", Status: 500, Count: 3})
	srv.InjectFault(kongemu.Fault{Method: "GET", PathPrefix: "/status", Drop: true, Count: 2})
	require.NoError(t, kc.ReloadDeclarativeRawConfig(context.Background(),
		bytes.NewReader([]byte(`{"_format_version":"3.0","services":[{"name":"s","host":"example.com"}]}`)), true, true))
	_, err = kc.Status(context.Background())
	require.NoError(t, err)
	require.Equal(t, 4, srv.RequestCount("POST", "/config"))
	require.Equal(t, 3, srv.RequestCount("GET", "/status"))
	host := strings.TrimPrefix(srv.URL, "http://")
	require.Equal(t, 3.0, testutil.ToFloat64(adminRetries().WithLabelValues(host, "5xx")))
	// Go's transport itself sends a GET again once when a reused connection closes without
	// an answer; the rest are ours.
	require.GreaterOrEqual(t, testutil.ToFloat64(adminRetries().WithLabelValues(host, "network")), 1.0)
	require.NotNil(t, srv.Entity("services", "s"))
}
