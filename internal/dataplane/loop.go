package dataplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// SnapshotSource is where the loop reads cluster state: the store, in the controller.
type SnapshotSource interface {
	Snapshot(ctx context.Context) (*store.Snapshot, error)
}

// TranslateFunc turns a snapshot into Kong state and per-object problems.
type TranslateFunc func(*store.Snapshot) (*kongstate.State, []translator.Problem)

// Gateway is one Kong the loop keeps in step.
type Gateway interface {
	// URL names the gateway in logs, metrics and events.
	URL() string
	// Sync makes the gateway hold target. A *RejectedError means the gateway refused the
	// configuration (retrying the same one is pointless); any other error is retried with
	// backoff.
	Sync(ctx context.Context, target *Target) error
}

// Target is one translation result, shared by every gateway of a round. Rendering happens at
// most once per round, whatever the number of gateways.
type Target struct {
	State    *kongstate.State
	Problems []translator.Problem

	once   sync.Once
	config []byte
	err    error
}

// DeclarativeConfig is the DB-less /config body of the target, rendered once.
func (t *Target) DeclarativeConfig() ([]byte, error) {
	t.once.Do(func() { t.config, t.err = t.State.DeclarativeConfig() })
	return t.config, t.err
}

// RejectedError is a gateway's refusal of a configuration, with the entities it named.
type RejectedError struct {
	Gateway  string
	Message  string
	Entities []EntityError
	// RestApplied is true when the gateway took everything but the named entities (database
	// mode leaves the refused objects out and syncs the rest): the sync counts as done for
	// readiness. A DB-less gateway refuses a configuration whole, so it never sets it.
	RestApplied bool
}

// EntityError is one entity a gateway refused: the Kubernetes object it came from (found
// through the entity's tags; zero when the tags name none) and the gateway's message.
type EntityError struct {
	Object     kongstate.ObjectRef
	EntityType string
	EntityName string
	Field      string
	Message    string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("gateway %s rejected the configuration: %s", e.Gateway, e.Message)
}

// GatewayResult is what one gateway did in a round.
type GatewayResult struct {
	URL string
	// Skipped is true when the gateway was not tried because it is backing off after a
	// failure; Err is then that failure.
	Skipped bool
	Err     error
}

// Round is everything a sync round learned, for the Reporter.
type Round struct {
	Problems []translator.Problem
	Gateways []GatewayResult
	// SnapshotErr is set when the cache could not be read; nothing was synced.
	SnapshotErr error
}

// Reporter is told the outcome of every round (events, conditions, metrics).
type Reporter interface {
	Report(ctx context.Context, r Round)
}

// Options configures a Loop. Zero durations take the documented defaults.
type Options struct {
	Source    SnapshotSource
	Barrier   Barrier
	Translate TranslateFunc
	Gateways  []Gateway
	Trigger   *Trigger
	Reporter  Reporter // optional
	Logger    logr.Logger
	Clock     clock.WithTicker // default: the real clock

	// Period is the full resync period (--proxy-sync-seconds). Default 3s.
	Period time.Duration
	// Quiet is how long the loop waits for a burst of change events to end before it syncs.
	// Default 50ms.
	Quiet time.Duration
	// MaxDelay bounds that wait, so a steady stream of changes still syncs. Default 1s.
	MaxDelay time.Duration
	// Backoff is the retry schedule of a failing gateway. Default 500ms doubling to 1m, with
	// jitter.
	Backoff wait.Backoff
	// SlowGateway is how long a round waits for a gateway's sync. A sync that takes longer
	// goes on by itself and is collected by a later round, so that one slow or unreachable
	// gateway does not hold back changes to the others. Default 5s.
	SlowGateway time.Duration

	// SkipCacheBarrierForTesting removes the barrier. It exists only so that a test can show
	// that the barrier is what prevents syncing an empty cache; never set it elsewhere.
	SkipCacheBarrierForTesting bool
}

// Loop is the sync loop, a leader-only manager Runnable.
type Loop struct {
	opts     Options
	gateways []*gatewayState

	firstSync     chan struct{}
	firstSyncOnce sync.Once
}

type gatewayState struct {
	Gateway
	backoff wait.Backoff
	retryAt time.Time // zero when not backing off
	lastErr error
	ok      bool // its last completed sync left it holding the configuration

	// done is set while a sync runs past its round (a slow gateway); it delivers that
	// sync's error, which a later round collects.
	done chan error
}

// NewLoop returns a loop; Start runs it.
func NewLoop(opts Options) *Loop {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Period <= 0 {
		opts.Period = 3 * time.Second
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 50 * time.Millisecond
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = time.Second
	}
	if opts.Backoff.Duration <= 0 {
		opts.Backoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: time.Minute}
	}
	if opts.Trigger == nil {
		opts.Trigger = NewTrigger()
	}
	if opts.SlowGateway <= 0 {
		opts.SlowGateway = 5 * time.Second
	}
	l := &Loop{opts: opts, firstSync: make(chan struct{})}
	for _, g := range opts.Gateways {
		l.gateways = append(l.gateways, &gatewayState{Gateway: g, backoff: opts.Backoff})
	}
	return l
}

// NeedLeaderElection makes the manager run the loop on the leader only (invariant 7).
func (l *Loop) NeedLeaderElection() bool { return true }

// FirstSyncDone is closed once a round has succeeded on every gateway.
func (l *Loop) FirstSyncDone() <-chan struct{} { return l.firstSync }

// Start runs the loop until ctx ends.
func (l *Loop) Start(ctx context.Context) error {
	log := l.opts.Logger
	started := l.opts.Clock.Now()
	if l.opts.SkipCacheBarrierForTesting {
		log.Info("cache barrier skipped (test-only switch)")
	} else {
		log.Info("waiting for the cache to sync before the first sync to Kong")
		if err := l.opts.Barrier.WaitForCacheSync(ctx); err != nil {
			if ctx.Err() != nil {
				return nil //nolint:nilerr // shutting down before the cache synced is not a failure
			}
			return err
		}
		log.Info("cache synced", "waited", l.opts.Clock.Since(started).String())
	}

	ticker := l.opts.Clock.NewTicker(l.opts.Period)
	defer ticker.Stop()
	l.round(ctx, started)
	for {
		var retry <-chan time.Time
		var retryTimer clock.Timer
		if at, ok := l.nextRetry(); ok {
			retryTimer = l.opts.Clock.NewTimer(at.Sub(l.opts.Clock.Now()))
			retry = retryTimer.C()
		}
		select {
		case <-ctx.Done():
		case <-l.opts.Trigger.C():
			l.coalesce(ctx)
		case <-ticker.C():
		case <-retry:
		}
		if retryTimer != nil {
			retryTimer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
		l.round(ctx, started)
	}
}

// coalesce waits until change events have been quiet for Quiet, or MaxDelay passed, so that a
// burst of changes becomes one sync.
func (l *Loop) coalesce(ctx context.Context) {
	quiet := l.opts.Clock.NewTimer(l.opts.Quiet)
	defer quiet.Stop()
	limit := l.opts.Clock.NewTimer(l.opts.MaxDelay)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.opts.Trigger.C():
			// Go 1.23+ timers: Reset discards a pending expiry, so no stale tick follows.
			quiet.Reset(l.opts.Quiet)
		case <-quiet.C():
			return
		case <-limit.C():
			return
		}
	}
}

func (l *Loop) nextRetry() (time.Time, bool) {
	var at time.Time
	for _, g := range l.gateways {
		if !g.retryAt.IsZero() && (at.IsZero() || g.retryAt.Before(at)) {
			at = g.retryAt
		}
	}
	return at, !at.IsZero()
}

// round reads the cache, translates, and syncs every gateway that is not backing off.
func (l *Loop) round(ctx context.Context, started time.Time) {
	log := l.opts.Logger
	snap, err := l.opts.Source.Snapshot(ctx)
	if err != nil {
		// Fail closed: without every kind there is no configuration to send (invariant 6).
		log.Error(err, "not syncing: the cache could not be read")
		l.report(ctx, Round{SnapshotErr: err})
		return
	}
	state, problems := l.opts.Translate(snap)
	target := &Target{State: state, Problems: problems}

	// Syncs that outlived an earlier round and have finished since are collected first.
	var results []GatewayResult
	for _, g := range l.gateways {
		if g.done == nil {
			continue
		}
		select {
		case err := <-g.done:
			g.done = nil
			results = append(results, l.settle(ctx, g, err))
		default:
		}
	}

	now := l.opts.Clock.Now()
	type running struct {
		g    *gatewayState
		done chan error
	}
	var syncing []running
	for _, g := range l.gateways {
		switch {
		case g.done != nil:
			// Still busy with an earlier target; a later round gives it the latest one.
		case !g.retryAt.IsZero() && now.Before(g.retryAt):
			results = append(results, GatewayResult{URL: g.URL(), Skipped: true, Err: g.lastErr})
		default:
			done := make(chan error, 1)
			go func() { done <- g.Sync(ctx, target) }()
			syncing = append(syncing, running{g, done})
		}
	}
	wait := l.opts.Clock.NewTimer(l.opts.SlowGateway)
	defer wait.Stop()
	expired := false
	for _, r := range syncing {
		if !expired {
			select {
			case err := <-r.done:
				results = append(results, l.settle(ctx, r.g, err))
				continue
			case <-wait.C():
				expired = true
			}
		}
		select {
		case err := <-r.done:
			results = append(results, l.settle(ctx, r.g, err))
		default:
			r.g.done = r.done
			log.Info("gateway slow to sync; the others go on without it", "gateway", r.g.URL(), "waited", l.opts.SlowGateway.String())
		}
	}

	allOK := true
	for _, g := range l.gateways {
		allOK = allOK && g.ok
	}
	l.report(ctx, Round{Problems: problems, Gateways: results})
	if allOK {
		l.firstSyncOnce.Do(func() {
			log.Info("first sync completed", "sinceStart", l.opts.Clock.Since(started).String(), "gateways", len(l.gateways))
			close(l.firstSync)
		})
	}
}

// settle records what a finished sync of g means for it: back in step, refused (the same
// configuration is not retried), or failed (retry with backoff).
func (l *Loop) settle(ctx context.Context, g *gatewayState, err error) GatewayResult {
	log := l.opts.Logger
	var rej *RejectedError
	switch {
	case err == nil:
		if !g.retryAt.IsZero() {
			log.Info("gateway recovered", "gateway", g.URL())
		}
		g.retryAt, g.lastErr, g.backoff, g.ok = time.Time{}, nil, l.opts.Backoff, true
	case errors.As(err, &rej):
		// The gateway keeps its last good configuration; the same one is not retried.
		g.retryAt, g.lastErr, g.backoff, g.ok = time.Time{}, nil, l.opts.Backoff, rej.RestApplied
		log.Error(err, "gateway rejected the configuration", "gateway", g.URL(), "entities", len(rej.Entities))
	default:
		g.ok = false
		if ctx.Err() == nil {
			delay := g.backoff.Step()
			g.retryAt, g.lastErr = l.opts.Clock.Now().Add(delay), err
			log.Error(err, "sync failed; retrying with backoff", "gateway", g.URL(), "retryIn", delay.String())
		}
	}
	return GatewayResult{URL: g.URL(), Err: err}
}

func (l *Loop) report(ctx context.Context, r Round) {
	if l.opts.Reporter != nil {
		l.opts.Reporter.Report(ctx, r)
	}
}

// Reporters tells several reporters, in order.
type Reporters []Reporter

// Report implements Reporter.
func (rs Reporters) Report(ctx context.Context, r Round) {
	for _, rep := range rs {
		rep.Report(ctx, r)
	}
}
