package manager

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// retryTransport retries an Admin API request that failed in a way worth trying again: no
// answer (connection refused or reset, a connection closed without a response), a 5xx, or
// 429 (Kong still loading a previous configuration), with exponential backoff and jitter, and
// at least the wait a Retry-After header asks for. The whole exchange, retries included, stays
// within the request's deadline: the http.Client's Timeout (--proxy-timeout-seconds) sets it,
// and a wait that would pass it is not started.
//
// Only requests that can be sent twice without harm are retried: GET, HEAD, OPTIONS, PUT and
// DELETE, which Kong's Admin API treats as idempotent (a PUT upserts, a DELETE of what is gone
// answers 204), and the DB-less POST /config, which replaces the whole configuration. A POST
// that creates an entity in database mode, or a PATCH, may have been applied before the
// connection broke; sending it again could create a duplicate, so it fails at once and the
// sync loop's own retry (a new diff against what Kong then holds) takes over.
type retryTransport struct {
	next http.RoundTripper
	// maxAttempts bounds the attempts of one request, first included.
	maxAttempts int
	// base is the first backoff, doubled at each retry up to maxBackoff; each wait is drawn
	// between half and all of it (jitter), so that replicas and gateways do not retry in step.
	base, maxBackoff time.Duration
	// sleep waits d or until ctx ends (false then); tests replace it.
	sleep func(ctx context.Context, d time.Duration) bool
	// retries counts the retries by gateway host and reason; nil counts nothing.
	retries *prometheus.CounterVec
}

// Reasons of a retry, the values of konductor_admin_api_retries_total's "reason" label.
const (
	retryReasonNetwork   = "network" // no answer
	retryReasonStatus5xx = "5xx"
	retryReasonStatus429 = "429"
)

// adminRetries is konductor_admin_api_retries_total, in controller-runtime's registry.
var adminRetries = sync.OnceValue(func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "konductor_admin_api_retries_total",
		Help: "Admin API requests sent again, by gateway host (host:port of the Admin API) and reason (network, 5xx, 429).",
	}, []string{"host", "reason"})
	metrics.Registry.MustRegister(c)
	return c
})

// Default retry schedule of Admin API requests: up to 6 attempts, 100 ms doubling to 2 s
// (about 4.6 s of waiting at most, well inside the default 30 s --proxy-timeout-seconds).
const (
	adminRetryAttempts   = 6
	adminRetryBase       = 100 * time.Millisecond
	adminRetryMaxBackoff = 2 * time.Second
	// maxBufferedErrorBody bounds the error body kept in memory to hand back if the last
	// attempt fails too.
	maxBufferedErrorBody = 1 << 20
)

func newRetryTransport(next http.RoundTripper) *retryTransport {
	return &retryTransport{next: next, maxAttempts: adminRetryAttempts, base: adminRetryBase, maxBackoff: adminRetryMaxBackoff,
		sleep: sleepCtx, retries: adminRetries()}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// RoundTrip implements http.RoundTripper.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !retriable(req) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	backoff := t.base
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			try = req.Clone(ctx)
			try.Body = body
		}
		resp, err := t.next.RoundTrip(try)
		wait, again := retryWait(resp, err, ctx)
		if !again || attempt == t.maxAttempts {
			return resp, err
		}
		if t.retries != nil {
			t.retries.WithLabelValues(req.URL.Host, retryReason(resp)).Inc()
		}
		// Jitter: between half and all of the backoff; a Retry-After is a floor.
		d := backoff/2 + rand.N(backoff/2+1) //nolint:gosec // jitter, not a secret
		d = max(d, wait)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			return resp, err // the wait would outlast --proxy-timeout-seconds: give up now
		}
		if resp != nil {
			// Kept for the caller if no later attempt is made (ctx ends during the wait).
			resp = bufferBody(resp)
		}
		if !t.sleep(ctx, d) {
			return resp, err
		}
		if resp != nil {
			_ = resp.Body.Close()
		}
		backoff = min(backoff*2, t.maxBackoff)
	}
}

// retriable reports whether req may be sent again: an idempotent method, or POST /config.
func retriable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false // the body cannot be read again
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost:
		return strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/config")
	}
	return false
}

// retryWait reports whether an attempt's outcome is worth another attempt, and the least wait
// the gateway asked for (Retry-After).
func retryWait(resp *http.Response, err error, ctx context.Context) (time.Duration, bool) { //nolint:revive // ctx last reads as "given the request's context"
	if err != nil {
		// No answer. The caller's own end (its deadline or cancellation) is not retried.
		return 0, ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return 0, false
	}
	return retryAfter(resp.Header.Get("Retry-After")), true
}

func retryReason(resp *http.Response) string {
	switch {
	case resp == nil:
		return retryReasonNetwork
	case resp.StatusCode == http.StatusTooManyRequests:
		return retryReasonStatus429
	}
	return retryReasonStatus5xx
}

// retryAfter parses a Retry-After value: seconds, or an HTTP date; 0 when absent or invalid.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0)
	}
	return 0
}

// bufferBody reads resp's body into memory (bounded), so that the response stays readable
// after its connection is reused or the request's context ends.
func bufferBody(resp *http.Response) *http.Response {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBufferedErrorBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}
