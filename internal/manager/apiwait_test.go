package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func statusOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// An API server away at start is waited for: the metrics say it is unreachable, /healthz is
// live and /readyz is not; once the server answers, the wait returns and frees the addresses
// for the manager.
func TestWaitUntilServingWaitsForTheAPIServer(t *testing.T) {
	defer func(b struct{ first, max time.Duration }) { apiWaitBackoff = b }(apiWaitBackoff)
	apiWaitBackoff.first, apiWaitBackoff.max = time.Millisecond, 4*time.Millisecond
	var up atomic.Bool
	var probes atomic.Int32
	h := newAPIHealth(func(context.Context) error {
		probes.Add(1)
		if up.Load() {
			return nil
		}
		return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}, logr.Discard())
	var free [2]string // two loopback addresses nothing listens on
	for i := range free {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		free[i] = l.Addr().String()
		l.Close()
	}
	ep := startEndpoints{healthProbe: free[0], metrics: free[1]}
	done := make(chan error, 1)
	go func() { done <- h.waitUntilServing(context.Background(), ep) }()

	require.Eventually(t, func() bool { return probes.Load() >= 3 }, 5*time.Second, time.Millisecond, "retried")
	require.False(t, h.Reachable())
	require.Equal(t, 0.0, gauge(t, h, "konductor_kubernetes_api_reachable", ""))
	require.Equal(t, http.StatusOK, statusOf(t, "http://"+ep.healthProbe+"/healthz"))
	require.Equal(t, http.StatusServiceUnavailable, statusOf(t, "http://"+ep.healthProbe+"/readyz"))
	require.Equal(t, http.StatusOK, statusOf(t, "http://"+ep.metrics+"/metrics"))
	select {
	case err := <-done:
		t.Fatalf("returned while the API server is away: %v", err)
	default:
	}

	up.Store(true)
	require.NoError(t, <-done)
	require.True(t, h.Reachable())
	require.Equal(t, 1.0, gauge(t, h, "konductor_kubernetes_api_reachable", ""))
	for _, addr := range []string{ep.healthProbe, ep.metrics} {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err, "the manager can listen on %s", addr)
		l.Close()
	}
}

// A server that answers at once costs one probe and serves nothing; a stop during the wait
// ends it with the context's error.
func TestWaitUntilServingReturnsAtOnceOrOnStop(t *testing.T) {
	var probes atomic.Int32
	h := newAPIHealth(func(context.Context) error { probes.Add(1); return nil }, logr.Discard())
	require.NoError(t, h.waitUntilServing(context.Background(), startEndpoints{}))
	require.Equal(t, int32(1), probes.Load())

	h = newAPIHealth(func(context.Context) error { return errors.New("connection refused") }, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, h.waitUntilServing(ctx, startEndpoints{}), context.Canceled)
}

// A step of the start fails while the API server is away (no answer, 5xx, 429) and is tried
// again until it succeeds; an error that trying again does not change ends the start at once.
func TestStartStepRetriesOnlyWhileTheAPIServerIsAway(t *testing.T) {
	defer func(b struct{ first, max time.Duration }) { apiWaitBackoff = b }(apiWaitBackoff)
	apiWaitBackoff.first, apiWaitBackoff.max = time.Millisecond, 2*time.Millisecond
	h := newAPIHealth(func(context.Context) error { return nil }, logr.Discard())
	away := []error{
		&url.Error{Op: "Get", URL: "https://10.0.0.1/apis", Err: syscall.ECONNREFUSED},
		apierrors.NewServiceUnavailable("shutting down"),
		apierrors.NewInternalError(errors.New("etcd")),
		apierrors.NewTooManyRequests("later", 1),
		fmt.Errorf("discovering x/v1: %w", apierrors.NewTimeoutError("slow", 1)),
	}
	calls := 0
	require.NoError(t, h.startStep(context.Background(), startEndpoints{}, "step", func() error {
		defer func() { calls++ }()
		if calls < len(away) {
			return away[calls]
		}
		return nil
	}))
	require.Equal(t, len(away)+1, calls, "tried again after each error of an absent server")
	require.True(t, h.Reachable())

	for _, permanent := range []error{
		apierrors.NewForbidden(schema.GroupResource{Resource: "customresourcedefinitions"}, "", errors.New("rbac")),
		&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x", Kind: "Y"}},
		context.Canceled,
	} {
		calls = 0
		err := h.startStep(context.Background(), startEndpoints{}, "step", func() error { calls++; return permanent })
		require.ErrorIs(t, err, permanent)
		require.Equal(t, 1, calls, "%v is not retried", permanent)
	}
}
