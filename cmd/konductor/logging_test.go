package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
)

// KIC's --log-format: text (the default) or json; --log-level trace shows every V level,
// debug V(1) to V(7), info none.
func TestLoggerFormatsAndLevels(t *testing.T) {
	var text, js bytes.Buffer
	newLogger(&text, "info", "text").Info("hello", "k", "v")
	require.Contains(t, text.String(), `msg=hello k=v`)
	newLogger(&js, "info", "json").Info("hello", "k", "v")
	var line map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &line))
	require.Equal(t, "hello", line["msg"])

	for _, tc := range []struct {
		level string
		shown []int
	}{{"error", nil}, {"info", []int{0}}, {"debug", []int{0, 1, 3, 5}}, {"trace", []int{0, 1, 3, 5, 9}}} {
		var b bytes.Buffer
		log := newLogger(&b, tc.level, "text")
		var shown []int
		for _, v := range []int{0, 1, 3, 5, 9} {
			before := b.Len()
			log.V(v).Info("x")
			if b.Len() > before {
				shown = append(shown, v)
			}
		}
		require.Equal(t, tc.shown, shown, tc.level)
	}
}

// --term-delay: the controller's context ends that long after the stop signal, not at once.
func TestDelayStop(t *testing.T) {
	stop, signal := context.WithCancel(context.Background())
	ctx := delayStop(stop, 200*time.Millisecond, logr.Discard())
	signal()
	select {
	case <-ctx.Done():
		t.Fatal("stopped without the delay")
	case <-time.After(50 * time.Millisecond):
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("never stopped")
	}
	require.Same(t, stop, delayStop(stop, 0, logr.Discard()), "no delay: the stop itself")
}
