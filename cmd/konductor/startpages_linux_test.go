package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// vmFlagsOf returns the VmFlags of each of /proc/self/smaps's mappings of exe in ranges.
func vmFlagsOf(t *testing.T, exe string, ranges []pageRange) map[pageRange][]string {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	want := map[uintptr]pageRange{}
	for _, r := range ranges {
		want[r.start] = r
	}
	flags := map[pageRange][]string{}
	var current *pageRange
	for _, line := range strings.Split(string(smaps), "\n") {
		if r := exeMapping(line, exe); r != nil {
			if w, ok := want[r.start]; ok && w == *r {
				current = &w
				continue
			}
		}
		if f, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if current != nil {
				flags[*current] = strings.Fields(f)
			}
			current = nil
		}
	}
	return flags
}

// A released mapping reads a page touched again alone (MADV_RANDOM, smaps's "rr"): with the
// file's other pages out of the page cache, fault-around then maps nothing around it.
func TestReleasedExecutableMappingsReadPagesAlone(t *testing.T) {
	if !inFreshProcess(t) {
		return
	}
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	smaps, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	ranges := readOnlyMappingsOf(smaps, exe)
	require.NotEmpty(t, ranges)
	for r, f := range vmFlagsOf(t, exe, ranges) {
		require.NotContains(t, f, "rr", "mapping %x-%x before the release", r.start, r.end)
	}
	prev := evictFromPageCache
	evicted := 0
	evictFromPageCache = func(f *os.File) error { evicted++; return nil } // the test binary's page cache is not this test's
	t.Cleanup(func() { evictFromPageCache = prev })
	_, err = releaseReadOnlyExecutableMappings()
	require.NoError(t, err)
	require.Equal(t, 1, evicted, "the executable's page cache is dropped once")
	flags := vmFlagsOf(t, exe, ranges)
	require.Len(t, flags, len(ranges))
	for r, f := range flags {
		require.Contains(t, f, "rr", "mapping %x-%x after the release: %v", r.start, r.end, f)
	}
}

// residentPages counts the pages of f's first size bytes that are in the page cache
// (mincore on a mapping of f never touched, so that no page of it is mapped).
func residentPages(t *testing.T, f *os.File, size int) int {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { require.NoError(t, unix.Munmap(m)) }()
	vec := make([]byte, (size+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(size), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno)
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestEvictFromPageCacheDropsTheFilesPages(t *testing.T) {
	const size = 1 << 20
	path := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(path, make([]byte, size), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Fsync(int(f.Fd()))) // clean pages: dirty ones are written back first
	var fs unix.Statfs_t
	require.NoError(t, unix.Fstatfs(int(f.Fd()), &fs))
	if fs.Type == unix.TMPFS_MAGIC || fs.Type == unix.RAMFS_MAGIC {
		t.Skip("the temporary folder is in memory (tmpfs): its pages cannot leave the page cache")
	}
	if residentPages(t, f, size) == 0 {
		t.Skip("the file system keeps no page cache for the file")
	}
	require.NoError(t, evictFromPageCache(f))
	require.Zero(t, residentPages(t, f, size), "no page of the file is left in the page cache")
}
