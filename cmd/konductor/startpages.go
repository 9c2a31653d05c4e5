package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// keepStartPagesEnv, set to anything, keeps the executable's pages mapped after the start
// (releaseStartPagesWhen does nothing): for measuring, or should a kernel misbehave.
const keepStartPagesEnv = "KONDUCTOR_KEEP_START_PAGES"

// releaseStartPagesWhen drops, once done closes (the first push), the process's mappings of
// its own executable's read-only pages, unless ctx ended first or keepStartPagesEnv is set.
//
// Why: about half of the executable's pages the process maps are touched only during the
// start: some 360 package initialisers (client-go's scheme registering every API group), the
// cache's first lists, the first translation. The kernel maps each such fault's neighbours
// too (fault-around, 64 KB), and keeps all of them in the process's RSS for its whole life:
// at 3,000 Ingresses 37 MB of file-backed RSS (issue #13, memory; docs/performance/journal.md,
// "The executable's start-only pages").
//
// What it does is safe for a private file mapping that holds no private copy of a page:
// MADV_DONTNEED only removes the process's page table entries, and a page touched again is
// read back from the file. Writable mappings (the executable's data) and read-only ones with
// private copies (readOnlyMappingsOf) are never touched.
//
// Unmapping alone is not enough: a page touched again brings its 64 KB of neighbours back
// with it, from the page cache, and the RSS climbed back to 22-27 MB of the executable within
// seconds. So the mappings read pages alone from then on (MADV_RANDOM), and the executable's
// pages nobody maps leave the page cache (POSIX_FADV_DONTNEED): what comes back is what the
// steady state touches, 13-17 MB at 3,000 Ingresses, and the container's memory cgroup
// (kubectl top, the kubelet's working set) drops with it. The price: a page touched for the
// first time after the start (a code path the start did not run, or ran and the steady state
// had not yet) is a disk read of one page, once (docs/performance/journal.md, "The executable's
// start-only pages"). A standby releases nothing until it has led and pushed once.
//
// It returns at once, with a channel closed once it is over (nil when keepStartPagesEnv
// is set).
func releaseStartPagesWhen(ctx context.Context, log logr.Logger, done <-chan struct{}) <-chan struct{} {
	if os.Getenv(keepStartPagesEnv) != "" {
		return nil
	}
	over := make(chan struct{})
	go func() {
		defer close(over)
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			return
		}
		released, err := releaseExecutablePages()
		if err != nil {
			log.V(1).Info("executable's start pages kept, or partly", "released", released, "reason", err.Error())
			return
		}
		log.V(1).Info("executable's start pages released", "bytes", released)
	}()
	return over
}

// releaseExecutablePages is a variable for tests.
var releaseExecutablePages = releaseReadOnlyExecutableMappings

// pageRange is one mapping of /proc/self/smaps: [start, end).
type pageRange struct{ start, end uintptr }

// readOnlyMappingsOf returns the mappings of /proc/<pid>/smaps that map the file exe private,
// not writable, and are seen to hold no private copy: smaps says "Anonymous: 0 kB" (none in
// memory) and "Swap: 0 kB" (none swapped out). A read-only mapping may hold private copies:
// a position-independent executable's relocated read-only data (RELRO) is written by the
// dynamic loader before it is made read-only, and MADV_DONTNEED would put the file's
// unrelocated bytes back. A mapping whose fields do not say so, or smaps that cannot be read
// whole, gives nothing. The kernel appends " (deleted)" to the path of a file replaced on
// disk since it was mapped (an upgrade in place); its mappings are still the process's own.
func readOnlyMappingsOf(smaps []byte, exe string) []pageRange {
	var ranges []pageRange
	var candidate *pageRange
	noAnonymous, noSwap := false, false
	done := func() {
		if candidate != nil && noAnonymous && noSwap {
			ranges = append(ranges, *candidate)
		}
		candidate, noAnonymous, noSwap = nil, false, false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		if field, value, ok := strings.Cut(line, ":"); ok && !strings.Contains(field, " ") && !strings.Contains(field, "-") {
			// A field of the mapping above: "Anonymous:   12 kB".
			switch field {
			case "Anonymous":
				noAnonymous = strings.TrimSpace(value) == "0 kB"
			case "Swap":
				noSwap = strings.TrimSpace(value) == "0 kB"
			}
			continue
		}
		done()
		candidate = exeMapping(line, exe)
	}
	done()
	if sc.Err() != nil {
		return nil
	}
	return ranges
}

// exeMapping reads a mapping's line ("address perms offset dev inode path") and returns its
// range when it maps exe private and not writable.
func exeMapping(line, exe string) *pageRange {
	f := strings.SplitN(line, " ", 6)
	if len(f) < 6 {
		return nil
	}
	path := strings.TrimSuffix(strings.TrimLeft(f[5], " "), " (deleted)")
	perms := f[1]
	if path != exe || len(perms) != 4 || perms[1] != '-' || perms[3] != 'p' {
		return nil
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return nil
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return nil
	}
	return &pageRange{uintptr(start), uintptr(end)}
}
