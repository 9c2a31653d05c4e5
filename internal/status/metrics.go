package status

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/kong/go-kong/kong"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/translator"
)

// Metrics are the sync loop's Prometheus metrics: KIC's, under KIC's names, labels and label
// values (its internal/metrics), so that KIC's Grafana dashboard reads konductor unchanged,
// and konductor's own (konductor_*). docs/metrics.md lists them all.
type Metrics struct {
	instanceID string

	// KIC's.
	pushCount, fallbackPushCount                     *prometheus.CounterVec
	pushDuration, fallbackPushDuration               *prometheus.HistogramVec
	pushLastSuccess, fallbackPushLastSuccess         *prometheus.GaugeVec
	pushBroken, fallbackPushBroken                   *prometheus.GaugeVec
	pushSize, fallbackPushSize                       *prometheus.GaugeVec
	translationCount, fallbackTranslationCount       *prometheus.CounterVec
	translationDuration, fallbackTranslationDuration *prometheus.HistogramVec
	translationBroken, fallbackTranslationBroken     *prometheus.GaugeVec
	snapshotCacheHit, snapshotCacheMiss              *prometheus.CounterVec
	fallbackCacheGeneration                          *prometheus.HistogramVec

	// konductor's.
	rounds      *prometheus.CounterVec
	problems    prometheus.Gauge
	rejected    *prometheus.GaugeVec
	lastSync    *prometheus.GaugeVec
	configSize  *prometheus.GaugeVec
	eventToPush *prometheus.HistogramVec
	// bodyTooLarge and bodyLimit: a DB-less body over the gateway's Admin API limit.
	bodyTooLarge, bodyLimit *prometheus.GaugeVec
}

// Sync results, the values of konductor_gateway_syncs_total's "result" label.
const (
	ResultSuccess  = "success"
	ResultRejected = "rejected"
	ResultError    = "error"
	ResultBackoff  = "backoff"
)

// KIC's label names and values.
const (
	labelSuccess       = "success"
	labelProtocol      = "protocol"
	labelFailureReason = "failure_reason"
	labelDataplane     = "dataplane"
	labelInstanceID    = "instance_id"

	successTrue  = "true"
	successFalse = "false"

	// FailureReasonConflict, FailureReasonNetwork and FailureReasonOther are the values of
	// failure_reason: Kong answered 409, the request did not get an answer, anything else
	// (a refused configuration included, as in KIC).
	FailureReasonConflict = "conflict"
	FailureReasonNetwork  = "network"
	FailureReasonOther    = "other"
)

// durationBuckets are the buckets of the millisecond histograms: 1 ms to a minute. KIC's push
// histograms start at 100 ms, which would put every konductor sync in the first bucket;
// dashboards compute quantiles from whatever buckets there are.
var durationBuckets = prometheus.ExponentialBucketsRange(1, float64(time.Minute.Milliseconds()), 30)

// NewMetrics creates the metrics and registers them with reg (controller-runtime's
// metrics.Registry in the controller). instanceID is the value of KIC's instance_id label:
// the controller's Pod name.
func NewMetrics(reg prometheus.Registerer, instanceID string) *Metrics {
	pushLabels := []string{labelSuccess, labelProtocol, labelFailureReason, labelDataplane, labelInstanceID}
	durationLabels := []string{labelSuccess, labelProtocol, labelDataplane, labelInstanceID}
	sizeLabels := []string{labelDataplane, labelProtocol, labelSuccess, labelInstanceID}
	perGateway := []string{labelDataplane, labelInstanceID}
	translationLabels := []string{labelSuccess, labelInstanceID}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
	}
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
	}
	histogram := func(name, help string, labels []string) *prometheus.HistogramVec {
		return register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets}, labels))
	}
	m := &Metrics{
		instanceID: instanceID,

		pushCount: counter("ingress_controller_configuration_push_count",
			"Count of successful/failed configuration pushes to Kong, by dataplane (Admin API URL), protocol (db-less or deck), success, and failure_reason (conflict, network, other) when success is false.", pushLabels),
		pushDuration: histogram("ingress_controller_configuration_push_duration_milliseconds",
			"How long it took to push the configuration to Kong, in milliseconds.", durationLabels),
		pushLastSuccess: gauge("ingress_controller_configuration_push_last_successful",
			"The time of the last successful configuration push, in seconds since the epoch.", perGateway),
		pushBroken: gauge("ingress_controller_configuration_push_broken_resource_count",
			"The number of resources not accepted by Kong when attempting to push configuration.", perGateway),
		pushSize: gauge("ingress_controller_configuration_push_size",
			"The size of the configuration pushed to Kong, in bytes (db-less only).", sizeLabels),
		translationCount: counter("ingress_controller_translation_count",
			"Count of translations from Kubernetes state to Kong state; success is false when an object could not be translated.", translationLabels),
		translationDuration: histogram("ingress_controller_translation_duration_milliseconds",
			"Duration of translating Kubernetes resources into Kong state, in milliseconds.", translationLabels),
		translationBroken: gauge("ingress_controller_translation_broken_resource_count",
			"The number of resources that the controller cannot successfully translate to Kong configuration.", []string{labelInstanceID}),

		fallbackPushCount: counter("ingress_controller_fallback_configuration_push_count",
			"Count of successful/failed fallback configuration pushes to Kong, labelled as ingress_controller_configuration_push_count.", pushLabels),
		fallbackPushDuration: histogram("ingress_controller_fallback_configuration_push_duration_milliseconds",
			"How long it took to push the fallback configuration to Kong, in milliseconds.", durationLabels),
		fallbackPushLastSuccess: gauge("ingress_controller_fallback_configuration_push_last",
			"The time of the last successful fallback configuration push, in seconds since the epoch.", perGateway),
		fallbackPushBroken: gauge("ingress_controller_fallback_configuration_push_broken_resource_count",
			"The number of resources not accepted by Kong when attempting to push the fallback configuration.", perGateway),
		fallbackPushSize: gauge("ingress_controller_fallback_configuration_push_size",
			"The size of the fallback configuration pushed to Kong, in bytes (db-less only).", sizeLabels),
		fallbackTranslationCount: counter("ingress_controller_fallback_translation_count",
			"Count of translations from Kubernetes state to Kong state in fallback mode.", translationLabels),
		fallbackTranslationDuration: histogram("ingress_controller_fallback_translation_duration_milliseconds",
			"Duration of translating Kubernetes resources into Kong state in fallback mode, in milliseconds.", translationLabels),
		fallbackTranslationBroken: gauge("ingress_controller_fallback_translation_broken_resource_count",
			"The number of resources that the controller cannot successfully translate to Kong configuration in fallback mode.", []string{labelInstanceID}),

		// A round of the loop is KIC's Update: hit or miss as dataplane.SnapshotCache says,
		// only with fallback configuration on, as in KIC.
		snapshotCacheHit: counter("ingress_controller_processed_config_snapshot_cache_hit",
			"The number of times the controller hit the processed config snapshot cache and skipped generating a new one.", []string{labelInstanceID}),
		snapshotCacheMiss: counter("ingress_controller_processed_config_snapshot_cache_miss",
			"The number of times the controller missed the processed config snapshot cache and had to generate a new one.", []string{labelInstanceID}),
		// KIC's fallback cache is konductor's fallback snapshot (dataplane.FallbackTranslation.
		// CacheGeneration), built once per set of refused objects per round.
		fallbackCacheGeneration: histogram("ingress_controller_fallback_cache_generation_duration_milliseconds",
			"How long it took to generate a fallback cache, in milliseconds.", translationLabels),

		rounds: counter("konductor_gateway_syncs_total",
			"Sync attempts per gateway, by result (success, rejected, error, backoff).", []string{"gateway", "result"}),
		problems: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "konductor_translation_problems",
			Help: "Objects problems found by the last translation (objects left out or degraded).",
		})),
		rejected: gauge("konductor_gateway_rejected_entities",
			"Entities the gateway refused in its last answer (0 after a success).", []string{"gateway"}),
		lastSync: gauge("konductor_gateway_last_sync_timestamp_seconds",
			"When the gateway last took a configuration (the round's, a fallback, or in database mode all but refused objects), in seconds since the epoch.", []string{labelDataplane}),
		configSize: gauge("konductor_configuration_size_bytes",
			"Size of the declarative configuration the gateway last took, in bytes (rendered for database mode too).", []string{labelDataplane}),
		eventToPush: histogram("konductor_event_to_push_duration_milliseconds",
			"Time from a Kubernetes change event to the end of the sync that delivered it to the gateway, in milliseconds.", []string{labelDataplane}),
		bodyTooLarge: gauge("konductor_configuration_body_too_large_bytes",
			"Size of the last DB-less configuration body the gateway did not take because it is over its Admin API body limit (not sent, or answered 413), in bytes; 0 once it takes one. Raise KONG_NGINX_ADMIN_CLIENT_MAX_BODY_SIZE on the gateway past it.", []string{labelDataplane}),
		bodyLimit: gauge("konductor_configuration_body_limit_bytes",
			"The gateway's Admin API body limit (nginx_admin_client_max_body_size, set by KONG_NGINX_ADMIN_CLIENT_MAX_BODY_SIZE) as it said at the last body over it, in bytes; 0 when it answered 413 without having said it.", []string{labelDataplane}),
	}
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
	if r.Translated {
		m.translation(m.translationCount, m.translationDuration, m.translationBroken, r.TranslationDuration, r.Problems)
	}
	switch r.SnapshotCache {
	case dataplane.SnapshotCacheHit:
		m.snapshotCacheHit.WithLabelValues(m.instanceID).Inc()
	case dataplane.SnapshotCacheMiss:
		m.snapshotCacheMiss.WithLabelValues(m.instanceID).Inc()
	}
	for _, g := range r.Gateways {
		var rej *dataplane.RejectedError
		switch {
		case g.Skipped:
			m.rounds.WithLabelValues(g.URL, ResultBackoff).Inc()
			continue // not tried: no push to count
		case g.Err == nil:
			m.rounds.WithLabelValues(g.URL, ResultSuccess).Inc()
			m.rejected.WithLabelValues(g.URL).Set(0)
			m.bodyTooLarge.WithLabelValues(g.URL).Set(0)
		case errors.As(g.Err, &rej):
			m.rounds.WithLabelValues(g.URL, ResultRejected).Inc()
			m.rejected.WithLabelValues(g.URL).Set(float64(len(rej.Entities)))
			if tl := rej.TooLarge; tl != nil {
				m.bodyTooLarge.WithLabelValues(g.URL).Set(float64(tl.Size))
				m.bodyLimit.WithLabelValues(g.URL).Set(float64(tl.Limit))
			}
		default:
			m.rounds.WithLabelValues(g.URL, ResultError).Inc()
		}
		if !g.Unchanged { // KIC counts a push only when something was sent
			m.push(pushMetrics{m.pushCount, m.pushDuration, m.pushLastSuccess, m.pushBroken, m.pushSize}, g.URL, g.Protocol, g.Err, g.Duration, g.Size)
		}
		size := g.Size
		took := g.Err == nil || rej != nil && rej.RestApplied
		if fb := g.Fallback; fb != nil {
			for _, t := range fb.Translations {
				// Building a fallback snapshot cannot fail: success is always true.
				m.fallbackCacheGeneration.WithLabelValues(successTrue, m.instanceID).Observe(milliseconds(t.CacheGeneration))
				m.translation(m.fallbackTranslationCount, m.fallbackTranslationDuration, m.fallbackTranslationBroken, t.Duration, t.Problems)
			}
			// A fallback that would have left nothing was not sent (the gateway kept what it
			// held): no push to count.
			if !errors.Is(fb.Err, dataplane.ErrFallbackLeavesNothing) {
				m.push(pushMetrics{m.fallbackPushCount, m.fallbackPushDuration, m.fallbackPushLastSuccess, m.fallbackPushBroken, m.fallbackPushSize}, g.URL, g.Protocol, fb.Err, fb.Duration, fb.Size)
			}
			if fb.Err == nil {
				took, size = true, fb.Size
			}
		}
		if took {
			m.lastSync.WithLabelValues(g.URL).SetToCurrentTime()
			if size > 0 {
				m.configSize.WithLabelValues(g.URL).Set(float64(size))
			}
		}
		if !g.EventAt.IsZero() {
			m.eventToPush.WithLabelValues(g.URL).Observe(milliseconds(time.Since(g.EventAt)))
		}
	}
}

// pushMetrics are the metrics of one kind of push: the round's configuration, or a fallback.
type pushMetrics struct {
	count       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	broken      *prometheus.GaugeVec
	size        *prometheus.GaugeVec
}

// push records one push as KIC does (its RecordPushSuccess and RecordPushFailure).
func (m *Metrics) push(pm pushMetrics, url, protocol string, err error, d time.Duration, size int) {
	success, reason := successTrue, ""
	if err != nil {
		success, reason = successFalse, failureReason(err)
	}
	pm.count.WithLabelValues(success, protocol, reason, url, m.instanceID).Inc()
	pm.duration.WithLabelValues(success, protocol, url, m.instanceID).Observe(milliseconds(d))
	pm.broken.WithLabelValues(url, m.instanceID).Set(float64(brokenObjects(err)))
	if err == nil {
		pm.lastSuccess.WithLabelValues(url, m.instanceID).SetToCurrentTime()
	}
	if protocol == dataplane.ProtocolDBLess && size > 0 {
		pm.size.WithLabelValues(url, protocol, success, m.instanceID).Set(float64(size))
	}
}

// translation records one translation as KIC does: success is false when an object could not
// be translated, and the broken resources are the objects with a problem.
func (m *Metrics) translation(count *prometheus.CounterVec, duration *prometheus.HistogramVec, broken *prometheus.GaugeVec,
	d time.Duration, problems []translator.Problem) {
	success := successTrue
	if len(problems) > 0 {
		success = successFalse
	}
	count.WithLabelValues(success, m.instanceID).Inc()
	duration.WithLabelValues(success, m.instanceID).Observe(milliseconds(d))
	objs := map[kongstate.ObjectRef]bool{}
	for _, p := range problems {
		objs[objgraph.Key(p.Object)] = true
	}
	broken.WithLabelValues(m.instanceID).Set(float64(len(objs)))
}

// brokenObjects counts the objects a refusal names (KIC's broken resources of a push).
func brokenObjects(err error) int {
	var rej *dataplane.RejectedError
	if !errors.As(err, &rej) {
		return 0
	}
	objs := map[kongstate.ObjectRef]bool{}
	for _, e := range rej.Entities {
		if e.Object.Name != "" {
			objs[objgraph.Key(e.Object)] = true
		}
	}
	return len(objs)
}

// failureReason is KIC's failure_reason of a failed push: network when no answer came,
// conflict when Kong answered 409, other otherwise (a refused configuration included).
func failureReason(err error) string {
	var netErr net.Error
	if errors.As(err, &netErr) {
		return FailureReasonNetwork
	}
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) && apiErr.Code() == 409 {
		return FailureReasonConflict
	}
	return FailureReasonOther
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// replaceMu makes ReplaceCollectors' replacement one step.
var replaceMu sync.Mutex

// ReplaceCollectors registers cs in reg in place of the collectors of the same metrics
// registered before: a later controller of the process replaces an earlier one's (tests
// start several, some at once). The replacement is one step: two controllers assembled at
// once would otherwise both unregister, then both register, and the second fail.
func ReplaceCollectors(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	replaceMu.Lock()
	defer replaceMu.Unlock()
	for _, c := range cs {
		reg.Unregister(c)
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// RegisterControllerState registers konductor_cache_synced and konductor_leader, read at
// every scrape from synced (every informer the sync reads has synced) and leader (this replica
// leads; always true without leader election), in place of an earlier controller's
// (ReplaceCollectors).
func RegisterControllerState(reg prometheus.Registerer, synced, leader func() bool) {
	err := ReplaceCollectors(reg,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "konductor_cache_synced",
			Help: "1 once every informer the sync reads has synced (no configuration is sent to Kong before), else 0.",
		}, func() float64 { return boolValue(synced()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "konductor_leader",
			Help: "1 while this replica is the leader (the only one that writes to Kong), else 0.",
		}, func() float64 { return boolValue(leader()) }))
	if err != nil {
		panic(err) // a collector of these names that is not a GaugeFunc: a programming error
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
