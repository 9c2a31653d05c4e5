package main

import (
	"runtime"
	"testing"
)

// Allocations are sampled only when the heap profile can be served.
func TestMemoryProfileOnlyWithProfiling(t *testing.T) {
	prev := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = prev })
	runtime.MemProfileRate = 512 * 1024

	stopMemoryProfileUnless(true)
	if runtime.MemProfileRate != 512*1024 {
		t.Fatalf("with --profiling the sampling rate is %d, want Go's 512 KiB", runtime.MemProfileRate)
	}
	stopMemoryProfileUnless(false)
	if runtime.MemProfileRate != 0 {
		t.Fatalf("without --profiling the sampling rate is %d, want 0 (off)", runtime.MemProfileRate)
	}
}
