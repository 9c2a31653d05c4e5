package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseReadOnlyExecutableMappings releases the executable's read-only private mappings
// without private copies (releaseStartPagesWhen says why), and returns how many bytes of
// address space they span. For each mapping, in this order:
//
//  1. MADV_RANDOM: a page faulted in again is read alone, without a readahead window around
//     it. This is what keeps the RSS down to the pages the steady state touches: the kernel
//     maps a fault's neighbours too (fault-around, 64 KB), but only those already in the page
//     cache, and without readahead (and after step 3) the neighbours are not.
//  2. MADV_DONTNEED: the process's page table entries go; the pages stay in the page cache.
//
// Then, once for the file:
//
//  3. POSIX_FADV_DONTNEED on the executable: its pages that no process maps leave the page
//     cache, so they leave the container's memory cgroup too. Pages mapped by anyone (another
//     replica on the node running the same file, or ours touched again meanwhile) stay.
func releaseReadOnlyExecutableMappings() (uintptr, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	ranges := readOnlyMappingsOf(smaps, strings.TrimSuffix(exe, " (deleted)"))
	if len(ranges) == 0 {
		return 0, errors.New("no read-only mapping of " + exe)
	}
	var released uintptr
	for _, r := range ranges {
		for _, advice := range []uintptr{unix.MADV_RANDOM, unix.MADV_DONTNEED} {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, advice); errno != 0 {
				return released, errno
			}
		}
		released += r.end - r.start
	}
	// /proc/self/exe opens the file mapped, even if replaced on disk since.
	f, err := os.Open("/proc/self/exe")
	if err == nil {
		defer f.Close()
		err = evictFromPageCache(f)
	}
	if err != nil {
		return released, fmt.Errorf("mappings released, but the executable's pages not dropped from the page cache: %w", err)
	}
	return released, nil
}

// evictFromPageCache drops f's pages that nothing maps from the page cache (a variable for
// tests).
var evictFromPageCache = func(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
