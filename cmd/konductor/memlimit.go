package main

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// cgroupMemoryFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimitShare is the part of the container's limit given to the Go heap as its soft
// limit: the rest is for stacks, the runtime and memory not yet returned to the system.
const memoryLimitShare = 0.9

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the container's, unless
// GOMEMLIMIT says otherwise: near the limit the collector runs more often instead of the
// kernel killing the controller (issue #13, memory). Without a limit (none, or "max") the
// runtime's default, no limit, stays. It returns the limit set, 0 for none.
func setMemoryLimit(log logr.Logger, files []string) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := cgroupMemoryLimit(files)
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	log.Info("Go memory limit set from the container's", "containerLimitBytes", limit, "goMemoryLimitBytes", soft)
	return soft
}

// cgroupMemoryLimit reads the first limit found; 0 when there is none.
func cgroupMemoryLimit(files []string) int64 {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		// cgroup v1 reports "no limit" as a huge number (a page-rounded int64 max).
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0
		}
		return n
	}
	return 0
}

// defaultGCPercent is the collector's target (GOGC) when neither GOGC nor a memory limit is
// given: the heap may grow to 1.5 times the live heap instead of Go's default 2 times. The
// heap's high-water mark, the live heap plus that headroom, is what the process keeps
// resident, and at 100 it sat at about twice its live data. A change spliced into the kept
// result allocates little (about 1 MB at 3,000 Ingresses, a full translation 39 MB:
// BenchmarkIncrementalOneIngressChanged), so the narrower headroom costs few collections; a
// full translation still allocates about the live heap again. 30 took another 4-5 MB off at
// 3,000 Ingresses for more CPU per change and was not kept (issue #13, memory;
// docs/performance/journal.md, "The collector's steady target at 30").
// With a memory limit (GOMEMLIMIT or the container's) Go's default stays: the limit bounds the
// heap already and a lower target would only collect more often below it.
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC is set or a memory limit is in force
// (memoryLimit from setMemoryLimit, or GOMEMLIMIT). It returns the percent set, 0 for none.
func setGCPercent(log logr.Logger, memoryLimit int64) int {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || memoryLimit > 0 {
		return 0
	}
	debug.SetGCPercent(defaultGCPercent)
	log.V(1).Info("Go collector target set", "gcPercent", defaultGCPercent)
	return defaultGCPercent
}

// startGCPercent is the collector's target from the process start until its first push.
// During the start the heap mostly grows (the cache's first lists, the first full translation
// and rendering: at 3,000 Ingresses about 65 MB allocated by the first round alone), so a
// collection finds little garbage. At 800 the start's first collection comes at a 32 MB heap
// (Go's 4 MB minimum scaled by the target) and leaves a goal of nine times what survived, so
// at 3,000 Ingresses one collection runs between main and the first push instead of four or
// five at 200, and the controller's CPU to its first push is about a fifth lower
// (docs/performance/journal.md, "Start: the package inits, the discovery, the collector at 800"). The
// heap may reach nine times the live heap meanwhile (at 3,000 Ingresses the peak RSS at the
// first push is 135 MB instead of 100-115), within a minute at most (startGCWindow); a memory
// limit (GOMEMLIMIT, or the container's: the chart sets 512 Mi) bounds it.
const startGCPercent = 800

// startGCWindow bounds how long the start's target holds without a first push: a standby
// replica (its cache synced, it allocates little until it leads), or a gateway unreachable.
// The steady target comes back then.
const startGCWindow = time.Minute

// firstDiffGCPercent is the collector's target from the start of a first sync by diff
// (database mode) until the start is over, when the steady target is narrower. That sync
// builds go-database-reconciler's states and throws most of them away (at 10,000 Ingresses
// 20 s of it, about 330 MB of heap at its peak at Go's default target: BenchmarkFirstSync):
// at startGCPercent the heap grew to nine times what was live through it (2.2 GB of peak
// RSS at 10,000 Ingresses, 572 MB at 2,000; issue #45). At 2,000 Ingresses end to end the
// peak is 216 MB at 100, 177-187 MB at the steady 50, whose collections cost the controller
// about a third more CPU to its first push (3.3 s against 2.4; 1.9 at startGCPercent)
// (docs/performance/journal.md, "Issue #45: what made database mode's peak").
const firstDiffGCPercent = 100

// returnFreedMemory collects and returns the heap's free pages to the system at once
// (a variable for tests).
var returnFreedMemory = debug.FreeOSMemory

// relaxCollectorUntil raises the collector's target to startGCPercent until done closes,
// ctx ends or startGCWindow passed, then restores the target it found and, unless ctx ended,
// returns the start's freed memory to the system once. When diffStarted closes first (a
// first sync by diff begins: database mode), the target is firstDiffGCPercent (or the steady
// one, if wider) from then until the same end, and the start's freed memory is returned
// then as well, before the diff's heap grows on top of it. It does nothing when GOGC is set
// (the operator's choice) or the target is already as high. It returns at once, with a
// channel closed once the target is restored (nil when it did nothing).
//
// Why return the memory: at the start's target the heap grew to up to nine times what
// survived (the cache's first lists, the first translation and rendering), and those pages
// stay in the process's RSS long after the steady target comes back, since Go's background
// scavenger returns them slowly (about 1% of a core) and only down to a little over the
// steady heap goal. A collection and a scavenge of everything free once, right after the
// first push, costs one collection and the page faults of the heap growing back to its
// steady goal (issue #13, memory; docs/performance.md). Waiting for the next collection
// instead was tried and not kept: the first status writes, still in flight then, kept the
// live heap as high as at the first push.
func relaxCollectorUntil(ctx context.Context, log logr.Logger, diffStarted, done <-chan struct{}) <-chan struct{} {
	if os.Getenv("GOGC") != "" {
		return nil
	}
	steady := debug.SetGCPercent(startGCPercent)
	if steady < 0 || steady >= startGCPercent {
		debug.SetGCPercent(steady)
		return nil
	}
	restored := make(chan struct{})
	go func() {
		defer close(restored)
		timer := time.NewTimer(startGCWindow)
		defer timer.Stop()
		select {
		case <-diffStarted:
			diff := max(steady, firstDiffGCPercent)
			debug.SetGCPercent(diff)
			log.V(1).Info("first sync by diff: Go collector target narrowed", "gcPercent", diff)
			returnFreedMemory()
			select {
			case <-done:
			case <-ctx.Done():
			case <-timer.C:
			}
		case <-done:
		case <-ctx.Done():
		case <-timer.C:
		}
		debug.SetGCPercent(steady)
		log.V(1).Info("start over: Go collector target restored", "gcPercent", steady)
		if ctx.Err() == nil {
			returnFreedMemory()
		}
	}()
	return restored
}
