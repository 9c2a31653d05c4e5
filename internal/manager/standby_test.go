package manager

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// gatedBarrier's cache syncs when synced is closed.
type gatedBarrier struct{ synced chan struct{} }

func (b gatedBarrier) WaitForCacheSync(ctx context.Context) error {
	select {
	case <-b.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type emptySource struct{}

func (emptySource) Snapshot(context.Context) (*store.Snapshot, error) { return &store.Snapshot{}, nil }

// preparingGateway records its Prepare calls; answer is what they return.
type preparingGateway struct {
	url    string
	answer error
	calls  chan *dataplane.Target
	mu     sync.Mutex
	n      int
}

func (g *preparingGateway) URL() string { return g.url }
func (g *preparingGateway) Sync(context.Context, *dataplane.Target) error {
	return errors.New("a standby never syncs")
}
func (g *preparingGateway) Prepare(_ context.Context, t *dataplane.Target) error {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	select {
	case g.calls <- t:
	default:
	}
	return g.answer
}

func (g *preparingGateway) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// A standby prepares its database-backed gateways only once its cache synced, drops a
// gateway that has nothing to prepare (DB-less), and stops when it gains the lease.
func TestStandbyPreparesAfterTheCacheSyncedUntilElected(t *testing.T) {
	barrier := gatedBarrier{synced: make(chan struct{})}
	elected := make(chan struct{})
	db := &preparingGateway{url: "http://db", calls: make(chan *dataplane.Target, 100)}
	dbless := &preparingGateway{url: "http://dbless", answer: dataplane.ErrNothingToPrepare, calls: make(chan *dataplane.Target, 100)}
	translated := make(chan struct{}, 100)
	p := &standbyPreparer{
		elected: elected, barrier: barrier, source: emptySource{},
		shared: &handover{around: func(s *store.Snapshot, build func(*store.Snapshot) translator.Result) translator.Result {
			translated <- struct{}{}
			return build(s)
		}},
		gateways: []dataplane.Gateway{db, dbless}, period: time.Millisecond, log: logr.Discard(),
	}
	require.False(t, p.NeedLeaderElection())
	done := make(chan error, 1)
	go func() { done <- p.Start(context.Background()) }()

	// Not before the cache synced: the preparer is parked in WaitForCacheSync, and neither
	// translates nor prepares.
	select {
	case <-translated:
		t.Fatal("translated before the cache synced")
	case <-db.calls:
		t.Fatal("prepared before the cache synced")
	case <-time.After(50 * time.Millisecond):
	}
	close(barrier.synced)
	<-db.calls // once the translation settled
	<-db.calls // the refresh, standbyRefreshEvery periods later
	require.Equal(t, 1, dbless.count(), "a DB-less gateway is asked once")

	close(elected)
	require.NoError(t, <-done, "Start returns when this replica leads")
}

// A standby prepares once the translation has been unchanged for a period, then only every
// standbyRefreshEvery periods; while the translation changes every period it never dumps Kong.
func TestPrepareScheduleWaitsForTheTranslationToSettle(t *testing.T) {
	d := func(b byte) (x [32]byte) { x[0] = b; return x }
	var s prepareSchedule
	for i := byte(1); i <= 50; i++ {
		require.False(t, s.due(d(i)), "period %d: the translation changed, a Prepare would find Kong behind it", i)
	}
	require.True(t, s.due(d(50)), "settled: prepare")
	for i := 1; i < standbyRefreshEvery; i++ {
		require.False(t, s.due(d(50)), "unchanged period %d after a Prepare", i)
	}
	require.True(t, s.due(d(50)), "the refresh")
	require.False(t, s.due(d(51)), "changed")
	require.True(t, s.due(d(51)), "settled again: prepare at once, not at the next refresh")
}

// snapshotSource gives snap every time.
type snapshotSource struct{ snap *store.Snapshot }

func (s snapshotSource) Snapshot(context.Context) (*store.Snapshot, error) { return s.snap, nil }

// A DB-less standby has nothing to prepare, but keeps translating and rendering every period
// until it leads, with the translator and renderer the loop takes over (handover.go): the
// loop's first round of the same cluster then translates nothing anew, and renders with the
// renderer that holds the standby's entities. What this test sees: the translation continued
// and the loop given the standby's renderer; that the standby renders each period is not
// observable from here (the renderer's cache is kongstate's own).
func TestDBLessStandbyKeepsItsTranslationWarm(t *testing.T) {
	barrier := gatedBarrier{synced: make(chan struct{})}
	elected := make(chan struct{})
	dbless := &preparingGateway{url: "http://dbless", answer: dataplane.ErrNothingToPrepare, calls: make(chan *dataplane.Target, 100)}
	translated := make(chan struct{}, 100)
	snap := benchdata.Snapshot(20)
	shared := &handover{around: func(s *store.Snapshot, build func(*store.Snapshot) translator.Result) translator.Result {
		res := build(s)
		select {
		case translated <- struct{}{}:
		default:
		}
		return res
	}}
	p := &standbyPreparer{
		elected: elected, barrier: barrier, source: snapshotSource{snap}, shared: shared,
		gateways: []dataplane.Gateway{dbless}, period: time.Millisecond, log: logr.Discard(),
	}
	done := make(chan error, 1)
	go func() { done <- p.Start(context.Background()) }()
	close(barrier.synced)
	for i := 0; i < 3; i++ {
		<-translated // the first period's, then periods with nothing to prepare
	}
	require.Equal(t, 1, dbless.count(), "a DB-less gateway is asked once")
	close(elected)
	require.NoError(t, <-done)

	// The loop as the manager builds it from the same handover.
	var loop dataplane.Options
	shared.loopRounds(&loop, logr.Discard())
	require.Same(t, &shared.renderer, loop.Renderer, "the loop renders with the standby's renderer")
	before := shared.inc.Stats
	require.Positive(t, before.Full, "the standby translated the cluster")
	res := loop.TranslateRound(snap)
	after := shared.inc.Stats
	require.Equal(t, before.Full, after.Full, "the loop's first round continues the standby's translation")
	require.Equal(t, before.Partial+1, after.Partial, "the loop's first round is the standby's translator's")
	require.NotEmpty(t, res.State.Services)
}

// A standby with discovered gateways (no fixed gateway to prepare) learns their router before
// each period's translation, so that even its first translation is for the router the leader
// translates for, keeps that translation warm, and stops asking when it leads.
func TestDiscoveryStandbyLearnsTheRouterBeforeItTranslates(t *testing.T) {
	barrier := gatedBarrier{synced: make(chan struct{})}
	elected := make(chan struct{})
	flavors := dataplane.NewRouterFlavors(nil)
	var mu sync.Mutex
	learned := 0
	translatedFor := make(chan bool, 100) // the router each translation was made for
	p := &standbyPreparer{
		elected: elected, barrier: barrier, source: snapshotSource{benchdata.Snapshot(5)},
		shared: &handover{options: func(*store.Snapshot) translator.Options {
			select {
			case translatedFor <- flavors.Expressions():
			default:
			}
			return translator.Options{ExpressionRoutes: flavors.Expressions()}
		}},
		learnRouters: func(context.Context) {
			mu.Lock()
			learned++
			mu.Unlock()
			flavors.Report("https://10.0.0.1:8444", "expressions")
		},
		period: time.Millisecond, log: logr.Discard(),
	}
	done := make(chan error, 1)
	go func() { done <- p.Start(context.Background()) }()
	close(barrier.synced)
	for i := 0; i < 3; i++ {
		require.True(t, <-translatedFor, "translation %d made for the gateways' router", i)
	}
	close(elected)
	require.NoError(t, <-done, "Start returns when this replica leads: the leader's loop runs the set")
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, learned)
}

// askingSet is a discovered set that publishes no gateway (a standby's) but can name the
// gateways it heard from.
type askingSet struct{ heard []string }

func (askingSet) Run(context.Context, func())   {}
func (askingSet) Gateways() []dataplane.Gateway { return nil }
func (s askingSet) AskableURLs() []string       { return s.heard }

// A standby with discovered gateways asks the ones it heard from what translation needs (the
// edition, schemas), though it configures none; the --kong-admin-url gateways otherwise.
func TestAskableURLs(t *testing.T) {
	require.Equal(t, []string{"https://10.0.0.1:8444"}, askableURLs(nil, askingSet{heard: []string{"https://10.0.0.1:8444"}}))
	static := []dataplane.Gateway{&preparingGateway{url: "http://a"}, &preparingGateway{url: "http://b"}}
	require.Equal(t, []string{"http://a", "http://b"}, askableURLs(static, nil))
}

// A standby with --kong-admin-url gateways learns their router before its first warm
// translation, from the GET / the start's askGateways got (one request per gateway), and not
// one or two periods later at its first Prepare: before, its first translations, and its
// webhook's reviews, were for the traditional router, and a takeover right after the start
// translated everything again. It writes nothing.
func TestStaticStandbyLearnsTheRouterBeforeItTranslates(t *testing.T) {
	srv, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterExpressions}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := kong.NewClient(kong.String(srv.URL), nil)
	require.NoError(t, err)
	flavors := dataplane.NewRouterFlavors(nil)
	gw := dataplane.NewDetectingGateway(srv.URL, c, nil, logr.Discard())
	gw.Flavors = flavors
	_, err = gw.Detect(context.Background()) // the start's askGateways
	require.NoError(t, err)

	barrier := gatedBarrier{synced: make(chan struct{})}
	elected := make(chan struct{})
	type router struct{ expressions, rust bool }
	translatedFor := make(chan router, 100)
	p := &standbyPreparer{
		elected: elected, barrier: barrier, source: snapshotSource{benchdata.Snapshot(5)},
		shared: &handover{options: func(*store.Snapshot) translator.Options {
			select {
			case translatedFor <- router{flavors.Expressions(), flavors.RustRegexes()}:
			default:
			}
			return translator.Options{ExpressionRoutes: flavors.Expressions(), RustRegexes: flavors.RustRegexes()}
		}},
		gateways:     []dataplane.Gateway{gw},
		learnRouters: staticRouterLearner([]dataplane.Gateway{gw}, flavors, logr.Discard()),
		period:       time.Hour, // no Prepare is due: only the learner can tell the router
		log:          logr.Discard(),
	}
	done := make(chan error, 1)
	go func() { done <- p.Start(context.Background()) }()
	close(barrier.synced)
	require.Equal(t, router{true, true}, <-translatedFor, "the first translation is for the gateway's router")
	close(elected)
	require.NoError(t, <-done)
	require.Equal(t, map[string]int{"GET /": 1}, srv.Requests(), "asked once, at the start, and nothing written")
}

// RouterFlavors.Learn waits a bounded time: a gateway that does not answer (here an ask that
// ignores its context) holds up nobody's translation beyond the timeout, and those that
// answered are told; it is asked again next time.
func TestLearnRoutersDoesNotWaitForAGatewayThatDoesNotAnswer(t *testing.T) {
	flavors := dataplane.NewRouterFlavors(nil)
	release := make(chan struct{})
	defer close(release)
	learned := flavors.Learn(context.Background(), 10*time.Millisecond, map[string]dataplane.RouterAsk{
		"http://a": func(context.Context) (*dataplane.Root, error) {
			return &dataplane.Root{RouterFlavor: "expressions"}, nil
		},
		"http://b": func(context.Context) (*dataplane.Root, error) { <-release; return nil, errors.New("late") },
	})
	require.Equal(t, map[string]dataplane.Root{"http://a": {RouterFlavor: "expressions"}}, learned)
	require.True(t, flavors.Expressions(), "what answered is told")

	// A standby elected meanwhile (its context ended) tells nothing: the leader's first
	// sync checks the router against its own round's target.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := dataplane.NewRouterFlavors(nil)
	require.Empty(t, other.Learn(ctx, time.Minute, map[string]dataplane.RouterAsk{
		"http://a": func(context.Context) (*dataplane.Root, error) {
			return &dataplane.Root{RouterFlavor: "expressions"}, nil
		},
	}))
	require.False(t, other.Expressions())
}

// A standby with nothing to prepare renders each period only what its gateways' sync takes,
// for the loop to take over: the DB-less body for DB-less gateways, the declarative
// configuration for discovered gateways with a database (it used to render the DB-less body
// for them too: 17 MB kept for nothing at 10,000 Ingresses), nothing before the gateways said.
func TestStandbyRendersOnlyWhatItsGatewaysTake(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		protocol             func() string
		wantPlain, wantQuote bool
	}{
		{"fixed DB-less gateways", nil, false, true},
		{"discovered DB-less gateways", func() string { return dataplane.ProtocolDBLess }, false, true},
		{"discovered gateways with a database", func() string { return dataplane.ProtocolDeck }, true, false},
		{"discovered gateways not heard from", func() string { return "" }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			barrier := gatedBarrier{synced: make(chan struct{})}
			close(barrier.synced)
			elected := make(chan struct{})
			translated := make(chan struct{}, 100)
			shared := &handover{around: func(s *store.Snapshot, build func(*store.Snapshot) translator.Result) translator.Result {
				res := build(s)
				translated <- struct{}{}
				return res
			}}
			p := &standbyPreparer{
				elected: elected, barrier: barrier, source: snapshotSource{benchdata.Snapshot(20)}, shared: shared,
				syncProtocol: tc.protocol, period: time.Millisecond, log: logr.Discard(),
			}
			done := make(chan error, 1)
			go func() { done <- p.Start(context.Background()) }()
			<-translated
			<-translated // the first period rendered
			close(elected)
			require.NoError(t, <-done)
			plain, quoted := shared.renderer.KeptBytes()
			require.Equal(t, tc.wantPlain, plain > 0, "declarative configuration kept: %d bytes", plain)
			require.Equal(t, tc.wantQuote, quoted > 0, "DB-less body kept: %d bytes", quoted)
		})
	}
}

// databaseGateway is a preparingGateway that knows its mode before any sync, as a
// DetectingGateway does once GET / answered (dataplane.DatabaseReporter).
type databaseGateway struct {
	*preparingGateway
	db bool
}

func (g databaseGateway) Database() (db, known bool) { return g.db, true }

// A standby says a diff is starting before it prepares a database-backed gateway (the
// process's collector leaves its start target there: issue #45), and not for a DB-less one.
func TestStandbySaysADiffStartsBeforePreparing(t *testing.T) {
	for _, db := range []bool{true, false} {
		elected, synced := make(chan struct{}), make(chan struct{})
		close(synced)
		gw := databaseGateway{preparingGateway: &preparingGateway{url: "http://kong", calls: make(chan *dataplane.Target, 100)}, db: db}
		var mu sync.Mutex
		said, preparedBefore := 0, -1
		p := &standbyPreparer{
			elected: elected, barrier: gatedBarrier{synced: synced}, source: emptySource{},
			shared: &handover{around: func(s *store.Snapshot, build func(*store.Snapshot) translator.Result) translator.Result {
				return build(s)
			}},
			gateways: []dataplane.Gateway{gw}, period: time.Millisecond, log: logr.Discard(),
			diffStarting: func() {
				mu.Lock()
				defer mu.Unlock()
				if said == 0 {
					preparedBefore = gw.count()
				}
				said++
			},
		}
		done := make(chan error, 1)
		go func() { done <- p.Start(context.Background()) }()
		<-gw.calls
		close(elected)
		require.NoError(t, <-done)
		mu.Lock()
		if db {
			require.Positive(t, said, "a Prepare of a database-backed gateway is a diff starting")
			require.Zero(t, preparedBefore, "said before the first Prepare")
		} else {
			require.Zero(t, said, "a DB-less gateway's Prepare diffs nothing")
		}
		mu.Unlock()
	}
}
