package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/konductor/konductor/test/benche2e"
)

// The end-to-end benchmark (`make bench-e2e`) in its tiny version, so that it keeps working:
// 50 Ingresses, 3 changes, status writes on, the controller's own binary as a process. It
// checks what the benchmark counts, never how fast (docs/performance.md has the figures).
func TestBenchE2ESmall(t *testing.T) {
	withOwnAPIServer(t)
	dir, err := assets()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "konductor")
	build := exec.Command("go", "build", "-o", bin, "./cmd/konductor")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building konductor: %v\n%s", err, out)
	}
	cfg := benche2e.Config{
		Binary: bin, Assets: dir, CRDs: filepath.Join(repoRoot(), "config", "crd"),
		Ingresses: 50, Changes: 3, ChangeInterval: 100 * time.Millisecond, Status: true, Secrets: 2,
		LogDir: t.TempDir(), Seed: 1,
		HeapProfile: filepath.Join(t.TempDir(), "heap.pb.gz"), // through --profiling
		CPUProfile:  filepath.Join(t.TempDir(), "cpu.pb.gz"),
		// Two more starts, alternating with a second binary (the same one here).
		Starts: 2, Compare: bin,
		// The start's trace (each start's), the API server's profile and a pause before the
		// first start.
		StartTrace: filepath.Join(t.TempDir(), "start.trace"), Settle: time.Second,
		APIServerCPUProfile: filepath.Join(t.TempDir(), "apiserver.pb.gz"),
		// The debug lines the per-stage breakdown is read from.
		Breakdown: true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := benche2e.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(cfg.HeapProfile); err != nil || fi.Size() == 0 {
		t.Errorf("no heap profile from --profiling's /debug/pprof/heap: %v", err)
	}
	if fi, err := os.Stat(cfg.CPUProfile); err != nil || fi.Size() == 0 {
		t.Errorf("no CPU profile from --profiling's /debug/pprof/profile: %v", err)
	}
	for _, f := range []string{cfg.StartTrace, cfg.StartTrace + ".start-1", cfg.StartTrace + ".start-2", cfg.APIServerCPUProfile, cfg.APIServerCPUProfile + ".settle"} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("nothing written to %s: %v", f, err)
		}
	}
	if res.APIServerGCsAtFirstPush < 0 {
		t.Errorf("the API server's collections were not read")
	}
	for i, s := range res.StartSamples {
		if s.APIServerGCs < 0 {
			t.Errorf("extra start %d: the API server's collections were not read", i+1)
		}
	}
	var report strings.Builder
	res.Report(&report, cfg)
	t.Log("\n" + report.String())
	if res.StartToFirstPush <= 0 {
		t.Errorf("no start -> first complete push measured: %v", res.StartToFirstPush)
	}
	if res.Missed != 0 || len(res.ChangeLatencies) != cfg.Changes {
		t.Errorf("changes seen %d, missed %d; want all %d seen", len(res.ChangeLatencies), res.Missed, cfg.Changes)
	}
	if res.FirstBodyBytes <= 0 || res.LastBodyBytes <= 0 {
		t.Errorf("body sizes not measured: first %d, last %d", res.FirstBodyBytes, res.LastBodyBytes)
	}
	if res.PushesAfterFirst < 1 {
		t.Errorf("no push after the first complete one, yet %d changes were seen", len(res.ChangeLatencies))
	}
	if res.RSSBytes <= 0 || res.PeakRSSBytes < res.RSSBytes || res.CPUSeconds <= 0 || res.RSSAnonBytes <= 0 || res.RSSFileBytes <= 0 ||
		res.ChangeCPUSeconds <= 0 || res.ChangeCPUSeconds > res.CPUSeconds {
		t.Errorf("process figures not read: RSS %d (anonymous %d, file-backed %d), peak %d, CPU %v, after the first push %v",
			res.RSSBytes, res.RSSAnonBytes, res.RSSFileBytes, res.PeakRSSBytes, res.CPUSeconds, res.ChangeCPUSeconds)
	}
	if len(res.StartSamples) != cfg.Starts {
		t.Errorf("extra starts measured %d, want %d", len(res.StartSamples), cfg.Starts)
	}
	for _, s := range res.StartSamples {
		if s.FirstPush <= 0 || s.CPUSeconds <= 0 || s.PeakRSS <= 0 {
			t.Errorf("extra start not measured: %+v", s)
		}
	}
	// Every change told apart (changes 100 ms apart may share a round: the later one then is
	// not), each one's stages adding up to no more than the slowest change (to the
	// microsecond: the stages read the wall clock, the latencies the monotonic one).
	if len(res.Stages) == 0 || len(res.Stages) > len(res.ChangeLatencies) {
		t.Errorf("%d changes told apart by stage, of %d", len(res.Stages), len(res.ChangeLatencies))
	}
	for _, s := range res.Stages {
		var sum time.Duration
		for _, d := range s.Stages {
			sum += d
		}
		if sum <= 0 || sum > benche2e.Percentile(res.ChangeLatencies, 100)+time.Microsecond {
			t.Errorf("stages %v add up to %s; the slowest change took %s", s.Stages, sum, benche2e.Percentile(res.ChangeLatencies, 100))
		}
	}
	if !strings.HasPrefix(res.Etcd, "data in ") || res.ChangeMachine.Load1 == "" {
		t.Errorf("etcd's settings %q or the machine's load %q not read", res.Etcd, res.ChangeMachine.Load1)
	}
	if len(res.Unserved) != 0 {
		t.Errorf("the controller asked the recording Kong what it does not serve: %v", res.Unserved)
	}
}
