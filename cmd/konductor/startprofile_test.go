package main

import (
	"context"
	"os"
	"path/filepath"
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
	require.Nil(t, profileStartUntil(context.Background(), logr.Discard(), make(chan struct{})))
}
