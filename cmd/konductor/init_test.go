package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// initBudgetBytes bounds what each of konductor's packages allocates at init, before main:
// every process pays it (a controller's start, each translate or version command). Tables of
// Kong's rules fit; a scheme built into a package variable (600 KB: client-go's types, Kong's,
// Gateway API's) does not: it is built at its first use (store.Scheme).
const initBudgetBytes = 256 << 10

// Each konductor package's init stays within initBudgetBytes, as Go's runtime reports it
// (GODEBUG=inittrace=1) for this test binary, which links every package the command does.
func TestPackageInitsStayCheap(t *testing.T) {
	if os.Getenv("KONDUCTOR_INIT_TRACE_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPackageInitsStayCheap$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "KONDUCTOR_INIT_TRACE_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run())
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init github.com/konductor/konductor/internal/status @60 ms, 45 ms clock, 627680 bytes, 4002 allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/konductor/konductor/") {
			continue
		}
		seen++
		b, err := strconv.Atoi(f[7])
		require.NoError(t, err, sc.Text())
		require.LessOrEqual(t, b, initBudgetBytes, "%s allocates %d bytes at init: build it at first use", f[1], b)
	}
	require.NotZero(t, seen, "no init trace of konductor's packages in:\n%s", stderr.String())
}
