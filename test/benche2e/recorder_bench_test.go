package benche2e

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// configBody is the body of the POST /config konductor sends for n of the benchmark's
// Ingresses.
func configBody(tb testing.TB, n int) []byte {
	tb.Helper()
	res := translator.Build(benchdata.Snapshot(n), translator.Options{})
	cfg, err := res.State.DeclarativeConfig()
	if err != nil {
		tb.Fatal(err)
	}
	return dbless.Body(cfg)
}

// BenchmarkRecordingKongPost is one POST /config of 3,000 Ingresses' configuration (3.8 MB)
// to the recording Kong over loopback, on a kept-alive connection: read-ms is from the
// request's start until the recording Kong has read the body (what bench-e2e's change ->
// push ends with), answer-ms until its answer came back (how long the controller's sync stays
// busy with it).
func BenchmarkRecordingKongPost(b *testing.B) {
	body := configBody(b, 3000)
	kong := newRecordingKong(nil, 1)
	srv := httptest.NewServer(kong)
	defer srv.Close()
	client := srv.Client()
	// The first push is complete: the hosts of the next ones are not counted, as in a run.
	if resp, err := client.Post(srv.URL+"/config", "application/json", bytes.NewReader(body)); err != nil {
		b.Fatal(err)
	} else {
		resp.Body.Close()
	}
	var reads, answers []time.Duration
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		kong.await("never.example.com")
		start := time.Now()
		resp, err := client.Post(srv.URL+"/config", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		answers = append(answers, time.Since(start))
		kong.mu.Lock()
		reads = append(reads, kong.pushes[len(kong.pushes)-1].at.Sub(start))
		kong.mu.Unlock()
	}
	b.StopTimer()
	b.ReportMetric(float64(Percentile(reads, 50))/1e6, "read-ms")
	b.ReportMetric(float64(Percentile(answers, 50))/1e6, "answer-ms")
}
