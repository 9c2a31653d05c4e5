package manager

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestAPIHealthKindOf(t *testing.T) {
	h := newAPIHealth(nil, logr.Discard())
	for path, want := range map[string]string{
		"/api/v1/services":                                           "Service",
		"/api/v1/namespaces/default/secrets":                         "Secret",
		"/apis/networking.k8s.io/v1/ingresses":                       "Ingress",
		"/apis/networking.k8s.io/v1/namespaces/a/ingresses":          "Ingress",
		"/apis/configuration.konghq.com/v1/kongplugins":              "KongPlugin",
		"/apis/gateway.networking.k8s.io/v1/httproutes":              "HTTPRoute",
		"/api/v1/namespaces/default/services/web":                    "",          // one object
		"/api/v1/namespaces":                                         "Namespace", // read for allowedRoutes Selectors
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions":    "",
		"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases": "",
		"/readyz": "",
	} {
		require.Equal(t, want, h.kindOf(path), path)
	}
}

// flakyTransport fails every request while down is set, as a stopped API server does.
type flakyTransport struct {
	down  atomic.Bool
	calls atomic.Int32
}

func (f *flakyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// An informer's request during an outage neither fails (which would put the reflector on its
// backoff of up to a minute) nor reads as anything: it waits for the server and is sent again
// once the probe finds the server back.
func TestAPIHealthHoldsInformerRequestsUntilTheServerIsBack(t *testing.T) {
	rt := &flakyTransport{}
	rt.down.Store(true)
	var probeUp atomic.Bool
	h := newAPIHealth(func(context.Context) error {
		if probeUp.Load() {
			return nil
		}
		return errors.New("connection refused")
	}, logr.Discard())
	h.probeInterval = time.Millisecond
	client := &http.Client{Transport: h.Wrap(rt)}

	done := make(chan error, 1)
	go func() {
		resp, err := client.Get("https://k8s/apis/networking.k8s.io/v1/ingresses?watch=true")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return !h.Reachable() }, 5*time.Second, time.Millisecond)
	require.Equal(t, 0.0, gauge(t, h, "konductor_kubernetes_api_reachable", ""))
	require.Equal(t, 0.0, gauge(t, h, "konductor_kubernetes_watch_up", "Ingress"))
	select {
	case err := <-done:
		t.Fatalf("request returned during the outage: %v", err)
	default:
	}

	rt.down.Store(false)
	probeUp.Store(true)
	require.NoError(t, <-done)
	require.True(t, h.Reachable())
	require.Equal(t, int32(2), rt.calls.Load(), "sent once, held, sent again once")
	require.Equal(t, 1.0, gauge(t, h, "konductor_kubernetes_api_reachable", ""))
	require.Equal(t, 1.0, gauge(t, h, "konductor_kubernetes_watch_up", "Ingress"))
}

// A request is held once: a server that answers the probe but still refuses the request gives
// the reflector its error (and its own backoff), not an endless loop. Writes are never held.
func TestAPIHealthHoldsARequestOnceAndNeverAWrite(t *testing.T) {
	rt := &flakyTransport{}
	rt.down.Store(true)
	h := newAPIHealth(func(context.Context) error { return nil }, logr.Discard())
	h.probeInterval = time.Millisecond
	client := &http.Client{Transport: h.Wrap(rt)}

	_, err := client.Get("https://k8s/api/v1/services")
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, int32(2), rt.calls.Load())

	_, err = client.Post("https://k8s/api/v1/namespaces/a/events", "application/json", strings.NewReader("{}"))
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, int32(3), rt.calls.Load())
}

// A 403 (RBAC) or 404 (CRD gone) answer is an answer: not held, and the kind's watch is down.
func TestAPIHealthWatchUpFollowsTheAnswers(t *testing.T) {
	status := atomic.Int32{}
	status.Store(http.StatusForbidden)
	rt := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: int(status.Load()), Body: http.NoBody}, nil
	})
	h := newAPIHealth(nil, logr.Discard())
	client := &http.Client{Transport: h.Wrap(rt)}
	resp, err := client.Get("https://k8s/apis/configuration.konghq.com/v1/kongplugins")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 0.0, gauge(t, h, "konductor_kubernetes_watch_up", "KongPlugin"))
	require.Equal(t, 1.0, gauge(t, h, "konductor_kubernetes_api_reachable", ""))
	status.Store(http.StatusOK)
	resp, err = client.Get("https://k8s/apis/configuration.konghq.com/v1/kongplugins")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 1.0, gauge(t, h, "konductor_kubernetes_watch_up", "KongPlugin"))
}

// gauge reads one series of h's metrics (kind "" for the unlabelled one).
func gauge(t *testing.T, h *apiHealth, name, kind string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(h))
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if kind == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == kind) {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no series %s{kind=%q}", name, kind)
	return 0
}
