package status

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
)

var plugin = kongstate.ObjectRef{Group: "configuration.konghq.com", Version: "v1", Kind: "KongPlugin", Namespace: "default", Name: "rl", UID: "u2"}

func newTestMetrics(t *testing.T) (*prometheus.Registry, *Metrics, *Reporter) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "konductor-0")
	require.Same(t, m.pushCount, NewMetrics(reg, "konductor-0").pushCount, "a second controller in the process shares the metrics")
	return reg, m, NewReporter(nil, m, nil, logr.Discard())
}

// gather is the registry's exposition of the named metrics, for exact comparisons.
func compare(t *testing.T, reg *prometheus.Registry, expected string, names ...string) {
	t.Helper()
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected), names...))
}

// A round as KIC's dashboard sees it: pushes by dataplane, protocol, success and failure
// reason; translations and broken objects.
func TestKICPushAndTranslationMetrics(t *testing.T) {
	reg, m, r := newTestMetrics(t)
	netErr := &url.Error{Op: "Post", URL: "http://b:8001/config", Err: syscall.ECONNREFUSED}
	rej := &dataplane.RejectedError{Entities: []dataplane.EntityError{
		{Object: plugin, EntityType: "plugin", Field: "config.minute", Message: "expected a number"},
		{Object: plugin, EntityType: "plugin", Field: "config.hour", Message: "expected a number"},
		{Object: ing, EntityType: "route", Field: "paths.0", Message: "invalid regex"},
		{EntityType: "upstream", Message: "tags name no object"},
	}}
	r.Report(context.Background(), dataplane.Round{
		Translated: true, TranslationDuration: 3 * time.Millisecond,
		Problems: []translator.Problem{{Object: ing, Message: "x"}, {Object: ing, Message: "y"}, {Object: plugin, Message: "z"}},
		Gateways: []dataplane.GatewayResult{
			{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Duration: 5 * time.Millisecond, Size: 1200},
			{URL: "http://b:8001", Protocol: dataplane.ProtocolDeck, Err: netErr, Duration: time.Millisecond, Size: 1200},
			{URL: "http://c:8001", Protocol: dataplane.ProtocolDBLess, Err: rej, Duration: 2 * time.Millisecond, Size: 1200},
			{URL: "http://d:8001", Skipped: true, Err: netErr},
		},
	})
	compare(t, reg, `
# HELP ingress_controller_configuration_push_count Count of successful/failed configuration pushes to Kong, by dataplane (Admin API URL), protocol (db-less or deck), success, and failure_reason (conflict, network, other) when success is false.
# TYPE ingress_controller_configuration_push_count counter
ingress_controller_configuration_push_count{dataplane="http://a:8001",failure_reason="",instance_id="konductor-0",protocol="db-less",success="true"} 1
ingress_controller_configuration_push_count{dataplane="http://b:8001",failure_reason="network",instance_id="konductor-0",protocol="deck",success="false"} 1
ingress_controller_configuration_push_count{dataplane="http://c:8001",failure_reason="other",instance_id="konductor-0",protocol="db-less",success="false"} 1
# HELP ingress_controller_configuration_push_broken_resource_count The number of resources not accepted by Kong when attempting to push configuration.
# TYPE ingress_controller_configuration_push_broken_resource_count gauge
ingress_controller_configuration_push_broken_resource_count{dataplane="http://a:8001",instance_id="konductor-0"} 0
ingress_controller_configuration_push_broken_resource_count{dataplane="http://b:8001",instance_id="konductor-0"} 0
ingress_controller_configuration_push_broken_resource_count{dataplane="http://c:8001",instance_id="konductor-0"} 2
# HELP ingress_controller_configuration_push_size The size of the configuration pushed to Kong, in bytes (db-less only).
# TYPE ingress_controller_configuration_push_size gauge
ingress_controller_configuration_push_size{dataplane="http://a:8001",instance_id="konductor-0",protocol="db-less",success="true"} 1200
ingress_controller_configuration_push_size{dataplane="http://c:8001",instance_id="konductor-0",protocol="db-less",success="false"} 1200
# HELP ingress_controller_translation_count Count of translations from Kubernetes state to Kong state; success is false when an object could not be translated.
# TYPE ingress_controller_translation_count counter
ingress_controller_translation_count{instance_id="konductor-0",success="false"} 1
# HELP ingress_controller_translation_broken_resource_count The number of resources that the controller cannot successfully translate to Kong configuration.
# TYPE ingress_controller_translation_broken_resource_count gauge
ingress_controller_translation_broken_resource_count{instance_id="konductor-0"} 2
`, "ingress_controller_configuration_push_count", "ingress_controller_configuration_push_broken_resource_count",
		"ingress_controller_configuration_push_size", "ingress_controller_translation_count", "ingress_controller_translation_broken_resource_count")

	// Only the gateway that took the configuration has a last success; every gateway tried
	// has one duration sample, the skipped one none.
	require.Equal(t, 1, testutil.CollectAndCount(m.pushLastSuccess))
	require.Greater(t, testutil.ToFloat64(m.pushLastSuccess.WithLabelValues("http://a:8001", "konductor-0")), 0.0)
	require.Equal(t, 3, testutil.CollectAndCount(m.pushDuration))
	require.Equal(t, 1, testutil.CollectAndCount(m.translationDuration))
	require.Equal(t, 1.0, testutil.ToFloat64(m.rounds.WithLabelValues("http://d:8001", ResultBackoff)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.rounds.WithLabelValues("http://c:8001", ResultRejected)))
	require.Equal(t, 4.0, testutil.ToFloat64(m.rejected.WithLabelValues("http://c:8001")))
	require.Equal(t, 3.0, testutil.ToFloat64(m.problems))

	// A report of syncs that ended is no translation; a clean translation counts as success
	// and clears the broken count.
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess}}})
	r.Report(context.Background(), dataplane.Round{Translated: true})
	compare(t, reg, `
# HELP ingress_controller_translation_count Count of translations from Kubernetes state to Kong state; success is false when an object could not be translated.
# TYPE ingress_controller_translation_count counter
ingress_controller_translation_count{instance_id="konductor-0",success="false"} 1
ingress_controller_translation_count{instance_id="konductor-0",success="true"} 1
# HELP ingress_controller_translation_broken_resource_count The number of resources that the controller cannot successfully translate to Kong configuration.
# TYPE ingress_controller_translation_broken_resource_count gauge
ingress_controller_translation_broken_resource_count{instance_id="konductor-0"} 0
`, "ingress_controller_translation_count", "ingress_controller_translation_broken_resource_count")
}

// A refused configuration and the fallback the gateway took: KIC's fallback metrics, and the
// gateway counts as synced with the fallback's size.
func TestFallbackMetrics(t *testing.T) {
	reg, m, r := newTestMetrics(t)
	rej := &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: plugin, Field: "config.minute", Message: "expected a number"}}}
	fb := &dataplane.FallbackResult{
		Broken: []kongstate.ObjectRef{plugin}, Excluded: []kongstate.ObjectRef{plugin, ing},
		Duration: 4 * time.Millisecond, Size: 900,
		Translations: []dataplane.FallbackTranslation{{Duration: time.Millisecond}},
	}
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{
		{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Err: rej, Size: 1000, Fallback: fb},
	}})
	compare(t, reg, `
# HELP ingress_controller_configuration_push_count Count of successful/failed configuration pushes to Kong, by dataplane (Admin API URL), protocol (db-less or deck), success, and failure_reason (conflict, network, other) when success is false.
# TYPE ingress_controller_configuration_push_count counter
ingress_controller_configuration_push_count{dataplane="http://a:8001",failure_reason="other",instance_id="konductor-0",protocol="db-less",success="false"} 1
# HELP ingress_controller_fallback_configuration_push_count Count of successful/failed fallback configuration pushes to Kong, labelled as ingress_controller_configuration_push_count.
# TYPE ingress_controller_fallback_configuration_push_count counter
ingress_controller_fallback_configuration_push_count{dataplane="http://a:8001",failure_reason="",instance_id="konductor-0",protocol="db-less",success="true"} 1
# HELP ingress_controller_fallback_configuration_push_size The size of the fallback configuration pushed to Kong, in bytes (db-less only).
# TYPE ingress_controller_fallback_configuration_push_size gauge
ingress_controller_fallback_configuration_push_size{dataplane="http://a:8001",instance_id="konductor-0",protocol="db-less",success="true"} 900
# HELP ingress_controller_fallback_translation_count Count of translations from Kubernetes state to Kong state in fallback mode.
# TYPE ingress_controller_fallback_translation_count counter
ingress_controller_fallback_translation_count{instance_id="konductor-0",success="true"} 1
# HELP konductor_configuration_size_bytes Size of the declarative configuration the gateway last took, in bytes (rendered for database mode too).
# TYPE konductor_configuration_size_bytes gauge
konductor_configuration_size_bytes{dataplane="http://a:8001"} 900
`, "ingress_controller_configuration_push_count", "ingress_controller_fallback_configuration_push_count",
		"ingress_controller_fallback_configuration_push_size", "ingress_controller_fallback_translation_count", "konductor_configuration_size_bytes")
	require.Equal(t, 1.0, testutil.ToFloat64(m.pushBroken.WithLabelValues("http://a:8001", "konductor-0")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.fallbackPushBroken.WithLabelValues("http://a:8001", "konductor-0")))
	require.Greater(t, testutil.ToFloat64(m.fallbackPushLastSuccess.WithLabelValues("http://a:8001", "konductor-0")), 0.0)
	require.Greater(t, testutil.ToFloat64(m.lastSync.WithLabelValues("http://a:8001")), 0.0)
	require.Equal(t, 0, testutil.CollectAndCount(m.pushLastSuccess), "the round's configuration was not pushed")

	// The fallback refused too, naming the Ingress: a failed fallback push, one broken object.
	fb.Err = &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: ing, Message: "invalid"}}}
	fb.Translations = nil // the plan was made for another gateway: not a translation again
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{
		{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Err: rej, Fallback: fb},
	}})
	require.Equal(t, 1.0, testutil.ToFloat64(m.fallbackPushCount.WithLabelValues("false", "db-less", "other", "http://a:8001", "konductor-0")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.fallbackPushBroken.WithLabelValues("http://a:8001", "konductor-0")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.fallbackTranslationCount.WithLabelValues("true", "konductor-0")))
}

// The time from a change event to the sync that delivered it, per gateway: observed once.
func TestEventToPushMetric(t *testing.T) {
	_, m, r := newTestMetrics(t)
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{
		{URL: "http://a:8001", EventAt: time.Now().Add(-2 * time.Second)},
		{URL: "http://b:8001"}, // a resync: no event delivered
	}})
	require.Equal(t, 1, testutil.CollectAndCount(m.eventToPush))
	var h dto.Metric
	require.NoError(t, m.eventToPush.WithLabelValues("http://a:8001").(prometheus.Metric).Write(&h))
	require.Equal(t, uint64(1), h.GetHistogram().GetSampleCount())
	require.GreaterOrEqual(t, h.GetHistogram().GetSampleSum(), 2000.0, "milliseconds since the event")
}

func TestFailureReasons(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Get", URL: "http://k", Err: syscall.ECONNRESET}, FailureReasonNetwork},
		{errors.New("rendering failed"), FailureReasonOther},
		{&dataplane.RejectedError{}, FailureReasonOther},
		{kongAPIError(409), FailureReasonConflict},
		{kongAPIError(500), FailureReasonOther},
	} {
		require.Equal(t, tc.want, failureReason(tc.err), "%v", tc.err)
	}
}

func TestControllerStateGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	synced, leader := false, false
	RegisterControllerState(reg, func() bool { return synced }, func() bool { return leader })
	expect := func(s, l int) string {
		return "# HELP konductor_cache_synced 1 once every informer the sync reads has synced (no configuration is sent to Kong before), else 0.\n" +
			"# TYPE konductor_cache_synced gauge\nkonductor_cache_synced " + itoa(s) + "\n" +
			"# HELP konductor_leader 1 while this replica is the leader (the only one that writes to Kong), else 0.\n" +
			"# TYPE konductor_leader gauge\nkonductor_leader " + itoa(l) + "\n"
	}
	compare(t, reg, expect(0, 0), "konductor_cache_synced", "konductor_leader")
	synced = true
	compare(t, reg, expect(1, 0), "konductor_cache_synced", "konductor_leader")
	// A second controller in the process replaces the first one's gauges.
	RegisterControllerState(reg, func() bool { return true }, func() bool { return true })
	compare(t, reg, expect(1, 1), "konductor_cache_synced", "konductor_leader")
}

func itoa(i int) string { return string(rune('0' + i)) }

func kongAPIError(code int) error {
	return fmt.Errorf("creating route: %w", kong.NewAPIError(code, "boom"))
}

// A resync that sent nothing (the gateway held the configuration) counts no push, as in KIC;
// konductor's own sync counter still counts it.
func TestUnchangedSyncCountsNoPush(t *testing.T) {
	reg, _, r := newTestMetrics(t)
	for range 3 {
		r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{
			{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Duration: time.Millisecond, Size: 10, Unchanged: true}}})
	}
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{
		{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Duration: time.Millisecond, Size: 10}}})
	compare(t, reg, `
# HELP ingress_controller_configuration_push_count Count of successful/failed configuration pushes to Kong, by dataplane (Admin API URL), protocol (db-less or deck), success, and failure_reason (conflict, network, other) when success is false.
# TYPE ingress_controller_configuration_push_count counter
ingress_controller_configuration_push_count{dataplane="http://a:8001",failure_reason="",instance_id="konductor-0",protocol="db-less",success="true"} 1
`, "ingress_controller_configuration_push_count")
	compare(t, reg, `
# HELP konductor_gateway_syncs_total Sync attempts per gateway, by result (success, rejected, error, backoff).
# TYPE konductor_gateway_syncs_total counter
konductor_gateway_syncs_total{gateway="http://a:8001",result="success"} 4
`, "konductor_gateway_syncs_total")
}

// KIC's processed config snapshot cache counters: one hit or miss per round that says so
// (fallback configuration on), nothing for the others.
func TestSnapshotCacheMetrics(t *testing.T) {
	reg, _, r := newTestMetrics(t)
	for _, c := range []dataplane.SnapshotCache{dataplane.SnapshotCacheMiss, dataplane.SnapshotCacheHit, dataplane.SnapshotCacheHit,
		dataplane.SnapshotCacheUnknown, dataplane.SnapshotCacheMiss} {
		r.Report(context.Background(), dataplane.Round{Translated: true, SnapshotCache: c})
	}
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "http://a:8001"}}}) // syncs that ended
	compare(t, reg, `
# HELP ingress_controller_processed_config_snapshot_cache_hit The number of times the controller hit the processed config snapshot cache and skipped generating a new one.
# TYPE ingress_controller_processed_config_snapshot_cache_hit counter
ingress_controller_processed_config_snapshot_cache_hit{instance_id="konductor-0"} 2
# HELP ingress_controller_processed_config_snapshot_cache_miss The number of times the controller missed the processed config snapshot cache and had to generate a new one.
# TYPE ingress_controller_processed_config_snapshot_cache_miss counter
ingress_controller_processed_config_snapshot_cache_miss{instance_id="konductor-0"} 2
`, "ingress_controller_processed_config_snapshot_cache_hit", "ingress_controller_processed_config_snapshot_cache_miss")
}

// One fallback cache generation observed per fallback snapshot built (with its translation),
// always successful; a plan made for another gateway is not observed again.
func TestFallbackCacheGenerationMetric(t *testing.T) {
	_, m, r := newTestMetrics(t)
	rej := &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: plugin, Message: "invalid"}}}
	fb := &dataplane.FallbackResult{Broken: []kongstate.ObjectRef{plugin}, Translations: []dataplane.FallbackTranslation{
		{Duration: time.Millisecond, CacheGeneration: 2500 * time.Microsecond}}}
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{
		{URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Err: rej, Fallback: fb},
		{URL: "http://b:8001", Protocol: dataplane.ProtocolDBLess, Err: rej, Fallback: &dataplane.FallbackResult{Broken: fb.Broken}},
	}})
	require.Equal(t, 1, testutil.CollectAndCount(m.fallbackCacheGeneration))
	var h dto.Metric
	require.NoError(t, m.fallbackCacheGeneration.WithLabelValues("true", "konductor-0").(prometheus.Metric).Write(&h))
	require.Equal(t, uint64(1), h.GetHistogram().GetSampleCount())
	require.InDelta(t, 2.5, h.GetHistogram().GetSampleSum(), 1e-9, "milliseconds")
	require.Len(t, h.GetHistogram().GetBucket(), len(durationBuckets), "konductor's buckets")
}

// A fallback that would have left nothing was not sent: its translation counts, no fallback
// push does, and the gateway did not take a configuration.
func TestFallbackLeavingNothingCountsNoPush(t *testing.T) {
	_, m, r := newTestMetrics(t)
	rej := &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: plugin, Message: "invalid"}}}
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{
		URL: "http://a:8001", Protocol: dataplane.ProtocolDBLess, Err: rej, Size: 100,
		Fallback: &dataplane.FallbackResult{Broken: []kongstate.ObjectRef{plugin}, Err: dataplane.ErrFallbackLeavesNothing,
			Translations: []dataplane.FallbackTranslation{{Duration: time.Millisecond}}},
	}}})
	require.Equal(t, 1.0, testutil.ToFloat64(m.fallbackTranslationCount.WithLabelValues("true", "konductor-0")))
	require.Equal(t, 0, testutil.CollectAndCount(m.fallbackPushCount))
	require.Equal(t, 0, testutil.CollectAndCount(m.fallbackPushDuration))
	require.Equal(t, 0, testutil.CollectAndCount(m.lastSync))
	require.Equal(t, 1.0, testutil.ToFloat64(m.pushCount.WithLabelValues("false", "db-less", "other", "http://a:8001", "konductor-0")),
		"the refused configuration's push counts as ever")
}

// Controllers assembled at once in one process (parallel integration tests) each register
// the controller-state gauges: none panics on a duplicate registration.
func TestRegisterControllerStateConcurrently(t *testing.T) {
	reg := prometheus.NewRegistry()
	var wg sync.WaitGroup
	panics := make(chan any, 64)
	for range 16 {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					panics <- p
				}
			}()
			for range 200 {
				RegisterControllerState(reg, func() bool { return true }, func() bool { return false })
			}
		})
	}
	wg.Wait()
	close(panics)
	for p := range panics {
		t.Fatalf("a registration panicked: %v", p)
	}
}

// Collectors of the same metrics replaced from many goroutines at once (controllers assembled
// by parallel tests: the Kubernetes API health of newAPIHealthFor) never fail to register.
func TestReplaceCollectorsConcurrently(t *testing.T) {
	reg := prometheus.NewRegistry()
	desc := prometheus.NewDesc("konductor_test_replaced", "a test metric", nil, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16*200)
	for range 16 {
		wg.Go(func() {
			for range 200 {
				errs <- ReplaceCollectors(reg, constCollector{desc})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// constCollector collects one metric of desc, 1.
type constCollector struct{ desc *prometheus.Desc }

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}
