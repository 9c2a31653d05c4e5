package manager

import (
	"context"
	"sync"

	"github.com/go-logr/logr"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// handover is the incremental translation and the renderer a replica keeps across the
// lease (issue #13: a new leader's first sync). A standby translates its warm cache every
// period (standbyPreparer); the leader's loop translates every round. Both build with this
// one translator.Incremental, one at a time, so the new leader's first round translates only
// what changed since the standby's last period instead of the whole cluster; with the
// Renderer they share too, it renders only the entities that changed. translator.Incremental
// gives the Result a full Build gives for every snapshot, whichever snapshot it built last
// (TestIncrementalMatchesBuild), so the handover changes nothing but the work
// (TestRoundTranslatorHandsTheStandbysTranslationToTheLoop). A standby's build in flight
// when the lease comes finishes first: it is incremental too, and the loop's round then
// starts from it. The standby and the loop take both from one handover (standby's
// translation, loopRounds), so that they cannot hold different ones.
type handover struct {
	mu       sync.Mutex
	inc      translator.Incremental
	renderer kongstate.Renderer

	// options are the translation options of a snapshot (they follow what the gateways
	// turned out to be); nil: the zero Options.
	options func(*store.Snapshot) translator.Options
	// around runs a round's build of a snapshot (translateWithPayloads: the Secrets the
	// translation found it needs are read, and the snapshot translated again); nil: build alone.
	around func(*store.Snapshot, func(*store.Snapshot) translator.Result) translator.Result
	// reads records what each translation read (/debug/graph); nil: nothing.
	reads *readsRecord
}

// build translates s; full reports that it translated everything, and why.
func (h *handover) build(s *store.Snapshot, opts translator.Options) (res translator.Result, full bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.inc.Stats.Full
	res = h.inc.Build(s, opts)
	return res, h.inc.Stats.Full > before, h.inc.Stats.LastReason
}

// translate is a round's translation of s, the standby's or the loop's (who logs a full one).
func (h *handover) translate(s *store.Snapshot, who logr.Logger) translator.Result {
	var opts translator.Options
	if h.options != nil {
		opts = h.options(s)
	}
	build := func(s *store.Snapshot) translator.Result {
		res, full, reason := h.build(s, opts)
		h.reads.note(s, full)
		if full {
			who.V(1).Info("translated everything", "reason", reason)
		}
		return res
	}
	if h.around == nil {
		return build(s)
	}
	return h.around(s, build)
}

// loopRounds has the loop translate its rounds and render its targets with the handover's
// translation and renderer, those the standby kept warm.
func (h *handover) loopRounds(o *dataplane.Options, log logr.Logger) {
	o.TranslateRound = func(s *store.Snapshot) translator.Result { return h.translate(s, log) }
	o.Renderer = &h.renderer
	// A full translation's indexes for the next round are built once its sync ended, off
	// the start's path to the first push (translator.Incremental.Settle).
	settle := dataplane.ReporterFunc(func(_ context.Context, r dataplane.Round) {
		if len(r.Gateways) > 0 && !r.Translated {
			go h.settle()
		}
	})
	if o.Reporter == nil {
		o.Reporter = settle
	} else {
		o.Reporter = dataplane.Reporters{o.Reporter, settle}
	}
}

// settle builds the indexes of the last full translation, if not built yet.
func (h *handover) settle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inc.Settle()
}
