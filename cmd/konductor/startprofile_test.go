package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
)

// The start's CPU profile is written when the start is over: a profile (gzip-compressed, as
// pprof writes them).
func TestStartProfileWrittenWhenTheStartIsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "start.pprof")
	t.Setenv(startProfileEnv, path)
	done := make(chan struct{})
	written := profileStartUntil(context.Background(), logr.Discard(), done)
	require.NotNil(t, written)
	close(done)
	<-written
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "gzip's magic number")
}

// Without the variable nothing is profiled.
func TestNoStartProfileByDefault(t *testing.T) {
	t.Setenv(startProfileEnv, "")
	t.Setenv(startTraceEnv, "")
	require.Nil(t, profileStartUntil(context.Background(), logr.Discard(), make(chan struct{})))
}

// The start's execution trace is written over the same span, with or without the profile.
func TestStartTraceWrittenWhenTheStartIsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "start.trace")
	t.Setenv(startProfileEnv, "")
	t.Setenv(startTraceEnv, path)
	done := make(chan struct{})
	written := profileStartUntil(context.Background(), logr.Discard(), done)
	require.NotNil(t, written)
	close(done)
	<-written
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("go 1.")), "the runtime trace's header")
}

// A start that ends before the first push (here the controller cannot even be built) still
// stops the trace and writes it out before runController returns: the process exits right
// after, and a trace still running then is lost.
func TestStartTraceStoppedWhenTheStartFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "start.trace")
	t.Setenv(startProfileEnv, "")
	t.Setenv(startTraceEnv, path)
	err := runController(context.Background(), []string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")}, io.Discard)
	require.Error(t, err)
	require.False(t, trace.IsEnabled(), "the start's trace still runs after runController returned")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("go 1.")), "the runtime trace's header")
}
