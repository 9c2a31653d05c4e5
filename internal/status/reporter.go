package status

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
)

// Event reasons, KIC's (kic-compat.md §12).
const (
	ReasonTranslationFailed = "KongConfigurationTranslationFailed"
	ReasonApplyFailed       = "KongConfigurationApplyFailed"
	ReasonSucceeded         = "KongConfigurationSucceeded"
)

// Reporter implements dataplane.Reporter.
type Reporter struct {
	recorder record.EventRecorder
	log      logr.Logger
	metrics  *Metrics
	// pod, when set, is the controller's own Pod: it gets the per-gateway success and failure
	// events, as in KIC.
	pod *corev1.ObjectReference

	mu   sync.Mutex
	seen map[string]bool // problem keys reported in the previous round
	ok   map[string]bool // gateways whose previous round succeeded
}

// NewReporter returns a reporter. recorder may be nil (no events); metrics may be nil.
func NewReporter(recorder record.EventRecorder, metrics *Metrics, pod *corev1.ObjectReference, log logr.Logger) *Reporter {
	return &Reporter{recorder: recorder, metrics: metrics, pod: pod, log: log, seen: map[string]bool{}, ok: map[string]bool{}}
}

type event struct {
	obj     kongstate.ObjectRef
	reason  string
	message string
}

// Report implements dataplane.Reporter.
func (r *Reporter) Report(_ context.Context, round dataplane.Round) {
	r.metrics.observe(round)
	if round.SnapshotErr != nil {
		return
	}
	var evs []event
	for _, p := range round.Problems {
		msg := p.Message
		if p.Field != "" {
			msg = p.Field + ": " + p.Message
		}
		evs = append(evs, event{p.Object, ReasonTranslationFailed, msg})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range round.Gateways {
		var rej *dataplane.RejectedError
		if errors.As(g.Err, &rej) {
			for _, e := range rej.Entities {
				if e.Object.Name == "" {
					continue // tags named no object; the gateway-level event covers it
				}
				evs = append(evs, event{e.Object, ReasonApplyFailed, fmt.Sprintf("invalid %s: %s", orEntity(e.Field), e.Message)})
			}
		}
		if g.Skipped {
			continue
		}
		r.gatewayEvent(g)
	}

	now := map[string]bool{}
	for _, e := range evs {
		key := e.obj.String() + "\x00" + e.reason + "\x00" + e.message
		if now[key] {
			continue
		}
		now[key] = true
		if r.seen[key] {
			continue
		}
		r.log.Info("problem with an object", "object", e.obj.String(), "reason", e.reason, "message", e.message)
		r.emit(e.obj, corev1.EventTypeWarning, e.reason, e.message)
	}
	r.seen = now
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
	if r.pod == nil || r.recorder == nil {
		return
	}
	switch {
	case g.Err != nil:
		r.recorder.Eventf(r.pod, corev1.EventTypeWarning, ReasonApplyFailed,
			"failed to apply Kong configuration to %s: %v", g.URL, g.Err)
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
