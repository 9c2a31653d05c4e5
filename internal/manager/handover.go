package manager

import (
	"sync"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// roundTranslator is the incremental translation a replica keeps across the lease (issue
// #13: a new leader's first sync). A standby translates its warm cache every period
// (standbyPreparer); the leader's loop translates every round. Both build with this one
// translator.Incremental, one at a time, so the new leader's first round translates only
// what changed since the standby's last period instead of the whole cluster; with the
// Renderer they share too, it renders only the entities that changed. translator.Incremental
// gives the Result a full Build gives for every snapshot, whichever snapshot it built last
// (TestIncrementalMatchesBuild), so the handover changes nothing but the work
// (TestRoundTranslatorHandsTheStandbysTranslationToTheLoop). A standby's build in flight
// when the lease comes finishes first: it is incremental too, and the loop's round then
// starts from it.
type roundTranslator struct {
	mu  sync.Mutex
	inc translator.Incremental
}

// build translates s; full reports that it translated everything, and why.
func (r *roundTranslator) build(s *store.Snapshot, opts translator.Options) (res translator.Result, full bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.inc.Stats.Full
	res = r.inc.Build(s, opts)
	return res, r.inc.Stats.Full > before, r.inc.Stats.LastReason
}
