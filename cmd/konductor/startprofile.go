package main

import (
	"context"
	"os"
	"runtime/pprof"

	"github.com/go-logr/logr"
)

// startProfileEnv names a file that receives the controller's CPU profile from the process
// start to the first complete push (issue #13: what the start spends its CPU on). The
// --profiling endpoint starts too late for that, after the first push; this one is for
// benchmarks (bench-e2e --start-cpu-profile), not for production.
const startProfileEnv = "KONDUCTOR_START_CPU_PROFILE"

// profileStartUntil profiles the CPU into the file named by startProfileEnv, when set, until
// done or ctx closes; the returned channel closes once the profile is written (nil when
// nothing is profiled).
func profileStartUntil(ctx context.Context, log logr.Logger, done <-chan struct{}) <-chan struct{} {
	path := os.Getenv(startProfileEnv)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		log.Error(err, "start CPU profile not taken")
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Error(err, "start CPU profile not taken")
		_ = f.Close()
		return nil
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		select {
		case <-done:
		case <-ctx.Done():
		}
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Error(err, "start CPU profile not written")
			return
		}
		log.Info("start CPU profile written", "file", path)
	}()
	return written
}
