package dbmode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/state"
)

// The periodic listing of Kong, in the background (issue #45).
//
// Every Options.DumpInterval the known state (known.go) is checked against a listing of Kong,
// which finds what others changed there (an entity deleted by hand, a restored database).
// Listing and indexing Kong take seconds at 10,000 Ingresses; done by a sync, they held every
// change behind them. So the sync that finds its known state DumpInterval old goes on against
// it, and when it ends well a goroutine lists Kong, indexes the listing and diffs it against
// the known state (go-database-reconciler's syncer, a dry run: what it would change is what
// differs), all without the Gateway's lock, while later syncs go on. Then, under the lock
// for a moment:
//
//   - the same: the known state counts as dumped when the listing began;
//   - different: the known state is forgotten, so the next sync dumps Kong and diffs the
//     whole target against it, which repairs what others changed (as every periodic dump did);
//   - a sync wrote to Kong after the listing began (the listing may hold some of its writes
//     and not others), or the listing failed: the listing is thrown away and the known state
//     ages on; the next sync that ends well lists again, and a known state twice DumpInterval
//     old is not used: that sync dumps, so that a steady stream of changes cannot put the
//     check off for ever.
//
// It returns how long the listing and its diff took, and how long the lock was held after
// them (what a sync can wait for), for BenchmarkPeriodicListing.
func (g *Gateway) refresh(version semver.Version, enterprise bool, writes uint64) (listing, locked time.Duration) {
	started := g.now()
	// Bounded: a listing that takes longer than the interval is of no use.
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.DumpInterval)
	defer cancel()
	begin := time.Now()
	listed, err := g.listState(ctx, version, enterprise)
	var drift *Result
	if err == nil {
		// The dry diff reads the known state without the lock: go-memdb's readers see a
		// snapshot while a sync writes, and a sync that wrote meanwhile voids the verdict.
		if k := g.knownUnwrittenSince(writes, version, enterprise); k != nil {
			var errs []error
			drift, errs, err = g.solve(ctx, listed, k.current, enterprise, true)
			if err == nil && len(errs) > 0 {
				err = errors.Join(errs...)
			}
		}
	}
	listing = time.Since(begin)

	g.mu.Lock()
	defer g.mu.Unlock()
	begin = time.Now()
	defer func() { locked = time.Since(begin) }()
	g.refreshing = false
	k := g.known
	switch {
	case err != nil:
		g.opts.Logger.Info("listing Kong in the background failed; the known state ages on", "gateway", g.url, "error", err.Error())
		return listing, 0
	case drift == nil || k == nil || g.writes != writes || !k.sameSettings(version, enterprise):
		return listing, 0 // written to, failed or dumped since: the listing says nothing of it
	case drift.Total() == 0:
		k.dumped = started
		return listing, 0
	}
	g.opts.Logger.Info("Kong differs from what this controller wrote to it; the next sync lists and repairs it",
		"gateway", g.url, "missing", drift.Creates, "changed", drift.Updates, "added", drift.Deletes)
	g.known = nil
	// The next resync must not be skipped as unchanged (Options.FullSyncEvery).
	g.skipMu.Lock()
	g.synced = false
	g.skipMu.Unlock()
	return listing, 0
}

// knownUnwrittenSince is the known state, if no sync wrote since writes and it was known from
// a Kong of this version and edition; nil otherwise.
func (g *Gateway) knownUnwrittenSince(writes uint64, version semver.Version, enterprise bool) *knownState {
	g.mu.Lock()
	defer g.mu.Unlock()
	if k := g.known; k != nil && g.writes == writes && k.sameSettings(version, enterprise) {
		return k
	}
	return nil
}

// listState lists the entities carrying the filter tag and indexes them.
func (g *Gateway) listState(ctx context.Context, version semver.Version, enterprise bool) (*state.KongState, error) {
	raw, err := g.dump(ctx, g.dumpConfig(version, enterprise))
	if err != nil {
		return nil, err
	}
	listed, err := state.Get(raw)
	if err != nil {
		return nil, fmt.Errorf("indexing the entities of %s: %w", g.url, err)
	}
	return listed, nil
}
