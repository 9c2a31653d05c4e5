package dbmode

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/state"

	"github.com/konductor/konductor/internal/dataplane"
)

// A sync's work done ahead of time (issue #13: a new leader's first sync).
//
// Most of a first sync is not the dump of Kong but go-database-reconciler's own CPU: Kong's
// entities indexed into a go-memdb state (state.Get), the target built from the translation
// (file.Get, which reuses the IDs of current entities found by name, and a second go-memdb
// state), then the diff. A standby replica has a warm cache and the same translation: it can
// do all of this but the diff before it leads. Prepare does it and keeps the two states.
//
// What Kong holds is never assumed: the sync that uses a prepared state first asks Kong
// every request of Prepare's dump again, and takes the prepared current state only when
// each answer has the same bytes as then (dumpdigest.go, dumpreplay.go: the same answers
// make the same dump, and go-database-reconciler decodes them into the same entities).
// Anything the old leader wrote in between (an entity created, changed, deleted: each also
// changes updated_at) makes an answer differ, and the sync then dumps Kong and indexes that
// dump as always. The prepared target state is taken only when, in
// addition, the rendered target has the digest it was built from: file.Get's inputs are
// then the same (the content, the current state, the Kong version, and the schemas the
// gateway caches per version), so its output is too.
//
// Prepare also runs the diff of the two states, dry. Kong normally holds the translation
// already (the old leader synced it), and then the sync that takes both states skips the
// diff as well: the same states and the same syncer options give the same (empty) diff.
// When the dry run finds changes, nothing is kept (the syncer records even a dry run's
// changes in the current state); the sync then does all its work.
//
// A prepared state is used by one sync at most: the syncer writes its changes into the
// current state and isolation removes refused entities from both, so the next sync takes a
// state only if Prepare built one since. A sync that does not use it drops it as well, so
// that memory does not hold two dumps' worth of go-memdb for longer than one sync.

// prepared is the work of Prepare, waiting for the next sync. It exists only when a dry
// run of the diff of current and target found nothing to change.
type prepared struct {
	version    semver.Version
	enterprise bool                           // licenses diffed (pass: Kong Enterprise and a target that knows licenses)
	answers    map[string][][sha256.Size]byte // of Kong's answers to the dump, by request (dumpdigest.go)
	heldBefore map[string]bool                // the entity keys of the dump (isolation.heldBefore)
	current    *state.KongState
	content    [sha256.Size]byte
	target     *state.KongState
}

// Prepare dumps Kong and builds the states a sync of t would diff, without writing: the
// next Sync of a target with the same rendered digest, if the dump it takes then is the
// same, skips the index, the target and the diff. It only reads Kong, so a standby may call it. A
// Prepare that keeps its states replaces the one before it.
func (g *Gateway) Prepare(ctx context.Context, t *dataplane.Target) error {
	content, err := t.ConfigDigest()
	if err != nil {
		return fmt.Errorf("rendering the target: %w", err)
	}
	// A standby writes nothing: it finds the workspace, and leaves creating it to the
	// leader's first sync.
	if err := g.ensureWorkspace(ctx, false); err != nil {
		return err
	}
	// Not under mu: a sync never waits for a Prepare (the new leader's first sync would
	// wait for the CPU of a Prepare that the lease made useless). Prepare builds states of
	// its own and only reads Kong; it shares the client and the schema cache, which are
	// safe for concurrent use. A Prepare that fails, is cancelled or finds Kong short of
	// the target leaves the previous one in place: the sync checks whatever it takes
	// against its own dump anyway.
	version, enterprise, dumpConfig, err := g.dumpSettings(ctx, t.State)
	if err != nil {
		return err
	}
	raw, answers, err := g.digestedDump(ctx, dumpConfig)
	if err != nil {
		return err
	}
	if answers == nil {
		return nil // nothing to compare a later dump with: the sync does all its work
	}
	current, err := state.Get(raw)
	if err != nil {
		return fmt.Errorf("indexing the entities of %s: %w", g.url, err)
	}
	if err := ctx.Err(); err != nil {
		return err // the CPU of the steps that follow is the sync's now
	}
	target, err := g.targetState(ctx, t.State, current, version, enterprise, dumpConfig)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The diff, dry: when Kong already holds the target (the old leader synced it), the
	// sync that takes both states has nothing left to do. The syncer writes what a dry run
	// would change into the current state as well, so states that differ are not kept.
	res, errs, err := g.solve(ctx, current, target, enterprise, true)
	if err != nil || len(errs) > 0 || res.Total() > 0 || len(res.Changes) > 0 {
		if err == nil {
			g.opts.Logger.V(1).Info("prepared nothing: Kong does not hold the target yet", "gateway", g.url, "changes", len(res.Changes))
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.prepMu.Lock()
	g.prepared = &prepared{version: version, enterprise: enterprise, answers: answers, heldBefore: rawEntityKeys(raw),
		current: current, content: content, target: target}
	g.prepMu.Unlock()
	g.opts.Logger.V(1).Info("prepared the next sync", "gateway", g.url)
	return nil
}

// takePrepared returns the prepared states and forgets them (one sync uses them at most).
func (g *Gateway) takePrepared() *prepared {
	g.prepMu.Lock()
	defer g.prepMu.Unlock()
	p := g.prepared
	g.prepared = nil
	return p
}

// sameSettings reports whether p was dumped with the dump configuration a sync with this
// version and license setting uses: p's current state is then what state.Get would build
// from a dump made now, if Kong answers its requests as it answered them (replayDump).
func (p *prepared) sameSettings(version semver.Version, enterprise bool) bool {
	return p != nil && p.version.Equals(version) && p.enterprise == enterprise
}
