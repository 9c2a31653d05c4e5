package status

import (
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// EventCounter is the sync loop's dataplane.EventObserver: it counts every informer event by
// kind and outcome (konductor_events_total: relevant, one of translator.Relevance's reasons
// for a drop, or initial_list) and logs each dropped event at V(1) with its reason, so that a
// change that woke no round says so (docs/troubleshooting.md, "A change did not reach Kong").
type EventCounter struct {
	total *prometheus.CounterVec
	log   logr.Logger
}

var _ dataplane.EventObserver = (*EventCounter)(nil)

// NewEventCounter registers konductor_events_total in reg (or takes the one registered: tests
// run replicas in-process) and logs drops to log at V(1).
func NewEventCounter(reg prometheus.Registerer, log logr.Logger) *EventCounter {
	return &EventCounter{
		total: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "konductor_events_total",
			Help: "Kubernetes informer events the sync loop was told of, by kind and outcome: relevant (it asked for a round), or why it did not (same_content, status_only, other_class, not_referred), or initial_list.",
		}, []string{"kind", "outcome"})),
		log: log,
	}
}

// Observe implements dataplane.EventObserver.
func (c *EventCounter) Observe(obj client.Object, outcome translator.Verdict) {
	kind := kindOf(obj)
	c.total.WithLabelValues(kind, string(outcome)).Inc()
	if outcome == translator.Relevant || outcome == dataplane.InitialList || obj == nil {
		return
	}
	if debug := c.log.V(1); debug.Enabled() {
		debug.Info("event dropped: it cannot change the translation", "kind", kind, "namespace", obj.GetNamespace(),
			"name", obj.GetName(), "why", string(outcome))
	}
}

// kindOf is obj's kind: its TypeMeta's, else the scheme's (typed objects read through a
// client have no TypeMeta); "unknown" for neither.
func kindOf(obj client.Object) string {
	if obj == nil {
		return "unknown"
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if gvk, err := apiutil.GVKForObject(obj, store.Scheme()); err == nil {
		return gvk.Kind
	}
	return "unknown"
}
