package manager

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/konductor/konductor/internal/dataplane"
)

// standbyRefreshEvery: a standby prepares again after this many unchanged periods, so that
// what it prepared follows what the leader and people write to Kong (each Prepare is one
// dump of Kong: a minute at the default --proxy-sync-seconds, as often as the leader's own
// full resync, manager.DBModeFullSyncEvery).
const standbyRefreshEvery = DBModeFullSyncEvery

// standbyPreparer makes a standby replica's first sync as leader short (issue #13): while
// the replica does not lead, it translates its warm cache every period, with the
// translator and renderer the loop takes over on the lease (handover.go), and has each
// database-backed gateway prepare the sync of that translation (dataplane.Preparer,
// dbmode.Gateway.Prepare: Kong dumped and indexed, the target built, the diff run dry). It
// only reads Kong (invariant 7), and only once the cache synced (invariant 2). It prepares
// once the translation has settled (prepareSchedule), and every standbyRefreshEvery
// periods after that. It stops the moment this replica leads: a Prepare in flight
// is cancelled, so the first sync does not wait for it. The sync that follows dumps Kong
// anyway and uses the prepared work only if Kong answers exactly as it did (dbmode/prepare.go).
type standbyPreparer struct {
	elected  <-chan struct{}
	barrier  interface{ WaitForCacheSync(context.Context) error }
	source   dataplane.SnapshotSource
	shared   *handover // the translation and renderer the loop takes over
	gateways []dataplane.Gateway
	// learnRouters, when set, tells the translation the routers of the gateways before each
	// period's translation (RouterFlavors.Learn: discovered gateways, whose set is the
	// leader's to run, by discovery.Set.LearnRouters; --kong-admin-url ones, whose first sync
	// or Prepare would tell it one or two periods late, by staticRouterLearner).
	learnRouters func(context.Context)
	// syncProtocol, when set, is how the leader syncs the gateways (discovered ones:
	// discovery.Set.SyncProtocol; "" when unknown yet), which says what a standby with
	// nothing to prepare renders each period; nil: dataplane.ProtocolDBLess (fixed gateways
	// with nothing to prepare are DB-less).
	syncProtocol func() string
	// diffStarting, when set, is called before a Prepare of a gateway synced by diff
	// (dataplane.Loop.DiffStarting: the process's collector leaves its start target there,
	// cmd/konductor; a Prepare at 10,000 Ingresses dumps Kong and diffs dry for seconds).
	diffStarting func()
	period       time.Duration
	log          logr.Logger
}

// NeedLeaderElection: it runs on every replica, and stops when this one leads.
func (p *standbyPreparer) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (p *standbyPreparer) Start(ctx context.Context) error {
	var preparers []dataplane.Preparer
	for _, g := range p.gateways {
		if pr, ok := g.(dataplane.Preparer); ok {
			preparers = append(preparers, pr)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.elected:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := p.barrier.WaitForCacheSync(ctx); err != nil {
		return nil //nolint:nilerr // elected or stopped before the cache synced: nothing to prepare
	}
	period := p.period
	if period <= 0 {
		period = time.Second
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	var schedule prepareSchedule
	for {
		if p.learnRouters != nil {
			p.learnRouters(ctx)
		}
		if len(preparers) > 0 {
			if digest, t, ok := p.target(ctx); ok && schedule.due(digest) {
				preparers = p.prepare(ctx, preparers, t)
			}
		} else {
			p.keepWarm(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// keepWarm is the period of a standby with nothing to prepare (DB-less gateways, or
// discovered ones, whose set is the leader's): the translation and the rendering, which the
// loop takes over on the lease (handover.go), follow the cache, so the new leader's first
// round translates and renders what changed since the last period instead of everything.
// Each period is one incremental translation, and the rendering the gateways' sync takes,
// assembled from the renderer's kept entity bytes: the DB-less body for DB-less gateways,
// the declarative configuration for those with a database (its digest, dbmode), nothing
// before the protocol is known. Rendering the other form would keep megabytes for nothing
// (the DB-less body is 17 MB at 10,000 Ingresses): the renderer keeps each form it rendered.
func (p *standbyPreparer) keepWarm(ctx context.Context) {
	t, ok := p.translation(ctx)
	if !ok {
		return
	}
	protocol := dataplane.ProtocolDBLess
	if p.syncProtocol != nil {
		protocol = p.syncProtocol()
	}
	switch protocol {
	case dataplane.ProtocolDBLess:
		_, _ = t.DBLessBody()
	case dataplane.ProtocolDeck:
		_, _ = t.ConfigDigest()
	}
}

// prepareSchedule decides, once per period, whether a standby prepares: when the
// translation has settled (unchanged for a whole period since it last changed, so that the
// leader has had its period to sync it) and then every standbyRefreshEvery unchanged periods.
// Each Prepare is a dump of Kong, and one that finds Kong behind the translation keeps
// nothing; while the cluster keeps changing a standby therefore leaves Kong alone instead of
// dumping it every period for nothing.
type prepareSchedule struct {
	last      [sha256.Size]byte
	seen      bool
	prepared  bool // prepared since the translation last changed
	unchanged int  // periods since the last change or Prepare
}

// due records this period's translation digest and says whether to prepare now.
func (s *prepareSchedule) due(digest [sha256.Size]byte) bool {
	if !s.seen || digest != s.last {
		s.last, s.seen, s.prepared, s.unchanged = digest, true, false, 0
		return false
	}
	s.unchanged++
	if s.prepared && s.unchanged < standbyRefreshEvery {
		return false
	}
	s.prepared, s.unchanged = true, 0
	return true
}

// prepare has each gateway prepare t, and returns those that may have something to prepare
// next time (a DB-less gateway never has).
func (p *standbyPreparer) prepare(ctx context.Context, preparers []dataplane.Preparer, t *dataplane.Target) []dataplane.Preparer {
	keep := preparers[:0]
	for _, pr := range preparers {
		if g, ok := pr.(dataplane.Gateway); ok && p.diffStarting != nil && dataplane.SyncsByDiff(g) {
			p.diffStarting()
		}
		err := pr.Prepare(ctx, t)
		switch {
		case errors.Is(err, dataplane.ErrNothingToPrepare):
			continue
		case err != nil && ctx.Err() == nil:
			p.log.V(1).Info("standby: preparing the first sync failed; the first sync will do all its work", "error", err.Error())
		}
		keep = append(keep, pr)
	}
	return keep
}

// translation translates the current snapshot into a target rendered with the shared
// renderer, which keeps the entities' bytes between periods (re-rendering every entity each
// period would cost a full render's CPU per period at 10,000 Ingresses); ok is false when
// there is no snapshot (a kind cannot be listed: fail closed, as the loop does).
func (p *standbyPreparer) translation(ctx context.Context) (*dataplane.Target, bool) {
	snap, err := p.source.Snapshot(ctx)
	if err != nil {
		return nil, false
	}
	res := p.shared.translate(snap, p.log)
	p.shared.settle() // a standby has no push to hurry: the new leader's first round splices at once
	return dataplane.NewTarget(res, &p.shared.renderer), true
}

// target is translation with the digest of its configuration, which a standby digests every
// period; ok is false when there is none to prepare.
func (p *standbyPreparer) target(ctx context.Context) ([sha256.Size]byte, *dataplane.Target, bool) {
	t, ok := p.translation(ctx)
	if !ok {
		return [sha256.Size]byte{}, nil, false
	}
	digest, err := t.ConfigDigest() // Prepare takes the same target, and its digest
	if err != nil {
		return [sha256.Size]byte{}, nil, false
	}
	return digest, t, true
}

// standbyRouterAskTimeout bounds how long a standby's period waits for its --kong-admin-url
// gateways to say their router before it translates: a Kong answers GET / in milliseconds,
// and one that does not is asked again the next period (the leader's first sync asks it
// anyway).
const standbyRouterAskTimeout = 2 * time.Second

// staticRouterLearner is a standby's learnRouters for --kong-admin-url gateways: each
// period until they said it, it tells flavors their router (GET /, through Detect, which
// takes the answer the start's askGateways got or waits for it, so that each gateway is asked
// once). Before it, a standby learned the router only at its first Prepare (DetectingGateway),
// one or two periods after its cache synced: its first warm translation was for the
// traditional router, a takeover then translated everything again, and its webhook checked
// regexes with the wrong engine. A gateway whose mode is known has reported its router
// already. Only reads.
func staticRouterLearner(gateways []dataplane.Gateway, flavors *dataplane.RouterFlavors, log logr.Logger) func(context.Context) {
	var pending []*dataplane.DetectingGateway
	for _, g := range gateways {
		if d, ok := g.(*dataplane.DetectingGateway); ok {
			pending = append(pending, d)
		}
	}
	return func(ctx context.Context) {
		if len(pending) == 0 {
			return
		}
		asks := map[string]dataplane.RouterAsk{}
		for _, d := range pending {
			if d.Protocol() == "" { // else its first Prepare or Sync reported it
				asks[d.URL()] = d.Detect
			}
		}
		learned := flavors.Learn(ctx, standbyRouterAskTimeout, asks)
		for url, root := range learned {
			log.Info("router flavor learned from a gateway", "gateway", url, "routerFlavor", root.RouterFlavor)
		}
		pending = slices.DeleteFunc(pending, func(d *dataplane.DetectingGateway) bool {
			_, ok := learned[d.URL()]
			return ok || d.Protocol() != ""
		})
	}
}
