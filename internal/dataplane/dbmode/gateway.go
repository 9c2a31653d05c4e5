package dbmode

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blang/semver/v4"
	"github.com/go-logr/logr"
	"github.com/kong/go-database-reconciler/pkg/crud"
	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

const (
	// DefaultFilterTag is KIC's --kong-admin-filter-tag default.
	DefaultFilterTag = "managed-by-ingress-controller"
	// DefaultConcurrency is KIC's --kong-admin-concurrency default.
	DefaultConcurrency = 10
)

// Options configures a Gateway. Zero values take the documented defaults.
type Options struct {
	// FilterTags mark the entities this controller owns: an entity is its own when it
	// carries every one (decK's select_tags). Default [DefaultFilterTag].
	FilterTags []string
	// Concurrency bounds the Admin API write requests in flight. Default DefaultConcurrency.
	Concurrency int
	// SkipCACertificates leaves CA certificates alone: neither listed nor written (KIC's
	// --skip-ca-certificates, decK's SkipCACerts), for Kongs whose workspaces share them.
	SkipCACertificates bool
	// Logger receives one line per sync that changed something.
	Logger logr.Logger
	// FullSyncEvery lets Sync skip a sync when the target is the one Kong last took: only
	// every FullSyncEvery-th unchanged sync runs (with DumpInterval, against the known state
	// unless a dump is due; without, it lists Kong and repairs what was changed there by
	// hand). A changed target always syncs at once. 0 or 1: every sync runs. The dump costs
	// about one request per upstream, so with thousands of Ingresses and a resync every few
	// seconds skipping matters to Kong's database.
	FullSyncEvery int
	// DumpInterval lets a sync diff against what Kong is known to hold, the state the last
	// sync left after Kong confirmed each of its writes, instead of a dump of Kong (known.go):
	// a change then costs its own writes, not a listing of everything. Kong is dumped again
	// on the first sync, after any failure or refusal, and when the last dump is
	// DumpInterval old, which repairs what others changed in Kong. 0: every sync dumps.
	DumpInterval time.Duration
	// Workspace is the Kong Gateway Enterprise workspace the Gateway configures
	// (--kong-workspace); "" is the default workspace. Every request goes to it
	// (workspace.go); the first sync creates it when Kong has none of that name, as KIC does.
	Workspace string
}

// Gateway syncs one database-backed Kong by difference. It implements dataplane.Gateway.
// Sync and Diff may be called from several goroutines; they run one at a time. Prepare runs
// beside them, never in their way.
type Gateway struct {
	url    string
	client *kong.Client // in Options.Workspace
	opts   Options
	// root is client outside any workspace, which the workspace is looked up and created
	// with (workspace.go); nil without Options.Workspace.
	root *kong.Client
	// wsMu guards wsReady: Options.Workspace was found or created on this Kong.
	wsMu    sync.Mutex
	wsReady bool
	// origin (scheme and host of url) and replay, the client's transport without the
	// target prefetch and the digests, serve replayDump (dumpreplay.go).
	origin string
	replay *http.Client

	// mu serializes syncs: two concurrent diffs against the same Kong would each apply
	// the other's changes again. It guards known.
	mu sync.Mutex
	// known is what Kong holds as the last sync left it, for Options.DumpInterval (known.go).
	known *knownState
	// writes counts the syncs that wrote to Kong (or tried to), and refreshing tells that a
	// listing of Kong runs in the background (refresh.go).
	writes     uint64
	refreshing bool
	// now is the clock DumpInterval is measured by (time.Now; tests move it).
	now func() time.Time

	// What Kong last took, for FullSyncEvery: the digest of that target, the rejection it
	// came with (returned again while it is skipped, so the refused objects stay reported),
	// and how many syncs were skipped since.
	skipMu   sync.Mutex
	synced   bool
	digest   [sha256.Size]byte
	rejected error
	skipped  int

	// prepared is the work Prepare did for the next sync (prepare.go).
	prepMu   sync.Mutex
	prepared *prepared

	// noValidateEndpoint is set once Kong answered that it has no plugin validation
	// endpoint (validate.go).
	noValidateEndpoint atomic.Bool

	// fillBatch is how many services and upstreams a fill writes at a time (fill.go).
	fillBatch int
}

var (
	_ dataplane.Gateway  = (*Gateway)(nil)
	_ dataplane.Preparer = (*Gateway)(nil)
)

// New returns the Gateway of the database-backed Kong at url. httpClient carries TLS and
// the admin token (manager.AdminHTTPClient); nil means Go's default transport, keeping
// Concurrency idle connections to Kong instead of 2. The
// Gateway wraps its transport with a cache of entity schemas (GET /schemas/...), which
// go-database-reconciler reads on every sync and which change only with the Kong version.
func New(url string, httpClient *http.Client, opts Options) (*Gateway, error) {
	if len(opts.FilterTags) == 0 {
		opts.FilterTags = []string{DefaultFilterTag}
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = DefaultConcurrency
	}
	hc := &http.Client{}
	if httpClient != nil {
		cp := *httpClient
		hc = &cp
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("kong admin url %q: %w", url, err)
	}
	if hc.Transport == nil {
		// Go's default keeps 2 idle connections per host: the other requests of
		// Concurrency in flight (writes, target lists) would each open a new one.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = opts.Concurrency
		hc.Transport = t
	}
	schemas := newSchemaCache(hc.Transport, u.Path, opts.Workspace)
	replay := &http.Client{Transport: schemas, Timeout: hc.Timeout, CheckRedirect: hc.CheckRedirect}
	hc.Transport = dumpDigests{next: newTargetPrefetch(schemas, opts.Concurrency)}
	client, err := kong.NewClient(kong.String(url), hc)
	if err != nil {
		return nil, fmt.Errorf("kong admin url %q: %w", url, err)
	}
	g := &Gateway{url: url, client: client, opts: opts, origin: u.Scheme + "://" + u.Host, replay: replay, now: time.Now,
		fillBatch: defaultFillBatch}
	if opts.Workspace != "" {
		// go-kong prefixes every path with the workspace (/{ws}/services, GET / as
		// /{ws}/kong), and go-database-reconciler's dump, target and syncer take the
		// workspace from the client, so nothing else here names it. The lookup and creation
		// of the workspace itself must not be prefixed: a client of its own.
		if g.root, err = kong.NewClient(kong.String(url), hc); err != nil {
			return nil, fmt.Errorf("kong admin url %q: %w", url, err)
		}
		client.SetWorkspace(opts.Workspace)
	}
	return g, nil
}

// URL implements dataplane.Gateway.
func (g *Gateway) URL() string { return g.url }

// Protocol implements dataplane.ProtocolNamer.
func (g *Gateway) Protocol() string { return dataplane.ProtocolDeck }

// Sync implements dataplane.Gateway: it makes the entities carrying the filter tag equal to
// the target, and touches no other entity.
func (g *Gateway) Sync(ctx context.Context, t *dataplane.Target) error {
	_, err := g.sync(ctx, t)
	return err
}

// sync is Sync, with what it did (nil when it skipped the dump or failed before the diff).
func (g *Gateway) sync(ctx context.Context, t *dataplane.Target) (*Result, error) {
	// The rendered configuration and its digest are computed once per round for every
	// gateway; the digest tells whether the target changed.
	digest, err := t.ConfigDigest()
	if err != nil {
		return nil, fmt.Errorf("rendering the target: %w", err)
	}
	if skipped, rejected := g.skip(digest); skipped && !t.Resend {
		if rejected == nil {
			dataplane.NoteUnchanged(ctx)
		}
		return nil, rejected
	}
	// A resend (KIC's --enable-reverse-sync) asks what Kong holds, not what is known.
	res, err := g.run(ctx, t.State, t.Graph, false, &digest, t.Resend)
	if res != nil {
		p := res.Phases
		g.opts.Logger.V(1).Info("database sync", "gateway", g.url, "known", res.Known, "filled", res.Filled, "dump", p.Dump.String(), "index", p.Index.String(),
			"target", p.Target.String(), "solve", p.Solve.String(),
			"preparedCurrent", res.PreparedCurrent, "preparedTarget", res.PreparedTarget)
	}
	if res != nil && res.Total() > 0 {
		g.opts.Logger.Info("database synced", "gateway", g.url,
			"created", res.Creates, "updated", res.Updates, "deleted", res.Deletes, "failed", res.Failed())
	}
	var rej *dataplane.RejectedError
	g.skipMu.Lock()
	defer g.skipMu.Unlock()
	switch {
	case err == nil || errors.As(err, &rej):
		// Applied (a rejection left only the refused objects out): remember it.
		g.synced, g.digest, g.rejected, g.skipped = true, digest, err, 0
	default:
		g.synced = false
	}
	return res, err
}

// skip reports whether a sync of the target with this digest can be left out, and the
// rejection Kong gave that target.
func (g *Gateway) skip(digest [sha256.Size]byte) (bool, error) {
	g.skipMu.Lock()
	defer g.skipMu.Unlock()
	if !g.synced || digest != g.digest || g.skipped+1 >= g.opts.FullSyncEvery {
		return false, nil
	}
	g.skipped++
	return true, g.rejected
}

// Apply makes the gateway hold s and returns what it did. When Kong refuses entities as
// invalid, the objects they came from are left out and the rest is synced again (isolate.go);
// the error is then a *dataplane.RejectedError naming every refused object. The Result
// merges every pass: the changes made and those that failed (Change.Err).
func (g *Gateway) Apply(ctx context.Context, s *kongstate.State) (*Result, error) {
	return g.run(ctx, s, nil, false, nil, false)
}

// Diff returns what Apply would do, without changing anything: it only reads.
func (g *Gateway) Diff(ctx context.Context, s *kongstate.State) (*Result, error) {
	return g.run(ctx, s, nil, true, nil, true)
}

// run syncs s; graph, when set, is the object graph of its translation: an object Kong
// refuses takes the objects that depend on it out too, as a DB-less fallback configuration
// does (dataplane/fallback.go), so both modes leave out the same objects.
//
// content, when known, is the digest of s rendered (dataplane.Target.ConfigDigest): a
// target state Prepare built from the same digest can then be used (prepare.go). dump makes
// the sync dump Kong even when what it holds is known (known.go).
func (g *Gateway) run(ctx context.Context, s *kongstate.State, graph *objgraph.Graph, dry bool, content *[sha256.Size]byte, dump bool) (*Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Whatever happens below, only a sync that ends well leaves a known state (keepKnown).
	// A dry run neither takes nor changes it.
	var known *knownState
	if !dry {
		known = g.takeKnown(dump)
	}
	// A dry run only reads: it does not create the workspace a sync would.
	if err := g.ensureWorkspace(ctx, !dry); err != nil {
		return nil, err
	}
	// Prepared states serve the first pass at most, and no other sync after this one: a
	// Prepare that lands between passes is left to the next sync.
	prep := g.takePrepared()

	// A dry run makes no request Kong could refuse, so it never needs a second pass.
	if dry {
		res, errs, _, _, err := g.pass(ctx, s, &isolation{}, true, prep, content, nil)
		if err != nil || len(errs) == 0 {
			return res, err
		}
		return res, g.syncError(s, res, errs)
	}

	// Passes of isolation (isolate.go): each pass leaves out the objects every earlier
	// pass found refused, and a pass that ends with refusals of new objects only starts
	// another. total merges what every pass did.
	total := &Result{}
	iso := &isolation{graph: graph, refused: map[kongstate.ObjectRef]bool{}}
	refused := iso.refused
	var rejections []*dataplane.RejectedError
	var dependents []dataplane.EntityError
	var excluded []kongstate.ObjectRef
	for n := 1; ; n++ {
		res, errs, deps, excl, err := g.pass(ctx, s, iso, false, prep, content, known)
		prep, content = nil, nil
		if res != nil {
			total.add(res)
		}
		if res == nil || len(res.Changes) > 0 || len(errs) > 0 || err != nil {
			g.writes++ // what Kong holds may have changed under a listing in the background
		}
		if err != nil {
			return total, err
		}
		if known != nil && len(errs) > 0 && ctx.Err() == nil {
			// What was known is not trusted to say which objects Kong refused: the sync
			// starts again from a dump, which holds what this pass created already.
			g.opts.Logger.Info("a sync against the known state of Kong failed; listing Kong and syncing again",
				"gateway", g.url, "error", errors.Join(errs...).Error())
			known = nil
			iso = &isolation{graph: graph, refused: map[kongstate.ObjectRef]bool{}, createdSince: createdKeys(res)}
			refused = iso.refused
			n--
			continue
		}
		known = nil
		dependents = mergeEntityErrors(dependents, deps)
		excluded = excl
		if len(errs) == 0 {
			if len(rejections) == 0 && len(dependents) == 0 {
				g.keepKnown(iso.last)
				return total, nil
			}
			rej := g.mergedRejection(rejections, dependents)
			rej.Excluded = excluded
			rej.RestApplied = true // this pass left only the refused objects out
			return total, rej
		}
		serr := g.syncError(s, res, errs)
		var rej *dataplane.RejectedError
		if !errors.As(serr, &rej) {
			// Not a refusal (5xx, network): the loop retries with backoff, and the next
			// sync isolates the refused objects again from scratch.
			return total, serr
		}
		rejections = append(rejections, rej)
		isolable, found := true, false
		for _, ent := range rej.Entities {
			if ent.Object == (kongstate.ObjectRef{}) {
				isolable = false // no object to leave out: the next pass would fail the same way
				continue
			}
			if refuse(refused, graph, ent.Object) {
				found = true
			}
		}
		if !isolable || !found || n == maxPasses {
			rej := g.mergedRejection(rejections, dependents)
			rej.Excluded = excluded
			return total, rej
		}
		g.opts.Logger.Info("Kong refused entities; syncing again without their objects",
			"gateway", g.url, "pass", n, "refusedObjects", len(refused))
	}
}

// isolation is what the passes of one sync share: the object graph of the target's
// translation, the objects left out (refused, keyed by graph node) and the entities Kong held
// when the sync began (by entity key), which are the only ones a refused object keeps.
type isolation struct {
	graph      *objgraph.Graph
	refused    map[kongstate.ObjectRef]bool
	heldBefore map[string]bool
	// createdSince are the entities (by key) that a pass against the known state created
	// before this sync started again from a dump: Kong did not hold them before the sync.
	createdSince map[string]bool
	// last is what the last pass left Kong holding: its current state, which the syncer
	// updated with Kong's answer to each write.
	last *knownState
}

// refuse adds obj and every object that depends on it in graph (Graph.Broken: not through
// a value they only share) to refused, and reports whether obj was new there.
func refuse(refused map[kongstate.ObjectRef]bool, graph *objgraph.Graph, obj kongstate.ObjectRef) bool {
	node := objgraph.Key(obj)
	if refused[node] {
		return false
	}
	refused[node] = true
	for _, d := range graph.Broken(node) {
		refused[d] = true
	}
	return true
}

// pass is one dump, diff and apply, with the entities of the refused objects left out of
// both sides. Before it writes, it has Kong validate the plugins it would write
// (validate.go); the objects of those Kong refuses join refused, with their dependents in
// iso.graph, and are returned as dependents are. errs are the syncer's failures; err is a
// failure to get as far as the diff. prep (nil: none) is what Prepare built, used when Kong
// still answers as it answered Prepare; its target state also needs content, the digest it
// was built from. known (nil: none) is what Kong is known to hold, diffed instead of a dump
// when Kong reports the version and edition it was known with (known.go).
func (g *Gateway) pass(ctx context.Context, s *kongstate.State, iso *isolation, dry bool, prep *prepared, content *[sha256.Size]byte, known *knownState) (
	res *Result, errs []error, dependents []dataplane.EntityError, excluded []kongstate.ObjectRef, err error,
) {
	var phases Phases
	mark := time.Now()
	lap := func(d *time.Duration) {
		now := time.Now()
		*d, mark = *d+now.Sub(mark), now
	}
	version, enterprise, dumpConfig, err := g.dumpSettings(ctx, s)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	dumped := g.now()
	if !known.sameSettings(version, enterprise) {
		known = nil
	}
	// With a prepared state, Kong's answers to Prepare's dump are asked again first: when
	// every one is the same, so would be a dump's (dumpreplay.go).
	reuse := false
	if known != nil {
		// Nothing to list; heldBefore stays nil: every entity of the known state is one
		// Kong held when the sync began.
		dumped = known.dumped
	} else if prep.sameSettings(version, enterprise) {
		if reuse, err = g.replayDump(ctx, prep.answers); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	var raw *utils.KongRawState
	switch {
	case known != nil:
	case reuse:
		if iso.heldBefore == nil {
			iso.heldBefore = prep.heldBefore
		}
	default:
		if raw, err = g.dump(ctx, dumpConfig); err != nil {
			return nil, nil, nil, nil, err
		}
		if iso.heldBefore == nil {
			iso.heldBefore = rawEntityKeys(raw)
			for k := range iso.createdSince {
				delete(iso.heldBefore, k)
			}
		}
	}
	lap(&phases.Dump)
	var current, target *state.KongState
	if known != nil {
		current = known.current
	} else if reuse {
		current = prep.current
	} else if current, err = state.Get(raw); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("indexing the entities of %s: %w", g.url, err)
	}
	lap(&phases.Index)
	// A Kong that holds none of the services and upstreams is filled in batches (fill.go).
	var filled *Result
	if known == nil && !reuse && !dry && len(iso.refused) == 0 {
		out, ok, err := g.fill(ctx, s, current, version, enterprise, dumpConfig)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if ok {
			filled = out.res
			phases.add(out.res.Phases)
			mark = time.Now()
			if len(out.errs) > 0 || out.done {
				res, errs = filled, out.errs
				res.Phases, res.Filled = phases, true
				iso.last = &knownState{current: current, from: s, version: version, enterprise: enterprise, dumped: dumped}
				return res, errs, nil, nil, nil
			}
		}
	}
	// Against a known state, only the units that changed since the translation Kong took
	// are diffed, when that is all that changed (patch.go).
	var patch *units
	if known != nil && known.from != nil && len(iso.refused) == 0 {
		if u, ok := changedUnits(known.from, s); ok {
			if part, partTarget, perr := g.unitStates(ctx, known.current, unitsOf(s, u), u, version, enterprise, dumpConfig); perr == nil {
				current, target, patch = part, partTarget, &u
			} else {
				g.opts.Logger.V(1).Info("diffing the whole target: the changed services and upstreams do not build alone",
					"gateway", g.url, "error", perr.Error())
			}
		}
	}
	reuseTarget := reuse && content != nil && prep.content == *content
	switch {
	case patch != nil:
	case reuseTarget:
		target = prep.target
	default:
		if target, err = g.targetState(ctx, s, current, version, enterprise, dumpConfig); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	lap(&phases.Target)
	var invalid []dataplane.EntityError
	if !dry {
		if invalid, err = g.validateChangedPlugins(ctx, current, target); err != nil {
			return nil, nil, nil, nil, err
		}
		for _, e := range invalid {
			refuse(iso.refused, iso.graph, e.Object)
		}
	}
	if dependents, excluded, err = isolate(current, target, iso.refused, iso.heldBefore, licenseObjects(s)); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("leaving refused objects out of the sync to %s: %w", g.url, err)
	}

	if reuseTarget && len(iso.refused) == 0 {
		// Prepare's dry run diffed these very states and found nothing to do (it keeps
		// nothing otherwise).
		res = &Result{}
	} else if res, errs, err = g.solveParked(ctx, current, target, enterprise, dry); err != nil {
		return nil, nil, nil, nil, err
	}
	if patch != nil && len(errs) == 0 {
		// The units as Kong now holds them go back into the known state, which is what
		// the next sync diffs against (a pass with errors is not kept: see run).
		if err := putUnitsBack(known.current, current, *patch); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("recording the changed units of %s: %w", g.url, err)
		}
		current = known.current
	}
	lap(&phases.Solve)
	if filled != nil {
		// The fill stopped before its end; this pass went on with the whole target.
		filled.add(res)
		res = filled
		res.Filled = true
	}
	res.Phases = phases
	res.PreparedCurrent, res.PreparedTarget, res.Known, res.Patched = reuse, reuseTarget, known != nil, patch != nil
	iso.last = &knownState{current: current, from: s, version: version, enterprise: enterprise, dumped: dumped}
	return res, errs, append(invalid, dependents...), excluded, nil
}

// unitStates are the two sides of a patch (patch.go): the units' entities copied out of
// current, and the target built from part, the units of the new translation, against them.
func (g *Gateway) unitStates(ctx context.Context, current *state.KongState, part *kongstate.State, u units,
	version semver.Version, enterprise bool, dumpConfig dump.Config,
) (*state.KongState, *state.KongState, error) {
	held, err := unitEntities(current, u)
	if err != nil {
		return nil, nil, err
	}
	target, err := g.targetState(ctx, part, held, version, enterprise, dumpConfig)
	if err != nil {
		return nil, nil, err
	}
	return held, target, nil
}

// solveParked is solve with the new routes that plugins guard created parked (parking.go)
// and pointed at their services once their plugins exist. target is as it was after.
func (g *Gateway) solveParked(ctx context.Context, current, target *state.KongState, enterprise, dry bool) (*Result, []error, error) {
	if dry {
		return g.solve(ctx, current, target, enterprise, dry)
	}
	park, err := parkGuardedRoutes(current, target, g.opts.Workspace, g.opts.FilterTags)
	if err != nil {
		return nil, nil, fmt.Errorf("parking the new guarded routes of %s: %w", g.url, err)
	}
	if park == nil {
		return g.solve(ctx, current, target, enterprise, dry)
	}
	res, errs, err := g.solve(ctx, current, target, enterprise, dry)
	if rerr := park.restore(target); rerr != nil && err == nil {
		err = fmt.Errorf("restoring the target of %s: %w", g.url, rerr)
	}
	if err != nil {
		return nil, nil, err
	}
	park.withoutParking(res)
	if len(errs) == 0 {
		if uerr := park.unpark(ctx, g.client, current); uerr != nil {
			errs = append(errs, uerr)
		}
	}
	return res, errs, nil
}

// solve diffs current against target and applies the difference (in a dry run: only
// lists it), at most Concurrency requests in flight. errs are the syncer's failures.
func (g *Gateway) solve(ctx context.Context, current, target *state.KongState, enterprise, dry bool) (*Result, []error, error) {
	syncer, err := diff.NewSyncer(diff.SyncerOpts{
		CurrentState:        current,
		TargetState:         target,
		KongClient:          g.client,
		SilenceWarnings:     true,
		IncludeLicenses:     enterprise,
		EnableEntityActions: true,
		// With entity actions the syncer prints only the changes it dropped after a
		// failure; those go to the log rather than to stdout.
		CreatePrintln: g.printer(), UpdatePrintln: g.printer(), DeletePrintln: g.printer(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("diffing %s: %w", g.url, err)
	}

	res := &Result{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The syncer blocks until every action is read, and closes the channel when done.
		for a := range syncer.GetResultChan() {
			res.Changes = append(res.Changes, changeOf(a))
		}
	}()
	stats, errs, _ := syncer.Solve(ctx, g.opts.Concurrency, dry, false)
	<-done
	res.Creates, res.Updates, res.Deletes = int(stats.CreateOps.Count()), int(stats.UpdateOps.Count()), int(stats.DeleteOps.Count())
	res.sort()
	return res, errs, nil
}

// dumpSettings reads Kong's version (GET /) and returns the dump configuration of a sync of
// s, and whether licenses are diffed.
func (g *Gateway) dumpSettings(ctx context.Context, s *kongstate.State) (semver.Version, bool, dump.Config, error) {
	version, enterprise, err := g.kongVersion(ctx)
	if err != nil {
		return semver.Version{}, false, dump.Config{}, err
	}
	// A target translated before the gateways' edition was learned says nothing of
	// licenses: Kong's are then left as they are rather than deleted.
	enterprise = enterprise && s != nil && s.LicensesKnown
	return version, enterprise, g.dumpConfig(version, enterprise), nil
}

// dumpConfig is the dump configuration for a Kong of this version, diffing licenses or not.
func (g *Gateway) dumpConfig(version semver.Version, enterprise bool) dump.Config {
	return dump.Config{
		SelectorTags:                         g.opts.FilterTags,
		SkipCACerts:                          g.opts.SkipCACertificates,
		IsConsumerGroupScopedPluginSupported: utils.Kong340Version.LTE(version),
		// Licenses are synced to Kong Gateway Enterprise as KIC syncs them (license.go);
		// Kong OSS has no licenses entity, so it gets no license request at all.
		IncludeLicenses: enterprise,
	}
}

// dump lists the entities carrying the filter tag.
func (g *Gateway) dump(ctx context.Context, dumpConfig dump.Config) (*utils.KongRawState, error) {
	raw, err := dump.Get(ctx, g.client, dumpConfig)
	if err != nil {
		return nil, fmt.Errorf("listing the entities tagged %q on %s: %w", strings.Join(g.opts.FilterTags, ","), g.url, err)
	}
	return raw, nil
}

// digestedDump is dump, with the digests of Kong's answers by request (dumpdigest.go); nil
// when there are none to compare. Only Prepare needs them (a later sync replays them,
// dumpreplay.go): a sync's own dump is not digested.
func (g *Gateway) digestedDump(ctx context.Context, dumpConfig dump.Config) (*utils.KongRawState, map[string][][sha256.Size]byte, error) {
	d := &dumpDigest{}
	raw, err := g.dump(withDumpDigest(ctx, d), dumpConfig)
	if err != nil {
		return nil, nil, err
	}
	return raw, d.answersByRequest(), nil
}

// targetState builds the target of a sync of s against current: file.Get, which reuses the
// IDs of current entities of the same name and fills Kong's defaults, then its go-memdb state.
func (g *Gateway) targetState(ctx context.Context, s *kongstate.State, current *state.KongState,
	version semver.Version, enterprise bool, dumpConfig dump.Config,
) (*state.KongState, error) {
	content := s.Content()
	// Custom entities (State.CustomEntities, not in Content) are not diffed in database
	// mode: they carry no tags (degraphql_routes has no tags field), so the ownership tag
	// cannot scope them and a diff would delete those made by hand (invariant 8);
	// go-database-reconciler lists them without the select tags and knows only
	// degraphql_routes. KIC sends no custom entities in database mode either.
	if !enterprise {
		content.Licenses = nil
	}
	fillCredentialDefaults(content)
	if err := adoptConsumerIDs(content, current); err != nil {
		return nil, fmt.Errorf("building the target state for %s: %w", g.url, err)
	}
	// The select tag makes file.Get add the filter tag to every entity, as decK does.
	content.Info = &file.Info{SelectorTags: g.opts.FilterTags}
	targetRaw, err := file.Get(ctx, content, file.RenderConfig{CurrentState: current, KongVersion: version}, dumpConfig, g.client)
	if err != nil {
		return nil, fmt.Errorf("building the target state for %s: %w", g.url, err)
	}
	s.SetCertificateAlts(targetRaw)
	target, err := state.Get(targetRaw)
	if err != nil {
		return nil, fmt.Errorf("indexing the target state for %s: %w", g.url, err)
	}
	return target, nil
}

// adoptConsumerIDs gives each consumer of content that has a custom_id and no username the ID
// of the consumer Kong holds with that custom_id, and points its plugins there. The translator
// gives such a consumer an ID of its own (kongstate.ConsumerIDByCustomID), which its plugins
// name it by; KIC gives it none, so Kong made a random one, and a target with another ID would
// delete the consumer and create it again, its credentials with it (file.Get reuses a current
// ID only for an entity that has none). A consumer with a username has KIC's ID already.
func adoptConsumerIDs(content *file.Content, current *state.KongState) error {
	renamed := map[string]*string{} // translator's ID -> Kong's
	for i := range content.Consumers {
		c := &content.Consumers[i]
		if c.Username != nil || c.CustomID == nil || c.ID == nil {
			continue
		}
		held, err := current.Consumers.GetByCustomID(*c.CustomID)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if held.ID != nil && *held.ID != *c.ID {
			renamed[*c.ID] = kong.String(*held.ID)
			c.ID = kong.String(*held.ID)
		}
	}
	if len(renamed) == 0 {
		return nil
	}
	for i := range content.Plugins {
		p := &content.Plugins[i]
		if p.Consumer != nil && p.Consumer.ID != nil && renamed[*p.Consumer.ID] != nil {
			ref := *p.Consumer // shared with the State: replaced, not changed
			ref.ID = renamed[*p.Consumer.ID]
			p.Consumer = &ref
		}
	}
	return nil
}

// fillCredentialDefaults sets on the target the defaults Kong's schema gives a credential
// field that go-database-reconciler does not fill (it fills services, routes, upstreams,
// targets and plugins only): oauth2's client_type ("confidential") and hash_secret (false),
// kong/plugins/oauth2/daos.lua. Kong stores them when they are left out, so a target without
// them differs from every dump and each sync would update the credential (KIC's as well:
// adopting a Kong that KIC wrote must change nothing). Copies: the content shares credentials
// with the State.
func fillCredentialDefaults(c *file.Content) {
	for i := range c.Consumers {
		creds := c.Consumers[i].Oauth2Creds
		if len(creds) == 0 {
			continue
		}
		filled := make([]*kong.Oauth2Credential, len(creds))
		for j, cred := range creds {
			filled[j] = cred.DeepCopy()
			if filled[j].ClientType == nil {
				filled[j].ClientType = kong.String("confidential")
			}
			if filled[j].HashSecret == nil {
				filled[j].HashSecret = kong.Bool(false)
			}
		}
		c.Consumers[i].Oauth2Creds = filled
	}
}

// mergedRejection is the rejection of a sync that took several passes: every entity Kong
// refused in any pass, then the entities left out because they depend on one of those.
func (g *Gateway) mergedRejection(rejections []*dataplane.RejectedError, dependents []dataplane.EntityError) *dataplane.RejectedError {
	out := &dataplane.RejectedError{Gateway: g.url}
	var msgs []string
	for _, r := range rejections {
		out.Entities = append(out.Entities, r.Entities...)
		msgs = append(msgs, r.Message)
	}
	out.Entities = append(out.Entities, dependents...)
	for _, d := range dependents {
		msgs = append(msgs, fmt.Sprintf("%s %s (%s): %s", d.EntityType, d.EntityName, d.Object, d.Message))
	}
	out.Message = strings.Join(msgs, "\n")
	return out
}

// mergeEntityErrors appends the entity errors of add that all does not already hold: a
// dependent is found again on every pass after the one that refused its parent.
func mergeEntityErrors(all, add []dataplane.EntityError) []dataplane.EntityError {
	for _, e := range add {
		if !slices.Contains(all, e) {
			all = append(all, e)
		}
	}
	return all
}

func (g *Gateway) printer() func(a ...any) {
	return func(a ...any) { g.opts.Logger.V(1).Info(fmt.Sprintln(a...), "gateway", g.url) }
}

// kongVersion reads GET / once: the version and whether this Kong is Kong Gateway
// Enterprise (dataplane.IsEnterprise, KIC's test). A Kong's version cannot change without a
// restart of that Kong, which the schema cache notices, and the version only selects
// go-database-reconciler's compatibility paths (3.x throughout).
func (g *Gateway) kongVersion(ctx context.Context) (v semver.Version, enterprise bool, err error) {
	// Asked on every pass, not remembered: a Kong upgraded in place answers with a new
	// version, and this GET / is also what shows the schema cache a new node.
	root, err := g.client.Root(ctx)
	if err != nil {
		return semver.Version{}, false, fmt.Errorf("reading the version of %s (GET /): %w", g.url, err)
	}
	s, _ := root["version"].(string)
	v, err = utils.ParseKongVersion(s)
	if err != nil {
		return semver.Version{}, false, fmt.Errorf("parsing the version %q of %s: %w", s, g.url, err)
	}
	return v, dataplane.IsEnterprise(root), nil
}

// syncError turns the syncer's errors into the loop's terms: a RejectedError when every
// failure is Kong refusing an entity (4xx: schema violation, unique violation, missing
// foreign key), which the same configuration would hit again; a plain error otherwise (5xx,
// network, a cancelled context), which the loop retries with backoff.
func (g *Gateway) syncError(s *kongstate.State, res *Result, errs []error) error {
	transient := false
	for _, err := range errs {
		if apiErr := apiErrorOf(err); apiErr == nil || apiErr.Code() < 400 || apiErr.Code() >= 500 {
			transient = true
		}
	}
	joined := errors.Join(errs...)
	if transient {
		return fmt.Errorf("sync to %s incomplete (%d changes applied; retried on the next sync): %w",
			g.url, res.Total(), joined)
	}
	rej := &dataplane.RejectedError{Gateway: g.url, Message: joined.Error()}
	for _, c := range res.Changes {
		apiErr := apiErrorOf(c.Err)
		if apiErr == nil {
			continue
		}
		ref, _ := kongstate.ObjectRefFromTags(c.Tags)
		if c.Kind == "license" {
			ref = licenseObjects(s)[c.Name] // licenses have no tags; Name is the ID
		}
		for _, fe := range fieldErrors(apiErr) {
			rej.Entities = append(rej.Entities, dataplane.EntityError{
				Object: ref, EntityType: c.Kind, EntityName: c.Name, Field: fe.field, Message: fe.message,
			})
		}
	}
	for _, err := range errs {
		rej.Entities = append(rej.Entities, unknownPluginErrors(s, apiErrorOf(err))...)
	}
	return rej
}

// noPluginNamed is Kong's answer to GET /schemas/plugins/<name> for a plugin it does not have.
var noPluginNamed = regexp.MustCompile(`^No plugin named '([^']+)'$`)

// unknownPluginErrors maps Kong's 404 for the schema of a plugin it does not have (which
// go-database-reconciler asks for before it writes anything, and which names no entity) to
// every plugin of that name in s, so that their objects can be isolated like any refusal.
func unknownPluginErrors(s *kongstate.State, apiErr *kong.APIError) []dataplane.EntityError {
	if s == nil || apiErr == nil || apiErr.Code() != http.StatusNotFound {
		return nil
	}
	m := noPluginNamed.FindStringSubmatch(apiMessage(apiErr))
	if m == nil {
		return nil
	}
	var out []dataplane.EntityError
	for _, p := range s.AllPlugins() {
		if kong.StringValue(p.Name) != m[1] {
			continue
		}
		ref, _ := kongstate.ObjectRefFromTags(tagStrings(p.Tags))
		out = append(out, dataplane.EntityError{Object: ref, EntityType: "plugin", EntityName: m[1], Field: "name", Message: apiMessage(apiErr)})
	}
	return out
}

// apiErrorOf finds Kong's answer in a syncer error. crud.ActionError has no Unwrap, so
// errors.As alone does not reach it.
func apiErrorOf(err error) *kong.APIError {
	if err == nil {
		return nil
	}
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var actErr *crud.ActionError
	if errors.As(err, &actErr) && errors.As(actErr.Err, &apiErr) {
		return apiErr
	}
	return nil
}

// Result is what a sync did, or what a dry run would do.
type Result struct {
	// Changes are sorted by operation (creates, updates, deletes), kind and name. After a
	// failure they include the changes that failed (Err set); changes that were not tried
	// because the syncer stopped at the failure are not listed.
	Changes []Change
	// Creates, Updates and Deletes count the changes applied (in a dry run: to apply).
	Creates, Updates, Deletes int
	// Phases is where the time of the sync went, every pass added up.
	Phases Phases
	// PreparedCurrent and PreparedTarget tell whether the first pass took the current and
	// the target state Prepare built, rather than building them (prepare.go).
	PreparedCurrent, PreparedTarget bool
	// Known tells whether a pass diffed against what Kong was known to hold rather than a
	// dump (known.go); Patched, whether it diffed only the services and upstreams that
	// changed (patch.go). Filled tells whether it wrote an empty Kong in batches (fill.go).
	Known, Patched, Filled bool
}

// Phases of a sync, in order: a new leader's first sync is a dump of Kong and a diff that
// finds nothing (issue #13); these say which of them its time is.
type Phases struct {
	Dump   time.Duration // GET / and dump.Get: the list requests
	Index  time.Duration // Kong's entities into go-database-reconciler's state (go-memdb)
	Target time.Duration // the target state built and indexed (file.Get, state.Get)
	Solve  time.Duration // plugin validation, isolation, the diff and its writes
}

func (p *Phases) add(o Phases) {
	p.Dump += o.Dump
	p.Index += o.Index
	p.Target += o.Target
	p.Solve += o.Solve
}

// add merges the changes of another pass into r.
func (r *Result) add(o *Result) {
	r.Changes = append(r.Changes, o.Changes...)
	r.Creates += o.Creates
	r.Updates += o.Updates
	r.Deletes += o.Deletes
	r.Phases.add(o.Phases)
	r.PreparedCurrent = r.PreparedCurrent || o.PreparedCurrent
	r.PreparedTarget = r.PreparedTarget || o.PreparedTarget
	r.Known = r.Known || o.Known
	r.Patched = r.Patched || o.Patched
	r.Filled = r.Filled || o.Filled
	r.sort()
}

// Total is the number of changes applied (or to apply).
func (r *Result) Total() int { return r.Creates + r.Updates + r.Deletes }

// Failed is the number of changes Kong refused or that failed.
func (r *Result) Failed() int {
	n := 0
	for _, c := range r.Changes {
		if c.Err != nil {
			n++
		}
	}
	return n
}

var opOrder = map[Op]int{Create: 0, Update: 1, Delete: 2}

func (r *Result) sort() {
	sort.SliceStable(r.Changes, func(i, j int) bool {
		a, b := r.Changes[i], r.Changes[j]
		if a.Op != b.Op {
			return opOrder[a.Op] < opOrder[b.Op]
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
}

func tagStrings(tags []*string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		out = append(out, kong.StringValue(t))
	}
	return out
}
