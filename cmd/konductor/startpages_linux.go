package main

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// releaseReadOnlyExecutableMappings applies MADV_DONTNEED to the executable's read-only private
// mappings without private copies (releaseStartPagesWhen says why) and returns how many bytes of address space
// they span.
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
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.start, r.end-r.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released += r.end - r.start
	}
	return released, nil
}
