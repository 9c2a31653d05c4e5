// Command konductor is a Kubernetes ingress controller for Kong Gateway.
//
//	konductor [run] [flags]        run the controller (the default)
//	konductor translate -f PATH    print the Kong configuration that manifests produce
//	konductor diff [flags]         print what a sync would change on a database-backed Kong
//	konductor explain URL [flags]  which route takes a request, why, and what it came from
//	konductor kongemu [flags]      run the Kong Admin API emulator (local environment, tests)
//	konductor version              print the version
//	konductor completion bash|zsh  print a shell completion script
//	konductor help [command]       list the commands (commands.go), or a command's flags
//
// Installed as kubectl-konductor too (make install), it is the kubectl plugin `kubectl
// konductor explain ...`.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/manager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	if len(args) == 0 && strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		// `kubectl konductor` alone: the commands, not a controller started in a terminal.
		args = []string{"--help"}
	}
	if err := dispatch(ctx, args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "konductor:", err)
		os.Exit(2)
	}
}

func runController(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := config.ParseEnviron(args, os.Environ())
	if err != nil {
		return err
	}
	stopMemoryProfileUnless(cfg.Profiling)
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	ctx = delayStop(ctx, cfg.TermDelay, log)
	log.Info("starting konductor", "version", version)
	setGCPercent(log, setMemoryLimit(log, cgroupMemoryFiles))
	startDone := make(chan struct{})
	startOver := sync.OnceFunc(func() { close(startDone) })
	// In database mode the first sync's diff starts before the start is over; the
	// collector's target narrows there (relaxCollectorUntil). The controller, made below,
	// tells when.
	diffStarted := make(chan struct{})
	diffOver := sync.OnceFunc(func() { close(diffStarted) })
	relaxCollectorUntil(ctx, log, diffStarted, startDone)
	releaseStartPagesWhen(ctx, log, startDone)
	recorded := profileStartUntil(ctx, log, startDone)
	// The start's profile and trace are written whole before the process exits, however the
	// start ends (first push, stop, error).
	defer func() {
		startOver()
		if recorded != nil {
			<-recorded
		}
	}()
	c, err := manager.New(ctx, cfg, manager.Options{Logger: log, Version: version})
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while assembling (waiting for the API server): a clean stop.
			log.Info("stopped before the controller started", "reason", err.Error())
			return nil
		}
		return err
	}
	go func() {
		<-c.FirstSyncDone()
		startOver()
	}()
	go func() {
		select {
		case <-c.FirstDiffStarted():
			diffOver()
		case <-startDone:
		case <-ctx.Done():
		}
	}()
	return c.Start(ctx)
}

// newLogger returns a logr.Logger writing text lines (KIC's default --log-format) or JSON
// lines, and makes controller-runtime and client-go log through it too. KIC's levels: error,
// info, debug (logr V(1) to V(7)), trace (every V level).
func newLogger(w io.Writer, level, format string) logr.Logger {
	lvl := slog.LevelInfo
	switch level {
	case "trace":
		lvl = slog.LevelDebug - 100
	case "debug":
		lvl = slog.LevelDebug - 3 // logr V(1..7): slog level -n is V(n)
	case "error":
		lvl = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	log := logr.FromSlogHandler(h)
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	return log
}

// delayStop is ctx, ended delay after stop (SIGTERM, SIGINT) ends: KIC's --term-delay, which
// keeps the controller serving while the Pod is taken out of load balancers.
func delayStop(stop context.Context, delay time.Duration, log logr.Logger) context.Context {
	if delay <= 0 {
		return stop
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	go func() {
		<-stop.Done()
		log.Info("stopping after --term-delay", "delay", delay.String())
		<-time.After(delay)
		cancel()
	}()
	return ctx
}
