package dbmode

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// inflight is a transport that counts the requests in flight and the most seen at once. The
// first requests wait until limit of them are in flight (a replay that asked one request at a
// time would never get there: release is then closed by the test), and a little longer, so
// that a replay that does not bound itself has sent more by then.
type inflight struct {
	next    http.RoundTripper
	limit   int
	mu      sync.Mutex
	now     int
	most    int
	reached chan struct{}
	once    sync.Once
}

func (t *inflight) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.now++
	t.most = max(t.most, t.now)
	if t.now >= t.limit {
		t.once.Do(func() { close(t.reached) })
	}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.now--
		t.mu.Unlock()
	}()
	<-t.reached
	time.Sleep(10 * time.Millisecond) // room for requests beyond the bound to show; not an assertion
	return t.next.RoundTrip(r)
}

// The replay of a prepared dump asks Kong at most --kong-admin-concurrency requests at once,
// and does ask that many (the dump of 12 upstreams has more lists than that).
func TestReplayAsksAtMostConcurrencyAtOnce(t *testing.T) {
	const concurrency = 3
	_, g := newKong(t, Options{Concurrency: concurrency})
	s := translate(t, objects(apps(12)...))
	require.NoError(t, g.Sync(ctx, target(s)))
	require.NoError(t, g.Prepare(ctx, target(s)))
	p := g.takePrepared()
	require.NotNil(t, p)
	require.Greater(t, len(p.answers), concurrency)

	counter := &inflight{next: g.replay.Transport, limit: concurrency, reached: make(chan struct{})}
	g.replay.Transport = counter
	same, err := g.replayDump(ctx, p.answers)
	require.NoError(t, err)
	require.True(t, same, "Kong unchanged")
	require.Equal(t, concurrency, counter.most)
}

// BenchmarkReplayDump: the replay of a prepared dump of 2,000 Ingresses (about 2,000
// requests), the whole of a prepared first sync's dump phase. cpu-ms/op is the process's
// CPU, the emulator's answers included.
func BenchmarkReplayDump(b *testing.B) {
	_, g := newKong(b, Options{})
	s := translate(b, objects(apps(2000)...))
	if err := g.Sync(ctx, target(s)); err != nil {
		b.Fatal(err)
	}
	if err := g.Prepare(ctx, target(s)); err != nil {
		b.Fatal(err)
	}
	p := g.takePrepared()
	if p == nil {
		b.Fatal("nothing prepared")
	}
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		same, err := g.replayDump(ctx, p.answers)
		if err != nil || !same {
			b.Fatalf("same %t, err %v", same, err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
