package dataplane

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/redact"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// SnapshotSource is where the loop reads cluster state: the store, in the controller.
type SnapshotSource interface {
	Snapshot(ctx context.Context) (*store.Snapshot, error)
}

// TranslateFunc turns a snapshot into Kong state, per-object problems and the object graph
// (which a fallback configuration needs to find what depends on a refused object).
type TranslateFunc func(*store.Snapshot) translator.Result

// Gateway is one Kong the loop keeps in step.
type Gateway interface {
	// URL names the gateway in logs, metrics and events.
	URL() string
	// Sync makes the gateway hold target. A *RejectedError means the gateway refused the
	// configuration (retrying the same one is pointless); any other error is retried with
	// backoff.
	Sync(ctx context.Context, target *Target) error
}

// The configuration protocols, KIC's values of the "protocol" metrics label.
const (
	ProtocolDBLess = "db-less" // POST /config
	ProtocolDeck   = "deck"    // entity by entity, database mode
)

// ProtocolNamer is a Gateway that says how it is configured (ProtocolDBLess or ProtocolDeck;
// "" while it does not know yet), for metrics.
type ProtocolNamer interface {
	Protocol() string
}

// protocolOf is g's protocol, "" when it does not say.
func protocolOf(g Gateway) string {
	if p, ok := g.(ProtocolNamer); ok {
		return p.Protocol()
	}
	return ""
}

// DatabaseReporter is a Gateway that knows whether its Kong has a database before its first
// sync has detected it (DetectingGateway: from the GET / asked while the cache synced).
type DatabaseReporter interface {
	Database() (db, known bool)
}

// SyncsByDiff reports whether g is synced entity by entity (database mode), as far as is
// known when its sync starts.
func SyncsByDiff(g Gateway) bool {
	if protocolOf(g) == ProtocolDeck {
		return true
	}
	if r, ok := g.(DatabaseReporter); ok {
		db, known := r.Database()
		return known && db
	}
	return false
}

// Target is one translation result, shared by every gateway of a round. Rendering happens at
// most once per round, whatever the number of gateways.
type Target struct {
	State    *kongstate.State
	Problems []translator.Problem
	// Graph is the translation's object graph; nil for a target made by hand (tests, the
	// diff command): a refused object then only takes itself out.
	Graph *objgraph.Graph
	// Resend makes a gateway send the target even when it holds it already (KIC's
	// --enable-reverse-sync): a DB-less gateway is posted the configuration again, a
	// database-backed one is listed and diffed instead of skipped (dbmode FullSyncEvery).
	Resend bool

	snapshot  *store.Snapshot // what was translated; nil for a target made by hand
	seq       uint64          // the loop's round that translated it (debug logs); 0 when made by hand
	fallbacks *fallbacks      // nil when fallback configuration is off
	// renderer re-uses the bytes of entities the previous round's target rendered; nil
	// renders everything.
	renderer *kongstate.Renderer

	once   sync.Once
	config []byte
	err    error

	digestOnce sync.Once
	digest     [sha256.Size]byte

	redactOnce sync.Once
	redactor   *redact.Redactor

	bodyOnce sync.Once
	body     kongstate.Body
	bodyErr  error

	// configDone and bodyDone are set once DeclarativeConfig and DBLessBody have rendered:
	// SentConfig reads the form rendered without rendering the other (diagnostics.go).
	configDone, bodyDone atomic.Bool
}

// NewTarget is the target of a translation outside the loop (a standby's preparation):
// rendered with r, which re-uses the bytes of entities it rendered for earlier targets.
func NewTarget(res translator.Result, r *kongstate.Renderer) *Target {
	return newTarget(res, nil, nil, r)
}

func newTarget(res translator.Result, snap *store.Snapshot, fb *fallbacks, r *kongstate.Renderer) *Target {
	return &Target{State: res.State, Problems: res.Problems, Graph: res.Graph, snapshot: snap, fallbacks: fb, renderer: r}
}

// DeclarativeConfig is the DB-less /config body of the target, rendered once.
// RoundRedactor is r's redaction: r.Redactor's, else redact.ForState of r.State (a round
// made by hand, in tests).
func RoundRedactor(r Round) *redact.Redactor {
	if r.Redactor != nil {
		return r.Redactor()
	}
	return redact.ForState(r.State)
}

// Redactor is the one redaction of everything this target's messages reach (Events, status,
// logs, diagnostics): redact.ForTranslation of its State, graph and the Secrets of its
// snapshot, made on first use.
func (t *Target) Redactor() *redact.Redactor {
	t.redactOnce.Do(func() {
		var secrets []*corev1.Secret
		if t.snapshot != nil {
			secrets = t.snapshot.Secrets
		}
		t.redactor = redact.ForTranslation(t.State, t.Graph, secrets)
	})
	return t.redactor
}

func (t *Target) DeclarativeConfig() ([]byte, error) {
	t.once.Do(func() {
		if t.renderer != nil {
			t.config, t.err = t.renderer.DeclarativeConfig(t.State)
		} else {
			t.config, t.err = t.State.DeclarativeConfig()
		}
		t.configDone.Store(true)
	})
	return t.config, t.err
}

// ConfigDigest is the SHA-256 of DeclarativeConfig, computed once: a standby compares its
// periods' targets by it, and database-backed gateways compare a target with the one Kong
// last took and the one Prepare built from (dbmode), each of them for the same target.
func (t *Target) ConfigDigest() ([sha256.Size]byte, error) {
	cfg, err := t.DeclarativeConfig()
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	t.digestOnce.Do(func() { t.digest = sha256.Sum256(cfg) })
	return t.digest, nil
}

// DBLessBody is the body of a DB-less Kong's POST /config for the target (dbless.Body of
// DeclarativeConfig), rendered once, without rendering DeclarativeConfig when nothing else
// asks for it: the renderer keeps the entities' bytes escaped.
func (t *Target) DBLessBody() (kongstate.Body, error) {
	t.bodyOnce.Do(func() {
		defer t.bodyDone.Store(true)
		if t.renderer != nil {
			t.body, t.bodyErr = t.renderer.QuotedDeclarativeConfig(t.State, dbless.BodyPrefix, dbless.BodySuffix)
			return
		}
		cfg, err := t.DeclarativeConfig()
		if err != nil {
			t.bodyErr = err
			return
		}
		t.body = kongstate.BodyOf(dbless.Body(cfg))
	})
	return t.body, t.bodyErr
}

// sentSize is the size of what a gateway of protocol was sent of the target: the body of
// POST /config for a DB-less one, the configuration otherwise; 0 when it cannot be rendered.
func (t *Target) sentSize(protocol string) int {
	if protocol == ProtocolDBLess {
		if b, err := t.DBLessBody(); err == nil {
			return b.Len()
		}
		return 0
	}
	if b, err := t.DeclarativeConfig(); err == nil {
		return len(b)
	}
	return 0
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
	// Excluded are the objects left out with the refused ones because they depend on them
	// (the object graph: the Ingress of a refused KongPlugin), refused objects included,
	// when the gateway isolated them itself (database mode). Kong keeps what it held for them.
	Excluded []kongstate.ObjectRef
	// Raw is the gateway's answer as it came, a DB-less Kong's 400 body (nil when there is
	// none): the diagnostics server's raw-error dump. It may quote secrets of the
	// configuration; nothing logs it.
	Raw []byte
	// TooLarge is set when the refusal is of a DB-less body over the gateway's Admin API body
	// limit: not sent, or answered 413 (nil otherwise).
	TooLarge *dbless.BodyTooLarge
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

// GatewayResult is what one gateway did.
type GatewayResult struct {
	URL string
	// Skipped is true when the gateway was not tried because it is backing off after a
	// failure; Err is then that failure.
	Skipped bool
	Err     error
	// Fallback is set when the gateway refused the configuration (Err) and a fallback
	// configuration was tried (fallback.go).
	Fallback *FallbackResult

	// For metrics, of a sync that ran (not Skipped): the gateway's protocol ("" when not
	// known yet), how long the sync of the round's configuration took, and that
	// configuration's size in bytes (0 when it could not be rendered).
	Protocol string
	Duration time.Duration
	Size     int
	// EventAt is the time of the oldest change event this sync delivered to the gateway: set
	// when the gateway took a configuration (the round's or a fallback) that includes changes
	// it did not hold before; zero otherwise.
	EventAt time.Time
	// Stale is true when the sync carried an older translation than the round's latest (a
	// round translated again while it ran; the gateway gets the latest next).
	Stale bool
	// Unchanged is true when the gateway held the round's configuration already and nothing
	// was sent (a resync): KIC counts no push then.
	Unchanged bool
}

// Round is a report of the loop: a round's translation problems and the gateways it skipped,
// or syncs that ended since the last report (Problems are then the current translation's).
type Round struct {
	Problems []translator.Problem
	// Graph is the object graph of the round's translation of the whole snapshot; nil in
	// reports of syncs that ended.
	Graph *objgraph.Graph
	// GatewayAPI is which Gateway API objects the round's translation of the whole snapshot
	// found ours and how their routes attach (with their unresolved references), for their
	// status; nil in reports of syncs that ended.
	GatewayAPI *gatewayapi.Attachment
	// State is the configuration the round's gateways were sent (nil when there was none).
	State    *kongstate.State
	Gateways []GatewayResult
	// Held is the configuration every gateway holds after this report when they all hold
	// one and the same (the round's State, or the fallback configuration they took
	// instead); nil otherwise. A round without gateways holds its State (KIC counts a
	// round without ready gateways as synced). What Konnect is given (KIC's
	// UpdateKongState after a sync to every gateway, or after its fallback).
	Held *kongstate.State
	// SnapshotErr is set when the cache could not be read; nothing was synced.
	SnapshotErr error
	// Translated is true in the report of a round that translated the snapshot (false in
	// reports of syncs that ended); TranslationDuration is how long that took.
	Translated          bool
	TranslationDuration time.Duration
	// Redactor is the redaction of the round's messages (Target.Redactor), made when one is
	// needed; nil in reports that carry no State (then redact.ForState of State serves).
	Redactor func() *redact.Redactor
	// SnapshotCache says, in the report of a round that translated with fallback
	// configuration on, whether the cache had changed since the previous round that read it:
	// KIC's processed config snapshot cache hit or miss (SnapshotCacheUnknown otherwise).
	SnapshotCache SnapshotCache
}

// SnapshotCache is a round's answer to KIC's question "did the cache change since the last
// snapshot processed?" (its KongClient.Update, under its FallbackConfiguration gate: a hit
// when the cache's hash is that of the last snapshot processed). konductor keeps no hash of
// the cache: a round is a hit when it was woken by no request of the trigger (a resync
// period, a retry), so that no informer event, CRD change or gateway's router change came
// since the previous round, and that round read the cache; a miss otherwise (the first
// round, one after a round that could not read the cache, one woken by a change). The
// requests are taken before the cache is read, so a change whose event comes while a round
// reads it may be in that round's snapshot, and is counted by the next round's miss. A hit
// skips nothing in konductor: the round translates and every gateway is synced (a gateway
// that holds the configuration is sent nothing).
type SnapshotCache uint8

const (
	// SnapshotCacheUnknown: not recorded (fallback configuration off, or not a round that
	// read the cache).
	SnapshotCacheUnknown SnapshotCache = iota
	// SnapshotCacheHit: nothing changed since the previous round read the cache.
	SnapshotCacheHit
	// SnapshotCacheMiss: the cache may have changed since.
	SnapshotCacheMiss
)

// Reporter is told the outcome of every round and of every sync (events, conditions, metrics).
type Reporter interface {
	Report(ctx context.Context, r Round)
}

// GatewaySet is a changing set of gateways: gateway discovery.
type GatewaySet interface {
	// Run keeps the set current until ctx ends. It calls changed after its first pass and
	// after every change of the set.
	Run(ctx context.Context, changed func())
	// Gateways is the current set.
	Gateways() []Gateway
}

// Options configures a Loop. Zero durations take the documented defaults.
type Options struct {
	Source  SnapshotSource
	Barrier Barrier
	// Translate translates a snapshot: the round's, and the reduced ones of fallback
	// configurations (from sync goroutines, concurrently with rounds).
	Translate TranslateFunc
	// TranslateRound, when set, translates the round's snapshot instead of Translate. Only
	// the loop's goroutine calls it, one round after the other, so it may keep what it needs
	// to translate only what changed since the previous round (translator.Incremental).
	TranslateRound TranslateFunc
	// Renderer renders the rounds' targets; nil: the loop's own. A standby replica that
	// rendered its translations with it hands the loop entity bytes already rendered.
	Renderer *kongstate.Renderer
	// Gateways is a fixed set of gateways; Discovery, when set, replaces it.
	Gateways  []Gateway
	Discovery GatewaySet
	Trigger   *Trigger
	Reporter  Reporter // optional
	Logger    logr.Logger
	Clock     clock.WithTicker // default: the real clock

	// Period is the full resync period (--proxy-sync-seconds). Default 3s.
	Period time.Duration
	// ReverseSync sends every round's target to every gateway even when it holds it
	// (KIC's --enable-reverse-sync; Target.Resend).
	ReverseSync bool
	// Quiet is how long the loop waits for a burst of change events to end before it syncs,
	// when a round that took change events ran less than Quiet ago; a change after a quiet
	// period (or right after a resync) is translated at once. Default 50ms.
	Quiet time.Duration
	// MaxDelay bounds that wait, so a steady stream of changes still syncs. Default 1s.
	MaxDelay time.Duration
	// Backoff is the retry schedule of a failing gateway. Default 500ms doubling to 1m, with
	// jitter.
	Backoff wait.Backoff
	// MaxConcurrentSyncs bounds the gateway syncs in flight. Default DefaultMaxConcurrentSyncs.
	MaxConcurrentSyncs int
	// Fallback turns fallback configuration on (KIC's FallbackConfiguration gate; on by
	// default in konductor's flags, off in the zero Options): see fallback.go.
	Fallback bool
	// UseLastValidConfigForFallback fills the objects a fallback leaves out back in from the
	// last snapshot a gateway accepted (KIC's --use-last-valid-config-for-fallback).
	UseLastValidConfigForFallback bool
	// Diagnostics, when set, is told which configurations the gateways took and refused
	// (--dump-config: internal/diagnostics). nil: nothing is kept.
	Diagnostics Diagnostics

	// CacheSyncTimeout bounds the wait for the cache before the first sync (KIC's
	// --cache-sync-timeout): a cache that has not synced by then stops the controller with an
	// error naming the kinds not synced, rather than waiting in silence. 0: two minutes, the
	// controller-runtime default KIC falls back to.
	CacheSyncTimeout time.Duration
	// SkipCacheBarrierForTesting removes the barrier. It exists only so that a test can show
	// that the barrier is what prevents syncing an empty cache; never set it elsewhere.
	SkipCacheBarrierForTesting bool
}

// DefaultMaxConcurrentSyncs is how many gateway syncs run at once by default: enough for a
// hundred DB-less gateways to take a configuration in about the time one takes.
const DefaultMaxConcurrentSyncs = 128

// Loop is the sync loop, a leader-only manager Runnable.
//
// Every gateway syncs on its own: a round translates once and hands the result to every
// gateway that is idle; a gateway still busy with an earlier target gets the latest one the
// moment it finishes, so one slow gateway delays none of the others.
type Loop struct {
	opts     Options
	gateways []*gatewayState // owned by the Start goroutine
	target   *Target         // the latest translation
	seq      uint64          // its number; 0 before the first round
	// lastValid is the newest snapshot a gateway accepted (the round's, or a fallback's),
	// and the round it came from, for UseLastValidConfigForFallback.
	lastValid    *store.Snapshot
	lastValidSeq uint64
	done         chan syncDone
	// inFlight counts the syncs started whose result has not been taken from done: Start
	// takes them all before it returns (awaitSyncs).
	inFlight int
	sem      chan struct{}

	firstSync     chan struct{}
	firstSyncOnce sync.Once
	// firstDiff is closed when a sync by diff (database mode) is first handed to a gateway:
	// the translation of the start is done, and what follows is the diff's garbage
	// (FirstDiffStarted).
	firstDiff     chan struct{}
	firstDiffOnce sync.Once

	mu      sync.Mutex
	pending []string // gateways that have not taken a configuration yet, for readiness

	// cacheRead is true when the last round read the cache: the next one without a request of
	// the trigger translates the same objects (Round.SnapshotCache).
	cacheRead bool
	// roundEnded is when the last round that took change events ended: a change within
	// Quiet of it is coalesced with those that follow; one after it is translated at once.
	// A round that took none (the start's, a resync, a retry) does not count: a change right
	// after it is no burst.
	roundEnded time.Time
	// renderer keeps the rendered entities of the round targets' configurations.
	renderer *kongstate.Renderer

	// gate is held while a round is pending (its trigger's request), runs, or has syncs in
	// flight: status writers wait at it (SyncGate).
	gate *SyncGate
}

type gatewayState struct {
	Gateway
	ctx     context.Context
	cancel  context.CancelFunc // ends its sync when the gateway goes away
	backoff wait.Backoff
	retryAt time.Time // zero when not backing off
	lastErr error
	ok      bool   // its last completed sync left it holding the configuration
	took    bool   // it took a configuration at least once
	busy    bool   // a sync runs
	seq     uint64 // the target its last sync started with
	gone    bool   // dropped from the set
	// holds is the configuration the gateway last took (the round's or a fallback); nil
	// before it took one.
	holds *kongstate.State
	// fallbackKey names the fallback it last logged, so that an unchanged one is not logged
	// again every round.
	fallbackKey string
	// eventAt is the time of the oldest change event the gateway does not hold yet (zero when
	// none), and eventSeq the first round that translated it.
	eventAt  time.Time
	eventSeq uint64
}

type syncDone struct {
	g   *gatewayState
	seq uint64
	syncOutcome
}

// syncOutcome is what one sync of a target, fallback included, did.
type syncOutcome struct {
	err       error
	fallback  *FallbackResult
	accepted  *store.Snapshot  // the snapshot the gateway took, if it took one
	took      *kongstate.State // the configuration the gateway took, if it took one
	duration  time.Duration    // of the sync of the round's configuration
	size      int              // of that configuration, bytes
	unchanged bool             // the gateway held that configuration: nothing was sent
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
	if opts.MaxConcurrentSyncs <= 0 {
		opts.MaxConcurrentSyncs = DefaultMaxConcurrentSyncs
	}
	if opts.TranslateRound == nil {
		opts.TranslateRound = opts.Translate
	}
	renderer := opts.Renderer
	if renderer == nil {
		renderer = &kongstate.Renderer{}
	}
	l := &Loop{opts: opts, firstSync: make(chan struct{}), firstDiff: make(chan struct{}), renderer: renderer,
		done: make(chan syncDone, opts.MaxConcurrentSyncs), sem: make(chan struct{}, opts.MaxConcurrentSyncs),
		gate: NewSyncGate()}
	opts.Trigger.holdGate(l.gate)
	return l
}

// SyncGate is held while a sync is pending or running; status writers wait at it between
// writes.
func (l *Loop) SyncGate() *SyncGate { return l.gate }

// NeedLeaderElection makes the manager run the loop on the leader only (invariant 7).
func (l *Loop) NeedLeaderElection() bool { return true }

// FirstSyncDone is closed once a round has succeeded on every gateway (at once when there
// is none: a discovery that found no gateway yet).
func (l *Loop) FirstSyncDone() <-chan struct{} { return l.firstSync }

// FirstDiffStarted is closed when the loop first hands a target to a gateway synced by diff
// (database mode, SyncsByDiff), before that sync begins, or a standby's first Prepare of one
// begins (DiffStarting); never while every gateway is DB-less.
// The process's start ends there for the collector (cmd/konductor): a first sync into an
// empty database-backed Kong builds and throws away go-database-reconciler's states for
// seconds (20 s at 10,000 Ingresses), and under the start's relaxed target that garbage
// alone made the peak (issue #45).
func (l *Loop) FirstDiffStarted() <-chan struct{} { return l.firstDiff }

// DiffStarting closes FirstDiffStarted unless it is already: a standby replica's Prepare,
// which dumps Kong and runs the diff dry before this replica leads, says so too
// (manager.standbyPreparer), as its garbage is the same.
func (l *Loop) DiffStarting() { l.firstDiffOnce.Do(func() { close(l.firstDiff) }) }

// Ready returns nil once the first sync is done and every current gateway has taken a
// configuration; otherwise why not.
func (l *Loop) Ready() error {
	select {
	case <-l.firstSync:
	default:
		return errors.New("first sync to Kong not completed")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) > 0 {
		return fmt.Errorf("gateways without the configuration yet: %s", strings.Join(l.pending, ", "))
	}
	return nil
}

// Start runs the loop until ctx ends, and returns once the syncs it started have ended
// (their context ends with ctx).
func (l *Loop) Start(ctx context.Context) error {
	defer l.awaitSyncs()
	log := l.opts.Logger
	started := l.opts.Clock.Now()
	if l.opts.SkipCacheBarrierForTesting {
		log.Info("cache barrier skipped (test-only switch)")
	} else {
		log.Info("waiting for the cache to sync before the first sync to Kong")
		timeout := l.opts.CacheSyncTimeout
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		err := l.opts.Barrier.WaitForCacheSync(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil //nolint:nilerr // shutting down before the cache synced is not a failure
			}
			return fmt.Errorf("--cache-sync-timeout (%s): %w", timeout, err)
		}
		log.Info("cache synced", "waited", l.opts.Clock.Since(started).String())
	}

	var setChanged <-chan struct{}
	if l.opts.Discovery != nil {
		// Discovery reads the cache too, so it starts after the barrier; the first round
		// waits for its first pass, so that it knows the gateways.
		changed := NewTrigger()
		setChanged = changed.C()
		go l.opts.Discovery.Run(ctx, changed.Request)
		select {
		case <-ctx.Done():
			return nil
		case <-setChanged:
		}
		l.updateGateways(ctx, l.opts.Discovery.Gateways())
	} else {
		l.updateGateways(ctx, l.opts.Gateways)
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
		doRound := true
		select {
		case <-ctx.Done():
		case <-l.opts.Trigger.C():
			if l.opts.Clock.Since(l.roundEnded) < l.opts.Quiet {
				l.coalesce(ctx)
			}
		case <-ticker.C():
		case <-retry:
		case d := <-l.done:
			l.collect(ctx, d, started)
			doRound = false
		case <-setChanged:
			l.updateGateways(ctx, l.opts.Discovery.Gateways())
			l.dispatchStale(started)
			doRound = false
		}
		if retryTimer != nil {
			retryTimer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
		if doRound {
			l.round(ctx, started)
		}
	}
}

// coalesce waits until change events have been quiet for Quiet, or MaxDelay passed, so that a
// burst of changes becomes one sync. The first change after a quiet period does not wait
// (Start): a burst is then two rounds, its first event's and the rest's.
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

// updateGateways makes the loop's gateways those of want (by URL): a new one gets the
// current target at once (dispatchStale), one that went away has its sync cancelled.
func (l *Loop) updateGateways(ctx context.Context, want []Gateway) {
	have := map[string]*gatewayState{}
	for _, g := range l.gateways {
		have[g.URL()] = g
	}
	next := make([]*gatewayState, 0, len(want))
	for _, w := range want {
		if g, ok := have[w.URL()]; ok && g.Gateway == w {
			next = append(next, g)
			delete(have, w.URL())
			continue
		}
		gctx, cancel := context.WithCancel(ctx)
		next = append(next, &gatewayState{Gateway: w, ctx: gctx, cancel: cancel, backoff: l.opts.Backoff})
		if l.opts.Discovery != nil {
			l.opts.Logger.Info("gateway added", "gateway", w.URL())
		}
	}
	for url, g := range have {
		g.gone = true
		g.cancel() // an in-flight sync ends; its result is ignored
		l.opts.Logger.Info("gateway dropped", "gateway", url, "syncInFlight", g.busy)
	}
	l.gateways = next
	l.updateReadiness()
}

// round reads the cache, translates, and hands the result to every idle gateway that is not
// backing off.
func (l *Loop) round(ctx context.Context, started time.Time) {
	l.gate.hold()
	defer l.gate.release()
	log := l.opts.Logger
	// The requests made so far are this round's: their changes are in the cache it reads now.
	roundStart := l.opts.Clock.Now()
	eventAt := l.opts.Trigger.takeFirst()
	snap, err := l.opts.Source.Snapshot(ctx)
	if err != nil {
		// Fail closed: without every kind there is no configuration to send (invariant 6).
		log.Error(err, "not syncing: the cache could not be read")
		// The request this round took is gone: the next round must not count as a hit.
		l.cacheRead = false
		l.report(ctx, Round{SnapshotErr: err})
		return
	}
	cache := SnapshotCacheUnknown
	if l.opts.Fallback { // KIC records it only under its FallbackConfiguration gate
		cache = SnapshotCacheMiss
		if l.cacheRead && eventAt.IsZero() {
			cache = SnapshotCacheHit
		}
	}
	l.cacheRead = true
	translateStart := l.opts.Clock.Now()
	res := l.opts.TranslateRound(snap)
	translated := l.opts.Clock.Since(translateStart)
	var fb *fallbacks
	if l.opts.Fallback {
		fb = &fallbacks{translate: l.opts.Translate, snapshot: snap, graph: res.Graph, clock: l.opts.Clock}
		if l.opts.UseLastValidConfigForFallback {
			fb.lastValid = l.lastValid
		}
	}
	l.target = newTarget(res, snap, fb, l.renderer)
	l.target.Resend = l.opts.ReverseSync
	l.seq++
	l.target.seq = l.seq
	if debug := log.V(1); debug.Enabled() {
		if l.seq == 1 {
			debug.Info("first translation done", "took", translated.String(), "sinceStart", l.opts.Clock.Since(started).String())
		}
		// A change's way through the controller, read by the end-to-end benchmark
		// (test/benche2e): the first change event this round takes (zero when none, a
		// resync), when the round began and when its translation ended.
		debug.Info("round translated", "round", l.seq, "event", eventAt, "roundStart", roundStart,
			"translateStart", translateStart, "translated", translateStart.Add(translated))
	}
	if !eventAt.IsZero() {
		for _, g := range l.gateways {
			if g.eventAt.IsZero() {
				g.eventAt, g.eventSeq = eventAt, l.seq
			}
		}
	}
	skipped := l.dispatchStale(started)
	held := l.held()
	if len(l.gateways) == 0 {
		held = res.State // KIC hands a round without gateways on as synced
	}
	l.report(ctx, Round{Problems: res.Problems, State: res.State, Graph: res.Graph, GatewayAPI: res.Gateway, Gateways: skipped, Translated: true, TranslationDuration: translated,
		SnapshotCache: cache, Held: held, Redactor: l.target.Redactor})
	if !eventAt.IsZero() {
		l.roundEnded = l.opts.Clock.Now()
	}
}

// held is the configuration every gateway holds, when they all hold the same one (the
// round's, or one fallback configuration); nil otherwise or without gateways.
func (l *Loop) held() *kongstate.State {
	var held *kongstate.State
	for _, g := range l.gateways {
		if g.holds == nil || (held != nil && g.holds != held) {
			return nil
		}
		held = g.holds
	}
	return held
}

// dispatchStale starts a sync of the current target on every gateway that does not hold it,
// is idle and is not backing off; it returns the gateways skipped for their backoff.
func (l *Loop) dispatchStale(started time.Time) []GatewayResult {
	if l.target == nil {
		return nil
	}
	var skipped []GatewayResult
	now := l.opts.Clock.Now()
	for _, g := range l.gateways {
		switch {
		case g.busy || g.seq == l.seq:
			// Busy: it gets the latest target when it finishes.
		case !g.retryAt.IsZero() && now.Before(g.retryAt):
			skipped = append(skipped, GatewayResult{URL: g.URL(), Skipped: true, Err: g.lastErr})
		default:
			l.dispatch(g)
		}
	}
	l.checkFirstSync(started)
	return skipped
}

func (l *Loop) dispatch(g *gatewayState) {
	g.busy, g.seq, g.retryAt = true, l.seq, time.Time{} // settle sets a new retry time if it fails
	target, seq := l.target, l.seq
	if SyncsByDiff(g.Gateway) {
		l.DiffStarting()
	}
	l.gate.hold()
	l.inFlight++
	go func() {
		d := syncDone{g: g, seq: seq}
		select {
		case l.sem <- struct{}{}:
			d.syncOutcome = l.syncWithFallback(g, target)
			<-l.sem
		case <-g.ctx.Done():
			d.err = g.ctx.Err()
		}
		// The gate is released once the sync's result has been reported (collect), so that a
		// status writer waiting at it writes what the sync did, not what the round before it
		// said (a KongUpstreamPolicy's Pending, then Programmed: two writes for one change);
		// by awaitSyncs once the loop has stopped. Always sent: a result left in done, or a
		// sync that released the gate itself, raced with the stop and could leave it held.
		l.done <- d
	}()
}

// awaitSyncs waits, when the loop stops, for the syncs still in flight (their context has
// ended) and releases the gate each of them holds, so that no status writer waits at a gate
// nothing opens, and no sync of this loop runs once Start returned (but one that ignores
// its context: below).
//
// A sync that does not end with its context (a Gateway whose Sync ignores it, a fallback's
// translation asking a slow gateway) is waited for stopSyncsWait at most: then the gate
// holds of the syncs still in flight are released, and their results are drained when they
// come, so that Start returns (and the manager releases the lease) within its grace. Such a
// sync may still push its older target after a new leader's push; the new leader's next
// change or resync period sends the current one again.
func (l *Loop) awaitSyncs() {
	if l.inFlight == 0 {
		return
	}
	deadline := time.NewTimer(stopSyncsWait)
	defer deadline.Stop()
	for ; l.inFlight > 0; l.inFlight-- {
		select {
		case <-l.done:
			l.gate.release()
		case <-deadline.C:
			left, done := l.inFlight, l.done
			for range left {
				l.gate.release()
			}
			go func() {
				for range left {
					<-done
				}
			}()
			l.inFlight = 0
			return
		}
	}
}

// stopSyncsWait bounds how long a stopping loop waits for its syncs in flight (awaitSyncs):
// well within the manager's shutdown grace. A variable for tests.
var stopSyncsWait = 3 * time.Second

// collect settles d and every other sync that has ended, reports them, and gives the
// gateways that finished the latest target if they synced an older one.
func (l *Loop) collect(ctx context.Context, d syncDone, started time.Time) {
	var results []GatewayResult
	ended := 0 // syncs whose gate hold is released once reported
	for more := true; more; {
		ended++
		l.inFlight--
		d.g.busy = false
		if d.accepted != nil && d.seq >= l.lastValidSeq {
			l.lastValid, l.lastValidSeq = d.accepted, d.seq
		}
		if d.took != nil {
			d.g.holds = d.took
		}
		if !d.g.gone {
			res := l.measured(d, l.settle(ctx, d))
			res.Stale = d.seq != l.seq
			results = append(results, res)
		}
		select {
		case d = <-l.done:
		default:
			more = false
		}
	}
	l.updateReadiness()
	if len(results) > 0 {
		l.report(ctx, Round{Problems: l.target.Problems, State: l.target.State, Gateways: results, Held: l.held(), Redactor: l.target.Redactor})
	}
	l.dispatchStale(started) // a gateway that synced an older target holds the gate again first
	for range ended {
		l.gate.release()
	}
}

func (l *Loop) checkFirstSync(started time.Time) {
	for _, g := range l.gateways {
		if !g.ok {
			return
		}
	}
	l.firstSyncOnce.Do(func() {
		l.opts.Logger.Info("first sync completed", "sinceStart", l.opts.Clock.Since(started).String(), "gateways", len(l.gateways))
		close(l.firstSync)
	})
}

func (l *Loop) updateReadiness() {
	var pending []string
	for _, g := range l.gateways {
		if !g.took {
			pending = append(pending, g.URL())
		}
	}
	l.mu.Lock()
	l.pending = pending
	l.mu.Unlock()
}

// measured adds to res the metrics of d: protocol, duration, size, and the time of the oldest
// change event d delivered when the gateway took a configuration that includes it.
func (l *Loop) measured(d syncDone, res GatewayResult) GatewayResult {
	g := d.g
	res.Protocol, res.Duration, res.Size, res.Unchanged = protocolOf(g.Gateway), d.duration, d.size, d.unchanged
	took := d.accepted != nil
	if rej := (*RejectedError)(nil); errors.As(d.err, &rej) && rej.RestApplied {
		took = true // database mode applied all but the refused objects
	}
	if took && !g.eventAt.IsZero() && g.eventSeq <= d.seq {
		res.EventAt = g.eventAt
		g.eventAt, g.eventSeq = time.Time{}, 0
	}
	return res
}

// settle records what a finished sync of g means for it: back in step, refused (the same
// configuration is not retried), or failed (retry with backoff).
func (l *Loop) settle(ctx context.Context, d syncDone) GatewayResult {
	log := l.opts.Logger
	g, err := d.g, d.err
	if fb := d.fallback; fb != nil {
		// The gateway refused the round's configuration; what it holds now is the
		// fallback's outcome.
		// Logged when it changes: a refused configuration stays refused round after round.
		if key := refsKey(fb.Excluded) + fmt.Sprint(fb.Err); key != g.fallbackKey {
			g.fallbackKey = key
			log.Error(l.redact(err), "gateway rejected the configuration; fallback configuration tried", "gateway", g.URL(),
				"broken", refsString(fb.Broken), "excluded", refsString(fb.Excluded), "backfilled", len(fb.Backfilled), "fallbackError", l.redact(fb.Err))
		}
		err = fb.Err
		// A fallback that would leave nothing was not sent: like a refused one, it is not
		// retried with backoff (the same round would leave nothing again).
		if refusal(err) == nil && err != nil && !errors.Is(err, ErrFallbackLeavesNothing) {
			res := l.settleError(ctx, g, err)
			res.Err, res.Fallback = d.err, fb
			return res
		}
		g.retryAt, g.lastErr, g.backoff, g.ok = time.Time{}, nil, l.opts.Backoff, err == nil
		g.took = g.took || g.ok
		return GatewayResult{URL: g.URL(), Err: d.err, Fallback: fb}
	}
	var rej *RejectedError
	switch {
	case err == nil:
		g.fallbackKey = ""
		if g.lastErr != nil {
			log.Info("gateway recovered", "gateway", g.URL())
		}
		g.retryAt, g.lastErr, g.backoff, g.ok = time.Time{}, nil, l.opts.Backoff, true
	case errors.As(err, &rej):
		// The gateway keeps its last good configuration; the same one is not retried.
		g.retryAt, g.lastErr, g.backoff, g.ok = time.Time{}, nil, l.opts.Backoff, rej.RestApplied
		kv := []any{"gateway", g.URL(), "entities", len(rej.Entities)}
		if tl := rej.TooLarge; tl != nil {
			kv = append(kv, "bodyBytes", tl.Size, "limitBytes", tl.Limit, "setting", kongrules.AdminMaxBodySizeEnv)
		}
		log.Error(l.redact(err), "gateway rejected the configuration", kv...)
	default:
		return l.settleError(ctx, g, err)
	}
	g.took = g.took || g.ok
	return GatewayResult{URL: g.URL(), Err: err}
}

// settleError records a failed sync of g (not a refusal): retried with backoff.
func (l *Loop) settleError(ctx context.Context, g *gatewayState, err error) GatewayResult {
	g.ok = false
	g.seq = 0 // not holding the target: the retry sends it again
	if ctx.Err() == nil {
		delay := g.backoff.Step()
		g.retryAt, g.lastErr = l.opts.Clock.Now().Add(delay), err
		l.opts.Logger.Error(l.redact(err), "sync failed; retrying with backoff", "gateway", g.URL(), "retryIn", delay.String())
	}
	return GatewayResult{URL: g.URL(), Err: err}
}

// syncWithFallback syncs target to g and, when g refuses it naming objects and fallback is
// on, the fallback configuration without them (fallback.go). Its outcome has the sync's
// error, the fallback's outcome (nil when none was tried) and the snapshot g took, if any.
func (l *Loop) syncWithFallback(g *gatewayState, target *Target) syncOutcome {
	var out syncOutcome
	note := &syncNote{}
	out.err, out.duration, out.size = l.timedSync(withSyncNote(g.ctx, note), g, target)
	out.unchanged = out.err == nil && note.unchanged.Load()
	if debug := l.opts.Logger.V(1); out.unchanged && debug.Enabled() {
		// Where a change can stop too: it changed nothing Kong is sent (docs/troubleshooting.md).
		debug.Info("configuration unchanged: the gateway holds it already, nothing sent", "gateway", g.URL(), "round", target.seq)
	}
	l.observe(g, target, out.err, false)
	if out.err == nil {
		out.accepted, out.took = target.snapshot, target.State
		return out
	}
	rej := refusal(out.err)
	if rej == nil || target.fallbacks == nil {
		return out
	}
	broken := brokenObjects(rej)
	if len(broken) == 0 {
		return out // nothing to isolate: the gateway keeps its last good configuration
	}
	res := &FallbackResult{}
	out.fallback = res
	if d := l.opts.Diagnostics; d != nil {
		// Told once the passes are over: what the gateway holds then.
		defer func() { d.Fallback(g.URL(), *res) }()
	}
	for pass := 1; ; pass++ {
		plan, built := target.fallbacks.plan(broken)
		res.Broken, res.Excluded, res.Backfilled, res.Problems = broken, plan.excluded, plan.backfilled, plan.target.Problems
		if built {
			res.Translations = append(res.Translations, plan.translation)
		}
		// A fallback without any entity would take every route the gateway serves: sent
		// only to a gateway that holds nothing (ErrFallbackLeavesNothing).
		if keep, err := leavesNothing(g.ctx, g.Gateway, plan.target); keep || err != nil {
			res.Err = err
			if keep {
				res.Err = ErrFallbackLeavesNothing
			}
			return out
		}
		var d time.Duration
		res.Err, d, res.Size = l.timedSync(g.ctx, g, plan.target)
		res.Duration += d
		l.observe(g, plan.target, res.Err, true)
		if res.Err == nil {
			out.accepted, out.took = plan.snapshot, plan.target.State
			return out
		}
		frej := refusal(res.Err)
		if frej == nil || pass == maxFallbackPasses {
			return out
		}
		more := brokenObjects(frej)
		known := map[kongstate.ObjectRef]bool{}
		for _, b := range broken {
			known[objgraph.Key(b)] = true
		}
		grown := false
		for _, m := range more {
			if !known[objgraph.Key(m)] {
				broken, grown = append(broken, m), true
			}
		}
		if !grown {
			return out
		}
		sortRefs(broken)
	}
}

// timedSync syncs target to g and says how long that took and the size of the configuration
// (0 when it cannot be rendered).
func (l *Loop) timedSync(ctx context.Context, g *gatewayState, target *Target) (error, time.Duration, int) { //nolint:revive // the error first reads as the sync's own
	start := l.opts.Clock.Now()
	err := g.Sync(ctx, target)
	took := l.opts.Clock.Since(start)
	size := 0
	if target.State != nil {
		size = target.sentSize(protocolOf(g.Gateway))
	}
	return err, took, size
}

func refsString(refs []kongstate.ObjectRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// redact masks the secrets of the current target in err, for logs: Kong echoes values in its
// messages (a duplicate key-auth key, for one).
func (l *Loop) redact(err error) error {
	if err == nil {
		return nil
	}
	return l.target.Redactor().Error(err)
}

func (l *Loop) report(ctx context.Context, r Round) {
	if l.opts.Reporter != nil {
		l.opts.Reporter.Report(ctx, r)
	}
}

// Reporters tells several reporters, in order.
type Reporters []Reporter

// ReporterFunc is a function as a Reporter.
type ReporterFunc func(ctx context.Context, r Round)

// Report implements Reporter.
func (f ReporterFunc) Report(ctx context.Context, r Round) { f(ctx, r) }

// Report implements Reporter.
func (rs Reporters) Report(ctx context.Context, r Round) {
	for _, rep := range rs {
		rep.Report(ctx, r)
	}
}

// syncNote is what a Gateway's Sync says of itself besides its error, through its context.
type syncNote struct{ unchanged atomic.Bool }

type syncNoteKey struct{}

func withSyncNote(ctx context.Context, n *syncNote) context.Context {
	return context.WithValue(ctx, syncNoteKey{}, n)
}

// NoteUnchanged is called by a Gateway's Sync that sent nothing because the gateway holds the
// target already: the push is not counted (KIC counts a push only when the configuration
// changed, or with --enable-reverse-sync).
func NoteUnchanged(ctx context.Context) {
	if n, ok := ctx.Value(syncNoteKey{}).(*syncNote); ok {
		n.unchanged.Store(true)
	}
}
