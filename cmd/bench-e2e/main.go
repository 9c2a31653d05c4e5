// Command bench-e2e is konductor's end-to-end benchmark (`make bench-e2e`): see
// test/benche2e. It takes its settings from flags, or from the environment variables the make
// target passes (N, K, SECRETS, STATUS, KONG).
//
//	bench-e2e --binary bin/konductor --assets DIR [--ingresses 3000] [--changes 20]
//	    [--secrets 0] [--status on|off] [--kong record|emulator|database] [--interval 500ms] [--heap-profile FILE] [--cpu-profile FILE] [--start-cpu-profile FILE] [--start-trace FILE] [--settle 10s] [--apiserver-cpu-profile FILE] [--etcd-data-dir DIR] [--breakdown=false]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/konductor/konductor/test/benche2e"
)

func main() {
	ctrllog.SetLogger(logr.Discard()) // envtest's own logging is not the benchmark's output
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() error {
	var cfg benche2e.Config
	var status, kong string
	flag.StringVar(&cfg.Binary, "binary", "bin/konductor", "the konductor binary")
	flag.StringVar(&cfg.Assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "folder holding kube-apiserver and etcd")
	flag.StringVar(&cfg.CRDs, "crds", "config/crd", "CRD folder to install")
	flag.IntVar(&cfg.Ingresses, "ingresses", envInt("N", 3000), "Ingresses (each with a Service and an EndpointSlice)")
	flag.IntVar(&cfg.Changes, "changes", envInt("K", 20), "host changes after the first complete push")
	flag.IntVar(&cfg.Secrets, "secrets", envInt("SECRETS", 0), "unrelated 100 KB Secrets")
	flag.StringVar(&status, "status", envString("STATUS", "on"), "status writes: on or off")
	flag.StringVar(&kong, "kong", envString("KONG", "record"), "record (accepts anything), emulator (DB-less, validates) or database (the emulator with a database: synced by diff, entity by entity)")
	flag.DurationVar(&cfg.ChangeInterval, "interval", 500*time.Millisecond, "mean time between changes")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the changes' order and intervals")
	flag.StringVar(&cfg.HeapProfile, "heap-profile", os.Getenv("HEAP_PROFILE"), "file that receives the controller's heap profile at the end (go tool pprof)")
	flag.StringVar(&cfg.CPUProfile, "cpu-profile", os.Getenv("CPU_PROFILE"), "file that receives the controller's CPU profile of the change phase (go tool pprof)")
	flag.StringVar(&cfg.StartCPUProfile, "start-cpu-profile", os.Getenv("START_CPU_PROFILE"), "file that receives the controller's CPU profile from its start to its first complete push (go tool pprof)")
	flag.StringVar(&cfg.StartTrace, "start-trace", os.Getenv("START_TRACE"), "file that receives the controller's runtime execution trace from its start to its first complete push (go tool trace); extra starts' go to FILE.start-N, and their CPU profiles too")
	flag.DurationVar(&cfg.Settle, "settle", 0, "wait this long between creating the objects and the first start, measuring the API server's and etcd's own CPU meanwhile")
	flag.StringVar(&cfg.APIServerCPUProfile, "apiserver-cpu-profile", "", "file that receives the kube-apiserver's CPU profile of the first start's first 2 s (FILE.settle: of --settle)")
	flag.StringVar(&cfg.APIServerLog, "apiserver-log", "", "file that receives the kube-apiserver's output (GODEBUG=gctrace=1 adds its collections)")
	flag.StringVar(&cfg.LogDir, "log-dir", "", "folder for the controller's log (a temporary one by default)")
	flag.IntVar(&cfg.Starts, "starts", envInt("STARTS", 0), "more starts of the controller after the run, each measured to its first complete push (no objects created again)")
	flag.StringVar(&cfg.Compare, "compare", os.Getenv("COMPARE"), "a second binary (or a script exec'ing one with other flags): the extra starts alternate between it and --binary, it first")
	flag.BoolVar(&cfg.Breakdown, "breakdown", os.Getenv("BREAKDOWN") != "off", "run the controller at debug level (unless the controller's flags after -- set a level) and report each change's stages (BREAKDOWN=off: not)")
	flag.StringVar(&cfg.EtcdDataDir, "etcd-data-dir", "", "for analysis only: keep etcd's data in a folder under this one (a tmpfs such as /dev/shm) instead of envtest's (the temporary directory); envtest runs etcd with --unsafe-no-fsync either way")
	flag.Parse()
	switch status {
	case "on":
		cfg.Status = true
	case "off":
	default:
		return fmt.Errorf("--status must be on or off, not %q", status)
	}
	switch kong {
	case "record":
	case "emulator":
		cfg.Emulator = true
	case "database":
		cfg.Emulator, cfg.Database = true, true
	default:
		return fmt.Errorf("--kong must be record, emulator or database, not %q", kong)
	}
	cfg.Args = flag.Args()
	cfg.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := benche2e.Run(ctx, cfg)
	if err != nil {
		return err
	}
	res.Report(os.Stdout, cfg)
	return nil
}
