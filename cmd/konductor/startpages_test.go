package main

import (
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
)

func TestReadOnlyMappingsOf(t *testing.T) {
	const exe = "/usr/local/bin/konductor"
	none := []string{"Size:              22528 kB", "Rss:               20000 kB", "Anonymous:             0 kB", "Swap:                  0 kB", "VmFlags: rd mr mw me"}
	mapping := func(header string, fields ...string) string {
		return strings.Join(append([]string{header}, fields...), "\n")
	}
	smaps := strings.Join([]string{
		mapping("00400000-01a00000 r-xp 00000000 fe:00 42                                 /usr/local/bin/konductor", none...),
		mapping("01a00000-03000000 r--p 01600000 fe:00 42                                 /usr/local/bin/konductor", none...),
		mapping("02f00000-02f80000 r--p 02b00000 fe:00 42                                 /usr/local/bin/konductor",
			"Rss:                 512 kB", "Anonymous:           128 kB", "Swap:                  0 kB"),
		mapping("02f80000-02f90000 r--p 02b80000 fe:00 42                                 /usr/local/bin/konductor",
			"Rss:                   0 kB", "Anonymous:             0 kB", "Swap:                  8 kB"),
		mapping("02f90000-02fa0000 r--p 02b90000 fe:00 42                                 /usr/local/bin/konductor",
			"Rss:                   0 kB"),
		mapping("03000000-03100000 rw-p 02c00000 fe:00 42                                 /usr/local/bin/konductor", none...),
		mapping("03100000-03200000 r--s 00000000 fe:00 42                                 /usr/local/bin/konductor", none...),
		mapping("04000000-04001000 r--p 00000000 fe:00 43                                 /usr/local/bin/konductor-other", none...),
		mapping("05000000-05002000 r-xp 00000000 fe:00 42                                 /usr/local/bin/konductor (deleted)", none...),
		mapping("c000000000-c004000000 rw-p 00000000 00:00 0 ", none...),
		mapping("7ffd1000-7ffd3000 r--p 00000000 00:00 0                                  [vvar]", none...),
		mapping("06000000-05000000 r-xp 00000000 fe:00 42                                 /usr/local/bin/konductor", none...),
		mapping("zz-06000000 r-xp 00000000 fe:00 42                                 /usr/local/bin/konductor", none...),
		"garbage",
		"07000000-07001000 r-xp 00000000 fe:00 42                                 /usr/local/bin/konductor",
	}, "\n")
	require.Equal(t, []pageRange{
		{0x00400000, 0x01a00000},
		{0x01a00000, 0x03000000},
		{0x05000000, 0x05002000},
	}, readOnlyMappingsOf([]byte(smaps), exe),
		"the executable's private read-only mappings seen to hold no private copy (none in memory, none swapped out), replaced on disk or not;"+
			" never a writable, shared or other file's one, one with private copies (a PIE's relocated RELRO) or one whose fields are not seen")
}

// executableRSS sums the Rss of the test binary's read-only private mappings, from
// /proc/self/smaps.
func executableRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	smaps, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	total, ours := 0, false
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			ours = len(f) >= 6 && f[5] == exe && f[1][1] == '-' && f[1][3] == 'p'
			continue
		}
		if ours && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			total += kb
		}
	}
	return total
}

// mappingDigests is the SHA-256 of the bytes of each of the test binary's read-only private
// mappings that releaseReadOnlyExecutableMappings would release, read through /proc/self/mem.
func mappingDigests(t *testing.T) map[pageRange][sha256.Size]byte {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	smaps, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	mem, err := os.Open("/proc/self/mem")
	require.NoError(t, err)
	defer mem.Close()
	digests := map[pageRange][sha256.Size]byte{}
	for _, r := range readOnlyMappingsOf(smaps, exe) {
		b := make([]byte, r.end-r.start)
		_, err := mem.ReadAt(b, int64(r.start))
		require.NoError(t, err)
		digests[r] = sha256.Sum256(b)
	}
	return digests
}

// freshProcessEnv names the test a child test process runs for inFreshProcess.
const freshProcessEnv = "KONDUCTOR_TEST_FRESH_PROCESS"

// inFreshProcess reports whether the calling test runs in a child process of its own, and
// otherwise runs it there (the test binary again, with -test.run for that test alone) and
// fails with the child's output if it fails. A release leaves its marks on the process for
// its life (fewer pages mapped, MADV_RANDOM), so a test of it must be the first release of
// its process, whatever ran before it, -count or -shuffle.
func inFreshProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(freshProcessEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), freshProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s in a fresh process:\n%s", t.Name(), out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the child ran the test:\n%s", out)
	return false
}

func TestReleasedExecutablePagesLeaveTheRSSAndComeBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if !inFreshProcess(t) {
		return
	}
	before := executableRSS(t)
	require.Greater(t, before, 1024, "the test binary maps more than 1 MB of its own pages")
	digests := mappingDigests(t)
	require.NotEmpty(t, digests)
	released, err := releaseReadOnlyExecutableMappings()
	require.NoError(t, err)
	require.NotZero(t, released)
	after := executableRSS(t)
	require.Less(t, after, before/2, "the released pages left the RSS (before %d kB, after %d kB)", before, after)
	// What the process reads of them again is what it read before: the file's bytes, and
	// no private copy was dropped (a PIE's relocated read-only data: make test-unit also
	// runs this test as a PIE, which crashed when such a mapping was released).
	require.Equal(t, digests, mappingDigests(t))
}

func TestStartPagesReleasedOnceTheStartIsOver(t *testing.T) {
	calls := 0
	prev := releaseExecutablePages
	releaseExecutablePages = func() (uintptr, error) { calls++; return 4096, nil }
	t.Cleanup(func() { releaseExecutablePages = prev })
	t.Setenv(keepStartPagesEnv, "")

	done := make(chan struct{})
	over := releaseStartPagesWhen(context.Background(), logr.Discard(), done)
	require.NotNil(t, over)
	select {
	case <-over:
		t.Fatal("released while the start goes on")
	default:
	}
	close(done)
	<-over
	require.Equal(t, 1, calls, "released once, after the start")

	ctx, cancel := context.WithCancel(context.Background())
	over = releaseStartPagesWhen(ctx, logr.Discard(), make(chan struct{}))
	cancel()
	<-over
	require.Equal(t, 1, calls, "nothing released when the process stops before its first push")

	t.Setenv(keepStartPagesEnv, "1")
	require.Nil(t, releaseStartPagesWhen(context.Background(), logr.Discard(), done), "kept on request")
	require.Equal(t, 1, calls)
}
