//go:build !linux

package main

import "errors"

// releaseReadOnlyExecutableMappings is Linux's only (/proc/self/smaps, MADV_DONTNEED's semantics).
func releaseReadOnlyExecutableMappings() (uintptr, error) {
	return 0, errors.New("not on Linux")
}
