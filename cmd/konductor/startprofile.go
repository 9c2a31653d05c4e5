package main

import (
	"context"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/go-logr/logr"
)

// startProfileEnv names a file that receives the controller's CPU profile from the process
// start to the first complete push (issue #13: what the start spends its CPU on). The
// --profiling endpoint starts too late for that, after the first push; this one is for
// benchmarks (bench-e2e --start-cpu-profile), not for production.
const startProfileEnv = "KONDUCTOR_START_CPU_PROFILE"

// startTraceEnv names a file that receives the runtime's execution trace over the same span
// (go tool trace FILE): each goroutine's blocking, the network waits and the collector on a
// wall-clock timeline, which a CPU profile cannot show (bench-e2e --start-trace).
const startTraceEnv = "KONDUCTOR_START_TRACE"

// profileStartUntil profiles the CPU into the file named by startProfileEnv and traces the
// runtime into the one named by startTraceEnv, each when set, until done or ctx closes; the
// returned channel closes once both are written (nil when nothing is recorded).
func profileStartUntil(ctx context.Context, log logr.Logger, done <-chan struct{}) <-chan struct{} {
	var stops []func()
	record := func(env, what string, start func(io.Writer) error, stop func()) {
		path := os.Getenv(env)
		if path == "" {
			return
		}
		f, err := os.Create(path)
		if err != nil {
			log.Error(err, "start "+what+" not taken")
			return
		}
		if err := start(f); err != nil {
			log.Error(err, "start "+what+" not taken")
			_ = f.Close()
			return
		}
		stops = append(stops, func() {
			stop()
			if err := f.Close(); err != nil {
				log.Error(err, "start "+what+" not written")
				return
			}
			log.Info("start "+what+" written", "file", path)
		})
	}
	record(startProfileEnv, "CPU profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
	record(startTraceEnv, "trace", trace.Start, trace.Stop)
	if len(stops) == 0 {
		return nil
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		select {
		case <-done:
		case <-ctx.Done():
		}
		for _, stop := range stops {
			stop()
		}
	}()
	return written
}
