package dbmode

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kong/go-kong/kong"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// requestsPerSync runs b.N syncs of s against an emulator already holding it and reports the
// Admin API requests and writes per sync, from the emulator's counters.
func reportRequests(b *testing.B, e *kongemu.Emulator, run func(i int)) {
	b.Helper()
	e.ResetAudit()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(i)
	}
	b.StopTimer()
	total := e.RequestCount("", "")
	writes := len(e.Audit())
	b.ReportMetric(float64(total)/float64(b.N), "requests/op")
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(total-e.RequestCount("GET", ""))/float64(b.N)+0, "nonGET/op")
}

// BenchmarkSyncUnchanged: 200 Ingresses, nothing changed. Target: only the list calls.
func BenchmarkSyncUnchanged(b *testing.B) {
	e, g := newKong(b, Options{})
	s := translate(b, objects(apps(200)...))
	if err := g.Sync(ctx, target(s)); err != nil {
		b.Fatal(err)
	}
	reportRequests(b, e, func(int) {
		if err := g.Sync(ctx, target(s)); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkNewLeaderFirstSync: Kong already holds n Ingresses' entities (the previous
// leader's), nothing changed: a new leader's first sync, which is one dump of Kong (one target
// list per upstream) and a diff that finds nothing (issue #13: <= 0.5 s at 2,000).
func BenchmarkNewLeaderFirstSync(b *testing.B) {
	for _, n := range []int{2000} {
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			e, g := newKong(b, Options{})
			s := translate(b, objects(apps(n)...))
			if err := g.Sync(ctx, target(s)); err != nil {
				b.Fatal(err)
			}
			reportRequests(b, e, func(int) {
				// A fresh Gateway, as a new leader has: no digest of what Kong took.
				fresh, err := New(g.url, nil, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := fresh.Sync(ctx, target(s)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkNewLeaderFirstSyncPhases: the same first sync as BenchmarkNewLeaderFirstSync,
// split into its phases (Result.Phases, ms/op each) and run twice: with the target lists
// prefetched in parallel (as New builds the gateway) and with go-database-reconciler's own
// order, one upstream after the other. cpu-ms/op is the CPU time of the whole process (the
// emulator's included, and Prepare's when prepared), which the shared machine's load
// inflates less than wall time; sync-cpu-ms/op is that of the timed syncs alone. With
// latency, every GET waits that long in the emulator first, as a Kong reading its database
// would: the order of the requests, not the CPU, then makes the dump's time.
func BenchmarkNewLeaderFirstSyncPhases(b *testing.B) {
	for _, n := range []int{2000} {
		e, g := newKong(b, Options{})
		s := translate(b, objects(apps(n)...))
		if err := g.Sync(ctx, target(s)); err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			latency  time.Duration
			prefetch bool
			prepared bool
		}{
			{0, true, false}, {0, false, false}, {2 * time.Millisecond, true, false}, {2 * time.Millisecond, false, false},
			{0, true, true}, {2 * time.Millisecond, true, true},
		} {
			prefetch := c.prefetch
			b.Run(fmt.Sprintf("ingresses=%d/latency=%s/prefetch=%t/prepared=%t", n, c.latency, prefetch, c.prepared), func(b *testing.B) {
				e.ClearFaults()
				if c.latency > 0 {
					e.InjectFault(kongemu.Fault{Method: http.MethodGet, Latency: c.latency})
					defer e.ClearFaults()
				}
				var phases Phases
				prepareRequests := 0 // counted in requests/op too
				cpu := processCPU()
				var syncCPU time.Duration // of the timed syncs alone (the emulator's answers included)
				reportRequests(b, e, func(int) {
					fresh, err := New(g.url, nil, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if !prefetch {
						// The transport New builds, without the prefetch.
						t := http.DefaultTransport.(*http.Transport).Clone()
						t.MaxIdleConnsPerHost = DefaultConcurrency
						hc := &http.Client{Transport: newSchemaCache(t, "", "")}
						if fresh.client, err = kong.NewClient(kong.String(g.url), hc); err != nil {
							b.Fatal(err)
						}
					}
					if c.prepared {
						// As a standby does before it gains the lease: not timed.
						b.StopTimer()
						before := e.RequestCount("", "")
						if err := fresh.Prepare(ctx, target(s)); err != nil {
							b.Fatal(err)
						}
						prepareRequests += e.RequestCount("", "") - before
						b.StartTimer()
					}
					syncStart := processCPU()
					res, err := fresh.sync(ctx, target(s))
					syncCPU += processCPU() - syncStart
					if err != nil {
						b.Fatal(err)
					}
					if res.Total() != 0 {
						b.Fatalf("%d changes, want none", res.Total())
					}
					phases.add(res.Phases)
				})
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
				b.ReportMetric(ms(phases.Dump), "dump-ms/op")
				b.ReportMetric(ms(phases.Index), "index-ms/op")
				b.ReportMetric(ms(phases.Target), "target-ms/op")
				b.ReportMetric(ms(phases.Solve), "solve-ms/op")
				b.ReportMetric(ms(processCPU()-cpu), "cpu-ms/op")
				b.ReportMetric(ms(syncCPU), "sync-cpu-ms/op")
				if c.prepared {
					b.ReportMetric(float64(prepareRequests)/float64(b.N), "prepare-requests/op")
				}
			})
		}
	}
}

// processCPU is the user and system CPU time the process used so far.
func processCPU() time.Duration { return time.Duration(benchdata.ProcessCPU()) }

// BenchmarkSyncOneIngressChanged: n Ingresses, one path changes at each sync. Target: one or
// two writes, and a cost that grows with the change, not with n (issue #45). Modes:
// dump=every, each sync dumps Kong (DumpInterval 0); dump=known-whole, each diffs the whole
// target against what Kong is known to hold (known.go), the translation made whole each round;
// dump=patched, the same with the translation made as the controller makes it
// (translator.Incremental), so that only the changed service and upstream are diffed
// (patch.go). Translations and their digests are made outside the timer. Sizes: 200, 2,000
// and 10,000, or those of benchdata.SizesEnv; p50-ms and p90-ms are of the timed syncs.
func BenchmarkSyncOneIngressChanged(b *testing.B) {
	for _, n := range benchdata.Sizes(200, 2000, 10000) {
		for _, mode := range []string{"every", "known-whole", "patched"} {
			// Made once for the sub-benchmark's runs (the first with b.N 1), with b's
			// cleanup: a first sync at 100,000 takes minutes.
			var e *kongemu.Emulator
			var g *Gateway
			var objs []client.Object
			var inc translator.Incremental
			rounds := 0
			b.Run(fmt.Sprintf("ingresses=%d/dump=%s", n, mode), func(sb *testing.B) {
				round := func() *kongstate.State {
					if mode == "known-whole" {
						return translate(sb, objs)
					}
					st, err := store.NewForObjects(objs, store.Options{})
					if err != nil {
						sb.Fatal(err)
					}
					snap, err := st.Snapshot(ctx)
					if err != nil {
						sb.Fatal(err)
					}
					return inc.Build(snap, translator.Options{}).State
				}
				if g == nil {
					opts := Options{}
					if mode != "every" {
						opts.DumpInterval = time.Hour
					}
					e, g = newKong(b, opts)
					objs = objects(apps(n)...)
					for _, o := range objs {
						o.SetResourceVersion("1")
					}
					if err := g.Sync(ctx, target(round())); err != nil {
						sb.Fatal(err)
					}
				}
				patched := 0
				var phases Phases
				var took []time.Duration // of each timed sync, for its p50 and p90
				reportRequests(sb, e, func(int) {
					sb.StopTimer()
					rounds++
					ing := objs[3*7].(*networkingv1.Ingress).DeepCopy() // app 7's Ingress
					ing.Spec.Rules[0].HTTP.Paths[0].Path = fmt.Sprintf("/v%d", rounds%2)
					ing.ResourceVersion = fmt.Sprint(rounds + 1)
					objs[3*7] = ing
					tg := target(round())
					// The digest is the round's, shared by every gateway (and, with the
					// controller's Renderer, made from the bytes of the entities that changed).
					if _, err := tg.ConfigDigest(); err != nil {
						sb.Fatal(err)
					}
					sb.StartTimer()
					start := time.Now()
					res, err := g.sync(ctx, tg)
					took = append(took, time.Since(start))
					if err != nil {
						sb.Fatal(err)
					}
					if res.Patched {
						patched++
					}
					phases.add(res.Phases)
				})
				slices.Sort(took)
				sb.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
				sb.ReportMetric(float64(took[len(took)*9/10])/float64(time.Millisecond), "p90-ms")
				sb.ReportMetric(float64(patched)/float64(sb.N), "patched/op")
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(sb.N) }
				sb.ReportMetric(ms(phases.Dump+phases.Index), "dump-ms/op")
				sb.ReportMetric(ms(phases.Target), "target-ms/op")
				sb.ReportMetric(ms(phases.Solve), "solve-ms/op")
			})
		}
	}
}

// BenchmarkFirstSync: an empty Kong, n Ingresses with a Service and an EndpointSlice each
// (service, route, upstream, target: 4 entities per Ingress), with the defaults 2,000 and
// 10,000 or the sizes of benchdata.SizesEnv. fill=false diffs the whole target at once (as
// every first sync did before issue #45); fill=true fills Kong in batches (fill.go). The
// emulator runs in a process of its own (TestEmulatorProcess), so that the figures are the
// controller's alone: peak-heap-MB/op is the largest heap (runtime/metrics, every 5 ms)
// during the sync less the heap before it, known-MB/op what the sync left as the known state
// (kept until the next dump), cpu-ms/op the process's CPU time.
func BenchmarkFirstSync(b *testing.B) {
	for _, n := range benchdata.Sizes(2000, 10000) {
		s := translate(b, objects(apps(n)...))
		for _, fill := range []bool{false, true} {
			b.Run(fmt.Sprintf("ingresses=%d/fill=%t", n, fill), func(b *testing.B) {
				var peak, known, cpu float64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					kong := startEmulatorProcess(b)
					g, err := New(kong.url, nil, Options{DumpInterval: time.Hour})
					if err != nil {
						b.Fatal(err)
					}
					if !fill {
						g.fillBatch = 0
					}
					runtime.GC()
					before := heapBytes()
					stop := samplePeakHeap()
					start := processCPU()
					b.StartTimer()
					res, err := g.sync(ctx, target(s))
					b.StopTimer()
					cpu += float64(processCPU()-start) / float64(time.Millisecond)
					peak += float64(stop()-before) / 1e6
					if err != nil {
						b.Fatal(err)
					}
					if res.Filled != fill {
						b.Fatalf("filled: %t, want %t", res.Filled, fill)
					}
					res = nil
					runtime.GC()
					withKnown := heapBytes()
					g.known = nil
					runtime.GC()
					known += float64(withKnown-heapBytes()) / 1e6
					if got := kong.routes(b); got != n {
						b.Fatalf("%d routes, want %d", got, n)
					}
					b.StartTimer()
				}
				b.ReportMetric(peak/float64(b.N), "peak-heap-MB/op")
				b.ReportMetric(known/float64(b.N), "known-MB/op")
				b.ReportMetric(cpu/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// emulatorProcessEnv makes TestEmulatorProcess serve a database-backed emulator for the
// process that started it.
const emulatorProcessEnv = "KONDUCTOR_DBMODE_EMULATOR_PROCESS"

// TestEmulatorProcess is the other process of BenchmarkFirstSync: it serves an emulator,
// prints its URL, and once its standard input is closed prints how many routes it holds.
func TestEmulatorProcess(t *testing.T) {
	if os.Getenv(emulatorProcessEnv) == "" {
		t.Skip("the emulator of BenchmarkFirstSync's other process")
	}
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres})
	srv, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Println(len(e.Entities("routes")))
}

// emulatorProcess is an emulator in a process of its own.
type emulatorProcess struct {
	url   string
	stdin io.Closer
	out   *bufio.Scanner
	cmd   *exec.Cmd
}

// startEmulatorProcess runs TestEmulatorProcess in this test binary; it stops with b.
func startEmulatorProcess(b *testing.B) *emulatorProcess {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmulatorProcess$")
	cmd.Env = append(os.Environ(), emulatorProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &emulatorProcess{stdin: stdin, out: bufio.NewScanner(stdout), cmd: cmd}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if !p.out.Scan() {
		b.Fatalf("the emulator process printed no URL: %v", p.out.Err())
	}
	p.url = p.out.Text()
	return p
}

// routes stops the emulator process and returns how many routes it held.
func (p *emulatorProcess) routes(b *testing.B) int {
	b.Helper()
	_ = p.stdin.Close()
	if !p.out.Scan() {
		b.Fatalf("the emulator process printed no count: %v", p.out.Err())
	}
	n, err := strconv.Atoi(p.out.Text())
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// heapBytes is the memory of the heap's objects, live and not yet collected.
func heapBytes() uint64 {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// samplePeakHeap reads heapBytes every 5 ms until the function it returns is called, which
// returns the largest value read.
func samplePeakHeap() func() uint64 {
	done, out := make(chan struct{}), make(chan uint64)
	go func() {
		peak := heapBytes()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				out <- max(peak, heapBytes())
				return
			case <-t.C:
				peak = max(peak, heapBytes())
			}
		}
	}()
	return func() uint64 { close(done); return <-out }
}

// BenchmarkPeriodicListing: the listing of Kong every DumpInterval (refresh.go) at n Ingresses
// (4 entities each), Kong unchanged. listing-ms/op is the listing, its index and its dry diff
// against the known state, made without the Gateway's lock (syncs go on); locked-ms/op how
// long the lock is held after them: what a change arriving then waits for at most. Before issue #45's
// background listing a sync did both and a whole diff under the lock
// (BenchmarkSyncOneIngressChanged/dump=every).
func BenchmarkPeriodicListing(b *testing.B) {
	for _, n := range benchdata.Sizes(2000, 10000) {
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			_, g := newKong(b, knownOpts)
			s := translate(b, objects(apps(n)...))
			if err := g.Sync(ctx, target(s)); err != nil {
				b.Fatal(err)
			}
			g.mu.Lock()
			k := g.known
			g.mu.Unlock()
			var listing, locked time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				g.mu.Lock()
				k.dumped = time.Time{} // old, so that a renewal shows
				writes := g.writes
				g.mu.Unlock()
				b.StartTimer()
				l, h := g.refresh(k.version, k.enterprise, writes)
				listing, locked = listing+l, locked+h
				if k.dumped.IsZero() || g.known != k {
					b.Fatal("the listing did not renew the known state")
				}
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
			b.ReportMetric(ms(listing), "listing-ms/op")
			b.ReportMetric(ms(locked), "locked-ms/op")
		})
	}
}
