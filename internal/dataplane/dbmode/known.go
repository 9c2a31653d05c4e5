package dbmode

import (
	"time"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/state"

	"github.com/konductor/konductor/internal/kongstate"
)

// Diffing against what Kong is known to hold (issue #45).
//
// A dump lists every entity the controller owns, about one request per upstream (its
// targets) besides the collections, and decodes and indexes all of them: at 10,000 Ingresses
// a dump is tens of thousands of entities and seconds of work, for a change of one route.
// The syncer, though, already knows what Kong holds after it wrote: it records each write
// in its current state from Kong's answer to that write (go-database-reconciler's post
// actions: the entity Kong returned, with the ID Kong holds), and a sync that ends without a
// failure leaves that state equal to what Kong holds, as far as this controller made it so.
// The next sync diffs against that state instead of a dump: it asks Kong GET / (the version,
// and whether the same Kong still answers) and then only writes.
//
// What is known can be wrong only through others' writes (an entity changed or deleted by
// hand, a restored database, an old leader's sync that ends after this leader's), so it is
// used only where a wrong guess costs a failed request, never a lost route, and a full dump
// comes back whenever there is reason to doubt it:
//
//   - a Gateway starts with nothing known: the first sync after the controller starts, and
//     so after every takeover (a replica that loses the lease exits), dumps Kong; a standby's
//     Prepare dumps as well and never makes a known state. That first dump is trusted: the
//     old leader's writes end before the lease passes (its syncs end with their context, a
//     cancelled request is not sent, and the loop waits for them before the lease is
//     released; a leader that cannot renew stops at --election-renew-deadline, before the
//     lease expires), and anything that still slipped in is repaired by the periodic dump;
//   - a sync that fails, is cancelled, or ends with entities refused (a partial sync, whose
//     refused objects were taken out of the current state as well) forgets what it knew;
//   - a pass over the known state that meets any Admin API error is not trusted to say which
//     objects Kong refused: the same sync starts again from a dump, as if it had dumped
//     first (what Kong held before it is then the dump less what the failed pass created);
//   - the known state is older than Options.DumpInterval (the dump it grew from): Kong is
//     listed in the background and the listing compared with the known state, while syncs
//     go on against it (refresh.go); a listing that differs (others' changes) is forgotten
//     with the known state, so that the next sync dumps and repairs them. Twice
//     DumpInterval old (no listing confirmed it), or Kong reporting another version or
//     edition: the sync dumps.
//
// Deletes come only from the translation: an entity is deleted when the translation no
// longer has it, whether the current state came from a dump or is known. A known state that
// is stale makes a request fail (an update of an entity deleted by hand: 404; a create of a
// name someone took: 409), and that failure is what sends the sync back to a dump. Dry runs
// (Diff, `konductor diff`) always dump: the syncer records a dry run's changes in its current
// state as well, and a diff is asked for what Kong holds, not what the controller believes.
type knownState struct {
	current *state.KongState
	// from is the translation current was synced from, which a patch compares the next one
	// with (patch.go).
	from       *kongstate.State
	version    semver.Version
	enterprise bool
	// dumped is when the dump this state grew from was taken.
	dumped time.Time
}

// takeKnown returns the known state when a sync may diff against it (not when dump is set,
// nor once the dump it grew from is twice DumpInterval old: the listing in the background,
// refresh.go, did not confirm it in time), and forgets it either way: the sync that takes it
// writes into it, and only a sync that ends well gives one back (keepKnown).
func (g *Gateway) takeKnown(dump bool) *knownState {
	k := g.known
	g.known = nil
	if k == nil || dump || g.opts.DumpInterval <= 0 || g.now().Sub(k.dumped) >= 2*g.opts.DumpInterval {
		return nil
	}
	return k
}

// sameSettings reports whether k was known from a Kong of this version and edition: another
// answer of GET / is another Kong, or one upgraded in place.
func (k *knownState) sameSettings(version semver.Version, enterprise bool) bool {
	return k != nil && k.version.Equals(version) && k.enterprise == enterprise
}

// keepKnown remembers current, which a sync that ended without any failure left equal to
// what Kong holds, for the next sync.
func (g *Gateway) keepKnown(k *knownState) {
	if g.opts.DumpInterval <= 0 {
		return
	}
	g.known = k
	if k != nil && !g.refreshing && g.now().Sub(k.dumped) >= g.opts.DumpInterval {
		g.refreshing = true
		go g.refresh(k.version, k.enterprise, g.writes)
	}
}

// createdKeys are the entity keys (kind/ID, as isolate keys them) of the entities res
// created: what Kong did not hold before the pass that made res.
func createdKeys(res *Result) map[string]bool {
	out := map[string]bool{}
	if res == nil {
		return out
	}
	for _, c := range res.Changes {
		if c.Op == Create && c.Err == nil && c.ID != "" {
			out[c.Kind+"/"+c.ID] = true
		}
	}
	return out
}
