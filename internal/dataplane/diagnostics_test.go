package dataplane

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/konductor/konductor/internal/kongstate"
)

// A dump of a DB-less target reads the configuration out of the body the gateways were
// sent: the same bytes as DBLessConfig, without the renderer rendering (and keeping)
// the form DB-less gateways never use.
func TestSentConfigReadsTheDBLessBody(t *testing.T) {
	snap, err := newStore(t, cluster()).Snapshot(context.Background())
	require.NoError(t, err)
	res := translate(snap)
	r := &kongstate.Renderer{}
	tg := NewTarget(res, r)
	_, err = tg.DBLessBody()
	require.NoError(t, err)

	sent, err := tg.SentConfig()
	require.NoError(t, err)
	wantSent, err := res.State.DBLessConfig() // without the fields Kong fills the same (issue #45)
	require.NoError(t, err)
	require.Equal(t, string(wantSent), string(sent))
	want, err := res.State.DeclarativeConfig()
	require.NoError(t, err)
	plain, quoted := r.KeptBytes()
	require.Zero(t, plain, "the dump rendered nothing through the loop's renderer")
	require.NotZero(t, quoted)

	// Nothing rendered yet (a target no gateway synced): rendered by the State alone.
	fresh := NewTarget(res, r)
	sent, err = fresh.SentConfig()
	require.NoError(t, err)
	require.Equal(t, string(want), string(sent))
	plain, _ = r.KeptBytes()
	require.Zero(t, plain)
}

type told struct {
	mu        sync.Mutex
	succeeded []string
	failed    []*RejectedError
}

func (d *told) Succeeded(url string, _ *Target, _ bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.succeeded = append(d.succeeded, url)
}

func (d *told) Failed(_ string, _ *Target, rej *RejectedError, _ bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failed = append(d.failed, rej)
}

func (d *told) Fallback(string, FallbackResult) {}

func (d *told) counts() (int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.succeeded), len(d.failed)
}

// The loop tells its Diagnostics of refusals, with the gateway's answer, and of syncs that
// took; a sync that failed otherwise (Kong unreachable) says nothing about the
// configuration and is not told, however often it is retried.
func TestLoopTellsDiagnosticsOfRefusalsNotOfOutages(t *testing.T) {
	rej := &RejectedError{Gateway: "counting", Message: "invalid", Raw: []byte(`{"message":"invalid"}`)}
	for _, tc := range []struct {
		name              string
		err               error
		succeeded, failed int
	}{
		{"refused", rej, 0, 1},
		{"unreachable", errors.New("connection refused"), 0, 0},
		{"taken", nil, 1, 0},
	} {
		d := &told{}
		gw := &countingGateway{fail: func(int) error { return tc.err }}
		l := NewLoop(Options{
			Source: newStore(t, cluster()), Barrier: syncedBarrier{}, Translate: translate,
			Gateways: []Gateway{gw}, Period: time.Hour, Logger: logr.Discard(), Diagnostics: d,
			Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30},
		})
		stop := run(t, l)
		// Three syncs of the unreachable gateway (retried); one of the others (a refused or
		// taken configuration is not sent again).
		require.Eventually(t, func() bool {
			s, f := d.counts()
			return s+f >= 1 || gw.count() >= 3
		}, 5*time.Second, time.Millisecond, tc.name)
		stop()
		s, f := d.counts()
		require.Equal(t, tc.succeeded, s, tc.name)
		require.Equal(t, tc.failed, f, tc.name)
		if tc.failed > 0 {
			require.Same(t, rej, d.failed[0], "the refusal itself, with Kong's answer")
		}
	}
}
