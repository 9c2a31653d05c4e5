package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
)

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		content string
		want    int64
	}{
		{"268435456\n", 268435456},
		{"max\n", 0},
		{"9223372036854771712\n", 0}, // cgroup v1 without a limit
		{"garbage", 0},
	} {
		if got := cgroupMemoryLimit([]string{write("limit", c.content)}); got != c.want {
			t.Errorf("%q: %d, want %d", c.content, got, c.want)
		}
	}
	if got := cgroupMemoryLimit([]string{filepath.Join(dir, "missing"), write("v1", "1000")}); got != 1000 {
		t.Errorf("falls back to the second file: %d", got)
	}
}

func TestSetMemoryLimitFromContainer(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")
	p := filepath.Join(t.TempDir(), "memory.max")
	if err := os.WriteFile(p, []byte("1000000000"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := setMemoryLimit(logr.Discard(), []string{p}); got != 900000000 {
		t.Fatalf("set %d, want 90%% of the limit", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 900000000 {
		t.Errorf("runtime limit %d", got)
	}
	t.Setenv("GOMEMLIMIT", "500MiB")
	if got := setMemoryLimit(logr.Discard(), []string{p}); got != 0 {
		t.Errorf("GOMEMLIMIT set, yet the limit was changed to %d", got)
	}
}

func TestSetGCPercentOnlyWithoutLimitOrGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if got := setGCPercent(logr.Discard(), 1<<30); got != 0 {
		t.Errorf("with a memory limit: set %d", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with a memory limit the target changed to %d", got)
	}
	t.Setenv("GOGC", "200")
	if got := setGCPercent(logr.Discard(), 0); got != 0 {
		t.Errorf("with GOGC set: set %d", got)
	}
	t.Setenv("GOGC", "")
	if got := setGCPercent(logr.Discard(), 0); got != defaultGCPercent {
		t.Errorf("without limit or GOGC: set %d", got)
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("collector target is %d, want %d", got, defaultGCPercent)
	}
}

// Until the start is over the collector's target is startGCPercent; then the steady one
// (GOGC 50 without a limit, Go's 100 with one) comes back, and the start's freed memory is
// returned to the system once (not when the process stops). GOGC set is left alone.
func TestCollectorRelaxedUntilTheStartIsOver(t *testing.T) {
	prev := debug.SetGCPercent(defaultGCPercent)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "")
	returned := 0
	prevReturn := returnFreedMemory
	returnFreedMemory = func() { returned++ }
	t.Cleanup(func() { returnFreedMemory = prevReturn })

	done := make(chan struct{})
	restored := relaxCollectorUntil(context.Background(), logr.Discard(), nil, done)
	require.NotNil(t, restored)
	require.Equal(t, startGCPercent, gcPercent())
	require.Zero(t, returned, "nothing returned while the start goes on")
	close(done)
	<-restored
	require.Equal(t, defaultGCPercent, gcPercent())
	require.Equal(t, 1, returned, "the start's freed memory returned once")

	ctx, cancel := context.WithCancel(context.Background())
	restored = relaxCollectorUntil(ctx, logr.Discard(), nil, nil)
	require.Equal(t, startGCPercent, gcPercent())
	cancel()
	<-restored
	require.Equal(t, defaultGCPercent, gcPercent(), "restored when the process stops starting")
	require.Equal(t, 1, returned, "nothing returned when the process stops")

	t.Setenv("GOGC", "75")
	debug.SetGCPercent(75)
	require.Nil(t, relaxCollectorUntil(context.Background(), logr.Discard(), nil, nil))
	require.Equal(t, 75, gcPercent(), "GOGC set: left alone")
}

// A first sync by diff (database mode) narrows the start's target to firstDiffGCPercent,
// returning the start's freed memory before the diff grows the heap, and the steady target
// comes back when the start is over (issue #45: at startGCPercent that sync's garbage made
// the process's peak, 2.2 GB at 10,000 Ingresses).
func TestCollectorNarrowedForTheFirstDiff(t *testing.T) {
	prev := debug.SetGCPercent(defaultGCPercent)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "")
	returnedAt := make(chan int, 4) // the target each time the freed memory was returned
	prevReturn := returnFreedMemory
	returnFreedMemory = func() { returnedAt <- gcPercent() }
	t.Cleanup(func() { returnFreedMemory = prevReturn })

	diff, done := make(chan struct{}), make(chan struct{})
	restored := relaxCollectorUntil(context.Background(), logr.Discard(), diff, done)
	require.NotNil(t, restored)
	require.Equal(t, startGCPercent, gcPercent())
	close(diff)
	require.Equal(t, firstDiffGCPercent, <-returnedAt, "the start's freed memory returned as the diff starts, at the diff's target")
	require.Equal(t, firstDiffGCPercent, gcPercent(), "the first diff runs at its own target, not the start's")
	select {
	case <-restored:
		t.Fatal("restored before the start is over")
	default:
	}
	close(done)
	<-restored
	require.Equal(t, defaultGCPercent, gcPercent(), "the steady target after the start")
	require.Equal(t, defaultGCPercent, <-returnedAt, "freed memory returned again as the start ends")
	require.Empty(t, returnedAt)
}

// gcPercent reads the collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
