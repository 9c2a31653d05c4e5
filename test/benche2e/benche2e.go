// Package benche2e is konductor's end-to-end benchmark (`make bench-e2e`, issue #13): a real
// kube-apiserver (envtest), a Kong that records every configuration it takes, N Ingresses with
// their Services and EndpointSlices, and the controller's own binary as a separate process, so
// that its memory and CPU time are its own. It measures start -> first complete push, change
// -> push latency (an Ingress's host changed through the API until a POST /config carries it),
// the number of pushes, the controller's RSS and CPU seconds.
package benche2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// Config is one run.
type Config struct {
	// Binary is the konductor binary to run (required).
	Binary string
	// Assets is the folder holding kube-apiserver and etcd (KUBEBUILDER_ASSETS).
	Assets string
	// CRDs is the folder of CRDs to install (the repository's config/crd).
	CRDs string
	// Ingresses is the number of Ingresses, each with its Service and EndpointSlice.
	Ingresses int
	// Changes is the number of host changes made after the first complete push.
	Changes int
	// ChangeInterval is the mean time between two changes; each interval is drawn uniformly
	// from half to one and a half times it.
	ChangeInterval time.Duration
	// Secrets is the number of unrelated 100 KB Secrets created as well.
	Secrets int
	// Status turns the controller's status writes on (--update-status with a published address).
	Status bool
	// Emulator sends the configurations to the Kong emulator (which validates them) instead of
	// the recording Kong that accepts anything: the times then include Kong's work.
	Emulator bool
	// Database runs the emulator in database mode (postgres): the controller syncs it entity
	// by entity (a diff), and a push is a route's write. With Emulator only; no extra starts.
	Database bool
	// Args are more flags for the controller.
	Args []string
	// HeapProfile, when set, is the file that receives the controller's heap profile at the end
	// of the run (taken through --profiling; read it with `go tool pprof -sample_index=inuse_space
	// -top` or alloc_space); FILE.memstats.txt and FILE.goroutines.txt receive the runtime's
	// accounts (runtime.MemStats) and goroutines as the RSS was read.
	HeapProfile string
	// CPUProfile, when set, is the file that receives the controller's CPU profile of the
	// change phase (from the first complete push until the changes are made; through
	// --profiling): what a change costs, with the status writes that go on meanwhile.
	CPUProfile string
	// StartCPUProfile, when set, is the file that receives the controller's CPU profile from
	// its process start to its first complete push (KONDUCTOR_START_CPU_PROFILE).
	StartCPUProfile string
	// StartTrace, when set, is the file that receives the controller's runtime execution trace
	// over the same span (KONDUCTOR_START_TRACE; go tool trace FILE). The extra starts' profile
	// and trace go to FILE.start-N.
	StartTrace string
	// Settle, when set, is how long the benchmark waits between creating the objects and the
	// first start, measuring meanwhile the CPU the API server and etcd spend on their own:
	// whether the first start meets an API server still busy with the creations.
	Settle time.Duration
	// APIServerCPUProfile, when set, is the file that receives the kube-apiserver's CPU profile
	// (its /debug/pprof) of the first start's first two seconds, and FILE.settle of Settle:
	// what the API server spends its CPU on while the controller starts.
	APIServerCPUProfile string
	// APIServerLog, when set, receives the kube-apiserver's output (with GODEBUG=gctrace=1 in
	// the benchmark's environment, its collections too).
	APIServerLog string
	// LogDir receives the controller's log (controller.log); a temporary folder when empty.
	LogDir string
	// Seed makes the changes' order and intervals repeatable.
	Seed uint64
	// Starts is how many more times the controller is started on the same cluster after the
	// run, each start measured to its first complete push and stopped: figures of the start
	// without creating the objects again (the machine's noise makes one start say little).
	Starts int
	// Compare, when set, is a second binary (or a script that execs one with other flags):
	// the extra starts alternate between it and Binary, Compare first.
	Compare string
	// Progress, when set, receives a line per step.
	Progress io.Writer
	// Breakdown runs the controller (the first run, not the extra starts) at debug level,
	// unless Args set a level, so that the report tells each change's stages (breakdown.go).
	Breakdown bool
	// EtcdDataDir, when set, is the folder of etcd's data (a tmpfs such as /dev/shm): for
	// analysis only, to tell how much of a change's Patch is etcd's writing. The benchmark's
	// figures are taken with envtest's own choice, a folder under the temporary directory
	// (the machine's disk), with --unsafe-no-fsync (envtest turns it on for every etcd that
	// knows it, 3.5 and later): a cluster's etcd, which syncs its writes, answers slower.
	EtcdDataDir string
}

// Result is what a run measured.
type Result struct {
	Setup            time.Duration // API server start and object creation, not part of the measure
	StartToFirstPush time.Duration // process start until a POST /config held every Ingress
	// StartToFirstSync, in database mode: process start until the controller logged its first
	// sync completed (bench-e2e's measure, on its poll); the changes start after it. 0 otherwise.
	StartToFirstSync time.Duration
	ChangeLatencies  []time.Duration // per change seen, in the order made
	Missed           int             // changes no push carried within changeTimeout
	Pushes           int             // every POST /config
	PushesAfterFirst int             // after the first complete push
	// FirstBodyBytes and LastBodyBytes are the POST /config bodies' sizes, as sent: the
	// first complete push's and the last push's.
	FirstBodyBytes, LastBodyBytes int
	RSSBytes                      int64   // VmRSS at the end
	PeakRSSBytes                  int64   // VmHWM at the end
	RSSAnonBytes                  int64   // RssAnon at the end: heap, stacks, runtime
	RSSFileBytes                  int64   // RssFile at the end: the binary's (and libraries') pages read
	CPUSeconds                    float64 // utime + stime at the end
	// CPUSecondsAtFirstPush is utime + stime when the first complete push had arrived.
	CPUSecondsAtFirstPush float64
	// APIServerCPUSecondsAtFirstPush and EtcdCPUSecondsAtFirstPush are the kube-apiserver's
	// and etcd's CPU time from the controller's launch to its first complete push.
	APIServerCPUSecondsAtFirstPush, EtcdCPUSecondsAtFirstPush float64
	// APIServerGCsAtFirstPush is how many collections the API server completed meanwhile.
	APIServerGCsAtFirstPush int
	// SettleAPIServerCPUSeconds and SettleEtcdCPUSeconds are their CPU time during
	// Config.Settle, when nobody asked them anything.
	SettleAPIServerCPUSeconds, SettleEtcdCPUSeconds float64
	// ChangeCPUSeconds is the controller's CPU time from the first complete push to the end:
	// the work of the changes (and of whatever else ran meanwhile, such as status writes).
	ChangeCPUSeconds float64
	Unserved         map[string]int // requests the recording Kong does not serve
	LogFile          string
	// StartSamples are the extra starts (Config.Starts), in the order made.
	StartSamples []StartSample
	// Stages are the changes' ways to Kong stage by stage (breakdown.go), of the changes
	// that could be told apart; none unless the controller logged at debug level.
	Stages []ChangeStages
	// Etcd is etcd's data folder and fsync setting, as its command line says.
	Etcd string
	// ChangeMachine is how the machine's CPU went while the changes were made and carried:
	// the host's steal time says whether this was one of its slow phases.
	ChangeMachine MachineShare
}

// StartSample is one extra start: its binary, process start -> first complete push, and the
// controller's CPU time then.
type StartSample struct {
	Binary     string
	FirstPush  time.Duration
	CPUSeconds float64
	PeakRSS    int64 // VmHWM at the first complete push
	// APIServerCPUSeconds is the kube-apiserver's CPU time from the controller's launch to
	// its first complete push: the lists and discovery it served (and anything else it did).
	APIServerCPUSeconds float64
	// EtcdCPUSeconds is etcd's over the same span.
	EtcdCPUSeconds float64
	// APIServerGCs is how many collections the API server completed over the same span.
	APIServerGCs int
}

// changeTimeout bounds the wait for one change; a change not seen by then is counted missed.
const changeTimeout = 30 * time.Second

// firstPushTimeout bounds the wait for the first complete push.
const firstPushTimeout = 5 * time.Minute

// ingressClass is the class the benchmark's Ingresses use and the controller serves.
const ingressClass = "kong"

// Run performs one run. It stops everything it started before it returns.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if cfg.Binary == "" || cfg.Assets == "" || cfg.CRDs == "" {
		return res, errors.New("benche2e: Binary, Assets and CRDs are required")
	}
	if cfg.ChangeInterval <= 0 {
		cfg.ChangeInterval = 500 * time.Millisecond
	}
	if cfg.Database && (!cfg.Emulator || cfg.Starts > 0) {
		return res, errors.New("benche2e: Database goes with Emulator, without extra starts")
	}
	progress := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench-e2e: "+format+"\n", args...)
		}
	}
	setupStart := time.Now()

	env := &envtest.Environment{BinaryAssetsDirectory: cfg.Assets, CRDDirectoryPaths: []string{cfg.CRDs}, ErrorIfCRDPathMissing: true}
	// A loaded machine can take longer than envtest's default to start the API server.
	env.ControlPlaneStartTimeout = 3 * time.Minute
	// envtest's default Service range is a /24: room for 10,000 Services and more.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/12")
	if cfg.EtcdDataDir != "" {
		dir, err := os.MkdirTemp(cfg.EtcdDataDir, "bench-e2e-etcd-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: dir}
	}
	if cfg.APIServerLog != "" {
		apiLog, err := os.Create(cfg.APIServerLog)
		if err != nil {
			return res, err
		}
		defer apiLog.Close()
		env.ControlPlane.GetAPIServer().Out, env.ControlPlane.GetAPIServer().Err = apiLog, apiLog
	}
	restCfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return res, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping kube-apiserver: %w", stopErr)
		}
	}()
	logDir := cfg.LogDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "bench-e2e-"); err != nil {
			return res, err
		}
	} else if err = os.MkdirAll(logDir, 0o755); err != nil {
		return res, err
	}
	kubeconfig, err := writeKubeconfig(env, logDir)
	if err != nil {
		return res, err
	}
	restCfg = rest.CopyConfig(restCfg)
	restCfg.QPS, restCfg.Burst = -1, 0 // no client-side rate limit: creation is setup
	c, err := client.New(restCfg, client.Options{Scheme: store.Scheme()})
	if err != nil {
		return res, err
	}
	res.Etcd = etcdSettings(childCmdline("etcd"))
	progress("API server up (etcd: %s); creating %d Ingresses, Services and EndpointSlices and %d Secrets", res.Etcd, cfg.Ingresses, cfg.Secrets)
	if err := createObjects(ctx, c, cfg.Ingresses, cfg.Secrets); err != nil {
		return res, err
	}
	warmUp(ctx, c)
	res.Setup = time.Since(setupStart)
	progress("objects created in %s", res.Setup.Round(time.Millisecond))

	var next http.Handler
	if cfg.Emulator {
		// The body limit raised past any size measured: the bench measures the curve, not
		// the wall at Kong's default 10m (docs/scaling.md).
		opts := kongemu.Options{Mode: kongemu.DBLess, AdminMaxBodySize: "1g"}
		if cfg.Database {
			opts.Mode = kongemu.Postgres
		}
		next = kongemu.New(opts)
	}
	kong, kongURL, closeKong, err := serveRecordingKong(next, cfg.Ingresses)
	if err != nil {
		return res, err
	}
	kong.database = cfg.Database
	defer closeKong()

	res.LogFile = filepath.Join(logDir, "controller.log")
	args := func(kongURL string) []string {
		args := []string{"run", "--kubeconfig", kubeconfig, "--kong-admin-url", kongURL, "--ingress-class", ingressClass,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			fmt.Sprintf("--update-status=%t", cfg.Status),
			"--log-format=json"} // the breakdown and the start's timeline are read from JSON lines
		if cfg.Status {
			args = append(args, "--publish-status-address", "192.0.2.10")
		}
		if cfg.Database {
			// A database requires leader election (one writer); its lease in a namespace
			// every cluster has.
			args = append(args, "--election-namespace", "default")
		} else {
			args = append(args, "--leader-elect=false")
		}
		return args
	}
	runArgs := args(kongURL)
	var pprofAddr string
	if cfg.HeapProfile != "" || cfg.CPUProfile != "" {
		if pprofAddr, err = freeLocalAddr(); err != nil {
			return res, err
		}
		_, port, err := net.SplitHostPort(pprofAddr)
		if err != nil {
			return res, err
		}
		// pprof is on the diagnostics server, which listens on every address at that port.
		runArgs = append(runArgs, "--profiling", "--diagnostic-server-port", port)
	}
	apiServerHTTP, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return res, err
	}
	apiServerURL := strings.TrimSuffix(restCfg.Host, "/")
	// The API server's collections so far, to tell a start that met one.
	apiServerGCs := func() int { return collectionsOf(ctx, apiServerHTTP, apiServerURL) }
	// The API server's CPU profile of seconds, from now, into file (when asked for).
	profileAPIServer := func(seconds int, file string) <-chan error {
		done := make(chan error, 1)
		if cfg.APIServerCPUProfile == "" {
			done <- nil
			return done
		}
		go func() {
			done <- fetchProfileWith(ctx, apiServerHTTP, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", apiServerURL, seconds), file)
		}()
		return done
	}
	if cfg.Settle > 0 {
		progress("settling for %s", cfg.Settle)
		api, etcd := childrenCPUSeconds("kube-apiserver"), childrenCPUSeconds("etcd")
		profiled := profileAPIServer(max(int(cfg.Settle/time.Second), 1), cfg.APIServerCPUProfile+".settle")
		select {
		case <-time.After(cfg.Settle):
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if err := <-profiled; err != nil {
			return res, err
		}
		res.SettleAPIServerCPUSeconds = childrenCPUSeconds("kube-apiserver") - api
		res.SettleEtcdCPUSeconds = childrenCPUSeconds("etcd") - etcd
	}
	apiServerCPU, etcdCPU, gcs := childrenCPUSeconds("kube-apiserver"), childrenCPUSeconds("etcd"), apiServerGCs()
	apiServerProfiled := profileAPIServer(2, cfg.APIServerCPUProfile)
	if cfg.Breakdown && !slices.ContainsFunc(cfg.Args, func(a string) bool { return strings.HasPrefix(a, "--log-level") }) {
		runArgs = append(runArgs, "--log-level=debug")
	}
	ctl, err := launch(cfg.Binary, append(runArgs, cfg.Args...), startRecordingEnv(cfg, ""), res.LogFile)
	if err != nil {
		return res, err
	}
	defer ctl.stop()
	cmd, exited, start, stop := ctl.cmd, ctl.exited, ctl.start, ctl.stop
	// The start's wall-clock time, to read the controller log's timestamps against.
	progress("controller started at %s (pid %d, log %s)", start.UTC().Format("15:04:05.000000"), cmd.Process.Pid, res.LogFile)

	first, err := waitFor(ctx, kong, exited, firstPushTimeout, kong.firstCompletePush)
	if err != nil {
		return res, fmt.Errorf("waiting for the first complete push: %w (log: %s)", err, res.LogFile)
	}
	res.StartToFirstPush = first.Sub(start)
	pushesAtFirst := kong.pushCount()
	// Read at once: the CPU the start took, which a loaded machine does not inflate as it
	// inflates wall time (status writes and the next rounds add some while this is read).
	atFirst, err := readProc(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	res.CPUSecondsAtFirstPush = atFirst.cpuSeconds
	res.APIServerCPUSecondsAtFirstPush = childrenCPUSeconds("kube-apiserver") - apiServerCPU
	res.EtcdCPUSecondsAtFirstPush = childrenCPUSeconds("etcd") - etcdCPU
	res.APIServerGCsAtFirstPush = apiServerGCs() - gcs
	if err := <-apiServerProfiled; err != nil {
		return res, err
	}
	progress("first complete push after %s (controller CPU %.2f s)", res.StartToFirstPush.Round(time.Millisecond), res.CPUSecondsAtFirstPush)
	if cfg.Database {
		// The first sync writes the routes, then the upstreams' targets, and ends some
		// seconds after its last write at 10,000 Ingresses: changes made before it ends wait
		// for it, and would measure the first sync rather than a change. Its end is the
		// controller's log line (polled: nothing else signals it).
		tick := time.NewTicker(20 * time.Millisecond)
		deadline := time.Now().Add(firstPushTimeout)
		for !logHas(res.LogFile, `"msg":"first sync completed"`) {
			select {
			case <-tick.C:
			case err := <-exited:
				tick.Stop()
				return res, fmt.Errorf("waiting for the first sync: the controller exited: %v (log: %s)", err, res.LogFile)
			case <-ctx.Done():
				tick.Stop()
				return res, ctx.Err()
			}
			if time.Now().After(deadline) {
				tick.Stop()
				return res, fmt.Errorf("waiting for the first sync: timed out (log: %s)", res.LogFile)
			}
		}
		tick.Stop()
		res.StartToFirstSync = time.Since(start)
		progress("first sync complete after %s", res.StartToFirstSync.Round(time.Millisecond))
	}

	profiled := make(chan error, 1)
	if cfg.CPUProfile != "" {
		// The changes take about Changes * ChangeInterval; the profile covers them.
		seconds := int((time.Duration(cfg.Changes)*cfg.ChangeInterval)/time.Second) + 1
		go func() {
			profiled <- fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, seconds), cfg.CPUProfile)
		}()
	} else {
		profiled <- nil
	}
	cpuAtChanges := readCPUTimes()
	apiServerCPU, etcdCPU = childrenCPUSeconds("kube-apiserver"), childrenCPUSeconds("etcd")
	made, err := makeChanges(ctx, c, kong, cfg)
	if err != nil {
		return res, err
	}
	var stamps []changeStamps
	for _, ch := range made {
		at, err := waitFor(ctx, kong, exited, time.Until(ch.at.Add(changeTimeout)), func() (time.Time, bool) {
			t := kong.carriedAt(ch.host)
			return t, !t.IsZero()
		})
		if err != nil {
			res.Missed++
			continue
		}
		res.ChangeLatencies = append(res.ChangeLatencies, at.Sub(ch.at))
		by := kong.carriedBy(ch.host)
		stamps = append(stamps, changeStamps{at: ch.at, answered: ch.answered, kongBegan: by.began, kongAt: by.at})
	}
	res.ChangeMachine = machineShare(cpuAtChanges, readCPUTimes())
	res.ChangeMachine.APIServerCPUSeconds = childrenCPUSeconds("kube-apiserver") - apiServerCPU
	res.ChangeMachine.EtcdCPUSeconds = childrenCPUSeconds("etcd") - etcdCPU
	if proc, err := readProc(cmd.Process.Pid); err == nil {
		res.RSSBytes, res.PeakRSSBytes, res.CPUSeconds = proc.rss, proc.hwm, proc.cpuSeconds
		res.RSSAnonBytes, res.RSSFileBytes = proc.rssAnon, proc.rssFile
		res.ChangeCPUSeconds = proc.cpuSeconds - atFirst.cpuSeconds
	} else {
		return res, err
	}
	if err := <-profiled; err != nil {
		return res, err
	}
	if cfg.CPUProfile != "" {
		progress("CPU profile written to %s", cfg.CPUProfile)
	}
	if cfg.HeapProfile != "" {
		// The runtime's accounts as the RSS was read (before the profile's collection): the
		// heap's goal, stacks, free and returned pages (runtime.MemStats at the end of the
		// text), and the goroutines.
		for _, extra := range []struct{ path, suffix string }{{"heap?debug=1", ".memstats.txt"}, {"goroutine?debug=1", ".goroutines.txt"}} {
			if err := fetchProfile(ctx, "http://"+pprofAddr+"/debug/pprof/"+extra.path, cfg.HeapProfile+extra.suffix); err != nil {
				return res, err
			}
		}
		if err := fetchProfile(ctx, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", cfg.HeapProfile); err != nil {
			return res, err
		}
		progress("heap profile written to %s", cfg.HeapProfile)
	}
	res.Pushes = kong.pushCount()
	res.PushesAfterFirst = res.Pushes - pushesAtFirst
	res.FirstBodyBytes, res.LastBodyBytes = kong.bodySizes()
	res.Unserved = kong.unserved()
	stop()
	// After the stop: every line of the changes' pushes has been written.
	// The breakdown is an analysis: a log it cannot read costs it, not the run's figures.
	if cfg.Breakdown {
		if res.Stages, err = breakdown(res.LogFile, stamps); err != nil {
			progress("no per-stage breakdown: %v", err)
			res.Stages, err = nil, nil
		}
	}
	for i := range cfg.Starts {
		binary := cfg.Binary
		if cfg.Compare != "" && i%2 == 0 {
			binary = cfg.Compare
		}
		sample, err := measureStart(ctx, binary, func(kongURL string) []string { return append(args(kongURL), cfg.Args...) }, apiServerGCs,
			startRecordingEnv(cfg, fmt.Sprintf(".start-%d", i+1)), cfg.Ingresses, filepath.Join(logDir, fmt.Sprintf("controller-start-%d.log", i+1)))
		if err != nil {
			return res, fmt.Errorf("extra start %d: %w", i+1, err)
		}
		progress("extra start %d (%s): first complete push after %s (controller CPU %.2f s)", i+1, binary,
			sample.FirstPush.Round(time.Millisecond), sample.CPUSeconds)
		res.StartSamples = append(res.StartSamples, sample)
	}
	return res, nil
}

// measureStart starts binary against a recording Kong of its own, waits for the first
// complete push and stops it.
func measureStart(ctx context.Context, binary string, args func(kongURL string) []string, apiServerGCs func() int, env []string, ingresses int, logPath string) (StartSample, error) {
	kong, kongURL, closeKong, err := serveRecordingKong(nil, ingresses)
	if err != nil {
		return StartSample{}, err
	}
	defer closeKong()
	apiServerCPU, etcdCPU, gcs := childrenCPUSeconds("kube-apiserver"), childrenCPUSeconds("etcd"), apiServerGCs()
	ctl, err := launch(binary, args(kongURL), env, logPath)
	if err != nil {
		return StartSample{}, err
	}
	defer ctl.stop()
	first, err := waitFor(ctx, kong, ctl.exited, firstPushTimeout, kong.firstCompletePush)
	if err != nil {
		return StartSample{}, fmt.Errorf("waiting for the first complete push: %w (log: %s)", err, logPath)
	}
	proc, err := readProc(ctl.cmd.Process.Pid)
	if err != nil {
		return StartSample{}, err
	}
	return StartSample{Binary: binary, FirstPush: first.Sub(ctl.start), CPUSeconds: proc.cpuSeconds, PeakRSS: proc.hwm,
		APIServerCPUSeconds: childrenCPUSeconds("kube-apiserver") - apiServerCPU, EtcdCPUSeconds: childrenCPUSeconds("etcd") - etcdCPU,
		APIServerGCs: apiServerGCs() - gcs}, nil
}

// collectionsOf is the number of garbage collections the API server at url has completed
// (go_gc_duration_seconds_count of its /metrics); -1 when it cannot be read. A collection of
// the API server's heap (130-330 MB at 3,000 Ingresses after the objects were created) costs
// 0.4-1 s of CPU, on the cores the controller starts on (docs/performance.md).
func collectionsOf(ctx context.Context, client *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	return parseGCCount(string(body))
}

// parseGCCount reads go_gc_duration_seconds_count out of a Prometheus text exposition; -1 when
// it is not there.
func parseGCCount(metrics string) int {
	for line := range strings.Lines(metrics) {
		if rest, ok := strings.CutPrefix(line, "go_gc_duration_seconds_count "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return -1
			}
			return int(n)
		}
	}
	return -1
}

// startRecordingEnv is the controller's environment with the start's CPU profile and trace
// asked for (their files' names with suffix), or nil (the benchmark's own) when neither is.
func startRecordingEnv(cfg Config, suffix string) []string {
	if cfg.StartCPUProfile == "" && cfg.StartTrace == "" {
		return nil
	}
	env := os.Environ()
	if cfg.StartCPUProfile != "" {
		env = append(env, "KONDUCTOR_START_CPU_PROFILE="+cfg.StartCPUProfile+suffix)
	}
	if cfg.StartTrace != "" {
		env = append(env, "KONDUCTOR_START_TRACE="+cfg.StartTrace+suffix)
	}
	return env
}

// serveRecordingKong serves a recording Kong (in front of next, when set) on a local port.
func serveRecordingKong(next http.Handler, ingresses int) (*recordingKong, string, func(), error) {
	kong := newRecordingKong(next, ingresses)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: kong, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return kong, "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// launched is a controller process started by launch.
type launched struct {
	cmd    *exec.Cmd
	exited chan error
	start  time.Time
	stop   func() // SIGTERM, then SIGKILL of its group after 20 s; once
}

// launch starts binary with args (and env, when set), its output to logPath.
func launch(binary string, args, env []string, logPath string) (*launched, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := &launched{cmd: cmd, exited: make(chan error, 1), start: time.Now()}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	go func() { l.exited <- cmd.Wait(); logFile.Close() }()
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-l.exited:
			case <-time.After(20 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-l.exited
			}
		})
	}
	return l, nil
}

// waitFor waits until cond holds, the controller exits, or timeout passes; every push wakes it.
func waitFor(ctx context.Context, k *recordingKong, exited <-chan error, timeout time.Duration, cond func() (time.Time, bool)) (time.Time, error) {
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
	for {
		if t, ok := cond(); ok {
			return t, nil
		}
		select {
		case <-k.notify:
		case err := <-exited:
			return time.Time{}, fmt.Errorf("the controller exited: %v", err)
		case <-deadline.C:
			return time.Time{}, errors.New("timed out")
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

type change struct {
	host     string
	at       time.Time // just before the update was sent
	answered time.Time // the API server's answer read
}

// makeChanges changes the host of a random Ingress cfg.Changes times, at random intervals.
func makeChanges(ctx context.Context, c client.Client, kong *recordingKong, cfg Config) ([]change, error) {
	rng := mathrand.New(mathrand.NewPCG(cfg.Seed, 13))
	var out []change
	for i := 0; i < cfg.Changes; i++ {
		wait := cfg.ChangeInterval/2 + time.Duration(rng.Int64N(int64(cfg.ChangeInterval)))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		n := rng.IntN(cfg.Ingresses)
		ing := &netv1.Ingress{}
		key := client.ObjectKey{Namespace: fmt.Sprintf("ns-%d", n%10), Name: fmt.Sprintf("ing-%d", n)}
		if err := c.Get(ctx, key, ing); err != nil {
			return nil, fmt.Errorf("change %d: %w", i, err)
		}
		host := fmt.Sprintf("change-%d-%d.example.com", i, rng.Uint32())
		// A patch, not an update: the controller writes the Ingress's status meanwhile, and
		// an update from the copy read above would then fail with a conflict.
		before := ing.DeepCopy()
		ing.Spec.Rules[0].Host = host
		kong.await(host)
		ch := change{host: host, at: time.Now()}
		if err := c.Patch(ctx, ing, client.MergeFrom(before)); err != nil {
			return nil, fmt.Errorf("change %d: %w", i, err)
		}
		ch.answered = time.Now()
		out = append(out, ch)
	}
	return out, nil
}

// createObjects creates the namespaces, the IngressClass, the Ingresses with their Services and
// EndpointSlices (the translator benchmarks' objects, internal/translator/benchdata) and the
// unrelated Secrets, with a few requests in flight at once.
func createObjects(ctx context.Context, c client.Client, ingresses, secrets int) error {
	for i := 0; i < 10; i++ {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}}); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: ingressClass},
		Spec: netv1.IngressClassSpec{Controller: "ingress-controllers.konghq.com/kong"}}); err != nil {
		return err
	}
	snap := benchdata.Snapshot(ingresses)
	var objs []client.Object
	for i := range snap.Ingresses {
		objs = append(objs, snap.Services[i], snap.EndpointSlices[i], snap.Ingresses[i])
	}
	payload := make([]byte, 100*1024)
	for i := 0; i < secrets; i++ {
		_, _ = rand.Read(payload)
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i), Namespace: fmt.Sprintf("ns-%d", i%10)},
			Data:       map[string][]byte{"blob": slices.Clone(payload)},
		})
	}
	work := make(chan client.Object)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				o.SetUID("")
				if err := c.Create(ctx, o); err != nil {
					select {
					case errs <- fmt.Errorf("creating %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err):
					default:
					}
				}
			}
		}()
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// warmUp lists every kind the controller reads once. A fresh kube-apiserver builds its
// handler of a custom resource (schemas, CEL validation rules) on the first request for it:
// 0.3-0.9 s each for Gateway API's routes on two cores. A cluster's API server has long
// done that, so the benchmark does it before the controller starts, which then measures the
// controller. Errors (a kind not served) do not matter here.
func warmUp(ctx context.Context, c client.Client) {
	for _, k := range store.AllKinds() {
		_ = c.List(ctx, k.NewList(), client.Limit(1))
	}
}

// writeKubeconfig adds an administrator to env and writes its kubeconfig into dir.
func writeKubeconfig(env *envtest.Environment, dir string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "bench-e2e", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	if _, err := clientcmd.Load(raw); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

// freeLocalAddr is a loopback address with a port free at the time of the call.
func freeLocalAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// fetchProfile saves a profile of the controller's pprof endpoint url (the heap one with
// ?gc=1 after a GC, the CPU one over ?seconds=).
func fetchProfile(ctx context.Context, url, file string) error {
	return fetchProfileWith(ctx, http.DefaultClient, url, file)
}

// fetchProfileWith fetches url with client into file.
func fetchProfileWith(ctx context.Context, client *http.Client, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the profile %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the profile %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// logHas reports whether the file holds s (false when it cannot be read).
func logHas(file, s string) bool {
	b, err := os.ReadFile(file)
	return err == nil && bytes.Contains(b, []byte(s))
}
