package status

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/konductor/konductor/internal/dataplane"
)

// Metrics are the sync loop's Prometheus metrics.
type Metrics struct {
	rounds   *prometheus.CounterVec
	problems prometheus.Gauge
	rejected *prometheus.GaugeVec
}

// Sync results, the values of the "result" label.
const (
	ResultSuccess  = "success"
	ResultRejected = "rejected"
	ResultError    = "error"
	ResultBackoff  = "backoff"
)

// NewMetrics creates the metrics and registers them with reg (controller-runtime's
// metrics.Registry in the controller).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "konductor_gateway_syncs_total",
			Help: "Sync attempts per gateway, by result (success, rejected, error, backoff).",
		}, []string{"gateway", "result"}),
		problems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "konductor_translation_problems",
			Help: "Objects problems found by the last translation (objects left out or degraded).",
		}),
		rejected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "konductor_gateway_rejected_entities",
			Help: "Entities the gateway refused in its last answer (0 after a success).",
		}, []string{"gateway"}),
	}
	m.rounds = register(reg, m.rounds)
	m.problems = register(reg, m.problems)
	m.rejected = register(reg, m.rejected)
	return m
}

// register registers c, or returns the collector already registered under the same name:
// several controllers in one process (tests run replicas in-process) share the metrics.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (m *Metrics) observe(r dataplane.Round) {
	if m == nil || r.SnapshotErr != nil {
		return
	}
	m.problems.Set(float64(len(r.Problems)))
	for _, g := range r.Gateways {
		var rej *dataplane.RejectedError
		switch {
		case g.Skipped:
			m.rounds.WithLabelValues(g.URL, ResultBackoff).Inc()
		case g.Err == nil:
			m.rounds.WithLabelValues(g.URL, ResultSuccess).Inc()
			m.rejected.WithLabelValues(g.URL).Set(0)
		case errors.As(g.Err, &rej):
			m.rounds.WithLabelValues(g.URL, ResultRejected).Inc()
			m.rejected.WithLabelValues(g.URL).Set(float64(len(rej.Entities)))
		default:
			m.rounds.WithLabelValues(g.URL, ResultError).Inc()
		}
	}
}
