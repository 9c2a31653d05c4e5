package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/redact"
)

// Event reasons, KIC's (translation-rules.md §12).
const (
	ReasonTranslationFailed = "KongConfigurationTranslationFailed"
	ReasonApplyFailed       = "KongConfigurationApplyFailed"
	ReasonSucceeded         = "KongConfigurationSucceeded"

	// Fallback configuration (translation-rules.md §12.3): on the controller's Pod, whether a gateway
	// took the fallback; on an object the fallback configuration was refused for.
	ReasonFallbackSucceeded   = "FallbackKongConfigurationSucceeded"
	ReasonFallbackApplyFailed = "FallbackKongConfigurationApplyFailed"
)

// Reporter implements dataplane.Reporter.
type Reporter struct {
	recorder record.EventRecorder
	log      logr.Logger
	metrics  *Metrics
	// pod, when set, is the controller's own Pod: it gets the per-gateway success and failure
	// events, as in KIC.
	pod *corev1.ObjectReference

	mu      sync.Mutex
	seen    map[string]bool            // translation problems of the previous report
	refused map[string]map[string]bool // per gateway, the objects it refused at its last report
	ok      map[string]bool            // gateways whose previous sync succeeded
	// fallbackOK: gateways whose previous sync ended with a fallback configuration taken.
	fallbackOK map[string]bool
	// redactor masks the secrets of redactorOf, the latest configuration reported, in every
	// event and log line (Kong echoes values in its messages): the round's redaction.
	redactor   *redact.Redactor
	redactorOf *kongstate.State
	redactorAt func() *redact.Redactor // the round's Redactor (nil: redact.ForState of redactorOf)
}

// NewReporter returns a reporter. recorder may be nil (no events); metrics may be nil.
func NewReporter(recorder record.EventRecorder, metrics *Metrics, pod *corev1.ObjectReference, log logr.Logger) *Reporter {
	return &Reporter{recorder: recorder, metrics: metrics, pod: pod, log: log, seen: map[string]bool{}, refused: map[string]map[string]bool{}, ok: map[string]bool{}, fallbackOK: map[string]bool{}}
}

type event struct {
	obj     kongstate.ObjectRef
	reason  string
	message string
}

// Report implements dataplane.Reporter. A report carries the current translation's problems
// and the results of some gateways (those that ended a sync since the last report), so
// translation problems are compared with the previous report's, and the objects a gateway
// refused with what that gateway refused before: an event is emitted once while its problem
// persists, whichever gateways report in between.
func (r *Reporter) Report(_ context.Context, round dataplane.Round) {
	r.metrics.observe(round)
	if round.SnapshotErr != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if round.State != nil && round.State != r.redactorOf {
		// Built when a message needs it: a round with nothing to say walks no State.
		r.redactor, r.redactorOf, r.redactorAt = nil, round.State, round.Redactor
	}
	emitted := map[string]bool{}
	emit := func(e event, before map[string]bool, byGateway bool) string {
		key := e.obj.String() + "\x00" + e.reason + "\x00" + e.message
		if emitted[key] || before[key] || byGateway && r.refusedBefore(key) {
			return key
		}
		emitted[key] = true
		msg := r.redact().String(e.message)
		r.log.Info("problem with an object", "object", e.obj.String(), "reason", e.reason, "message", msg)
		r.emit(e.obj, corev1.EventTypeWarning, e.reason, msg)
		return key
	}

	problems := map[string]bool{}
	for _, p := range round.Problems {
		msg := p.Message
		if p.Field != "" {
			msg = p.Field + ": " + p.Message
		}
		problems[emit(event{p.Object, ReasonTranslationFailed, msg}, r.seen, false)] = true
	}
	r.seen = problems

	for _, g := range round.Gateways {
		if g.Skipped {
			continue // backing off: nothing new from it
		}
		refused := map[string]bool{}
		var rej *dataplane.RejectedError
		if errors.As(g.Err, &rej) {
			for _, e := range rej.Entities {
				if e.Object.Name == "" {
					continue // tags named no object; the gateway-level event covers it
				}
				refused[emit(event{e.Object, ReasonApplyFailed, entityMessage(e)}, nil, true)] = true
			}
		}
		var excluded []event
		switch {
		case g.Fallback != nil:
			excluded = excludedEvents(rej, g.Fallback.Excluded, g.Fallback.Backfilled, "left out of the configuration")
		case rej != nil:
			excluded = excludedEvents(rej, rej.Excluded, nil, "left out of the sync; Kong keeps what it held for it")
		}
		for _, e := range excluded {
			refused[emit(e, nil, true)] = true
		}
		if fb := g.Fallback; fb != nil {
			var frej *dataplane.RejectedError
			if errors.As(fb.Err, &frej) {
				for _, e := range frej.Entities {
					if e.Object.Name != "" {
						refused[emit(event{e.Object, ReasonFallbackApplyFailed, entityMessage(e)}, nil, true)] = true
					}
				}
			}
		}
		r.refused[g.URL] = refused
		r.gatewayEvent(g)
	}
}

// redact is the redactor of the latest configuration reported (r.mu held).
func (r *Reporter) redact() *redact.Redactor {
	if r.redactor == nil {
		r.redactor = dataplane.RoundRedactor(dataplane.Round{State: r.redactorOf, Redactor: r.redactorAt})
	}
	return r.redactor
}

func entityMessage(e dataplane.EntityError) string {
	return fmt.Sprintf("invalid %s: %s", orEntity(e.Field), e.Message)
}

// excludedEvents are the events of the objects left out because they depend on a refused
// object (a DB-less fallback, or database mode's isolation): each names the refused objects
// and Kong's messages about them, so that the owner of an Ingress learns why its route is
// gone or stale without looking elsewhere. how says what happened to them.
func excludedEvents(rej *dataplane.RejectedError, excluded, backfilledRefs []kongstate.ObjectRef, how string) []event {
	broken := map[string]bool{}
	var causes []string
	if rej != nil {
		for _, e := range rej.Entities {
			if e.Object.Name == "" {
				continue
			}
			broken[nodeKey(e.Object)] = true
			causes = append(causes, fmt.Sprintf("%s: %s", e.Object.String(), entityMessage(e)))
		}
	}
	backfilled := map[string]bool{}
	for _, b := range backfilledRefs {
		backfilled[nodeKey(b)] = true
	}
	var out []event
	for _, x := range excluded {
		if broken[nodeKey(x)] {
			continue // has its own event, with Kong's message about it
		}
		what := how
		if backfilled[nodeKey(x)] {
			what = "kept as last accepted"
		}
		out = append(out, event{x, ReasonApplyFailed,
			fmt.Sprintf("%s: it depends on an object the gateway refused (%s)", what, strings.Join(causes, "; "))})
	}
	return out
}

func nodeKey(r kongstate.ObjectRef) string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// refusedBefore reports whether any gateway refused the object of key at its last report.
func (r *Reporter) refusedBefore(key string) bool {
	for _, keys := range r.refused {
		if keys[key] {
			return true
		}
	}
	return false
}

func orEntity(field string) string {
	if field == "" {
		return "entity"
	}
	return field
}

func (r *Reporter) gatewayEvent(g dataplane.GatewayResult) {
	wasOK, known := r.ok[g.URL]
	r.ok[g.URL] = g.Err == nil
	wasFallbackOK := r.fallbackOK[g.URL]
	r.fallbackOK[g.URL] = g.Fallback != nil && g.Fallback.Err == nil
	if r.pod == nil || r.recorder == nil {
		return
	}
	if fb := g.Fallback; fb != nil {
		// KIC's events and messages (its recordApplyConfigurationEvents), the success once
		// while it lasts.
		switch {
		case fb.Err != nil:
			r.recorder.Eventf(r.pod, corev1.EventTypeWarning, ReasonFallbackApplyFailed,
				"failed to apply fallback Kong configuration to %s: %v", g.URL, r.redact().Error(fb.Err))
		case !wasFallbackOK:
			r.recorder.Eventf(r.pod, corev1.EventTypeNormal, ReasonFallbackSucceeded,
				"successfully applied fallback Kong configuration to %s", g.URL)
		}
	}
	switch {
	case g.Err != nil:
		r.recorder.Eventf(r.pod, corev1.EventTypeWarning, ReasonApplyFailed,
			"failed to apply Kong configuration to %s: %v", g.URL, r.redact().Error(g.Err))
	case !known || !wasOK:
		r.recorder.Eventf(r.pod, corev1.EventTypeNormal, ReasonSucceeded,
			"successfully applied Kong configuration to %s", g.URL)
	}
}

func (r *Reporter) emit(obj kongstate.ObjectRef, eventType, reason, message string) {
	if r.recorder == nil || obj.Name == "" {
		return
	}
	// The core/v1 recorder, as KIC's: the events.k8s.io one groups events by reason and action
	// and keeps only the first message of a series, so a second problem of the same object
	// would never be shown.
	r.recorder.Event(objectReference(obj), eventType, reason, message)
}

func objectReference(o kongstate.ObjectRef) runtime.Object {
	apiVersion := o.Version
	if o.Group != "" && o.Group != "core" {
		apiVersion = o.Group + "/" + o.Version
	}
	return &corev1.ObjectReference{
		APIVersion: apiVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: types.UID(o.UID),
	}
}
