package status

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/redact"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

var ing = kongstate.ObjectRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "default", Name: "echo", UID: "u1"}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestProblemsAreReportedOnceWhileTheyPersist(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	r := NewReporter(rec, nil, nil, logr.Discard())
	round := dataplane.Round{
		Problems: []translator.Problem{{Object: ing, Field: "spec.rules[0].http.paths[0].path", Message: `invalid regex "~/("`}},
		Gateways: []dataplane.GatewayResult{{URL: "http://kong:8001"}},
	}
	r.Report(context.Background(), round)
	require.Equal(t, []string{`Warning KongConfigurationTranslationFailed spec.rules[0].http.paths[0].path: invalid regex "~/("`}, drain(rec))

	r.Report(context.Background(), round)
	require.Empty(t, drain(rec), "a persisting problem is not reported again on every resync")

	r.Report(context.Background(), dataplane.Round{Gateways: round.Gateways})
	r.Report(context.Background(), round)
	require.Len(t, drain(rec), 1, "a problem that comes back is reported again")
}

func TestRejectedEntitiesBecomeEventsOnTheirObjects(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	r := NewReporter(rec, nil, nil, logr.Discard())
	rej := &dataplane.RejectedError{Gateway: "g", Entities: []dataplane.EntityError{
		{Object: ing, EntityType: "route", Field: "hosts.0", Message: "invalid value"},
		{EntityType: "upstream", Message: "no object"}, // tags named no object: no event
	}}
	r.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "g", Err: rej}}})
	require.Equal(t, []string{"Warning KongConfigurationApplyFailed invalid hosts.0: invalid value"}, drain(rec))
}

// Gateways report when their own syncs end: a refusal still standing on gateway a is not
// reported again because b reported in between, nor when a second gateway refuses the same.
func TestRefusalsAreReportedOncePerProblemAcrossGatewayReports(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	r := NewReporter(rec, nil, nil, logr.Discard())
	rej := &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: ing, EntityType: "route", Field: "hosts.0", Message: "invalid value"}}}
	report := func(gs ...dataplane.GatewayResult) { r.Report(context.Background(), dataplane.Round{Gateways: gs}) }

	report(dataplane.GatewayResult{URL: "a", Err: rej})
	require.Len(t, drain(rec), 1)
	report(dataplane.GatewayResult{URL: "b", Err: rej})
	report(dataplane.GatewayResult{URL: "c"})
	report(dataplane.GatewayResult{URL: "a", Err: rej})
	require.Empty(t, drain(rec), "the same refusal, still standing, is not an event again")

	report(dataplane.GatewayResult{URL: "a"}, dataplane.GatewayResult{URL: "b"})
	report(dataplane.GatewayResult{URL: "a", Err: rej})
	require.Len(t, drain(rec), 1, "refused again after it was taken: a new event")
}

// A fallback: the refused plugin gets Kong's message, the Ingress left out with it gets an
// event naming the plugin and that message, the Pod KIC's FallbackKongConfigurationSucceeded,
// once while it lasts.
func TestFallbackEvents(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kong", Name: "konductor-0"}
	r := NewReporter(rec, nil, pod, logr.Discard())
	plug := kongstate.ObjectRef{Group: "configuration.konghq.com", Version: "v1", Kind: "KongPlugin", Namespace: "default", Name: "custom", UID: "u2"}
	rej := &dataplane.RejectedError{Gateway: "g", Entities: []dataplane.EntityError{
		{Object: plug, EntityType: "plugin", Field: "name", Message: "plugin 'x' not enabled"},
	}}
	round := dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "g", Err: rej, Fallback: &dataplane.FallbackResult{
		Broken: []kongstate.ObjectRef{plug}, Excluded: []kongstate.ObjectRef{ing, plug},
	}}}}
	r.Report(context.Background(), round)
	require.ElementsMatch(t, []string{
		"Warning KongConfigurationApplyFailed invalid name: plugin 'x' not enabled",
		"Warning KongConfigurationApplyFailed left out of the configuration: it depends on an object the gateway refused (KongPlugin default/custom: invalid name: plugin 'x' not enabled)",
		"Warning KongConfigurationApplyFailed failed to apply Kong configuration to g: " + rej.Error(),
		"Normal FallbackKongConfigurationSucceeded successfully applied fallback Kong configuration to g",
	}, drain(rec))

	r.Report(context.Background(), round)
	require.NotContains(t, drain(rec), "Normal FallbackKongConfigurationSucceeded successfully applied fallback Kong configuration to g",
		"reported once while it lasts")

	// The fallback refused too: KIC's FallbackKongConfigurationApplyFailed, on the Pod and on
	// the objects it names.
	frej := &dataplane.RejectedError{Gateway: "g", Entities: []dataplane.EntityError{{Object: ing, Field: "hosts.0", Message: "invalid value"}}}
	round.Gateways[0].Fallback.Err = frej
	r.Report(context.Background(), round)
	events := drain(rec)
	require.Contains(t, events, "Warning FallbackKongConfigurationApplyFailed invalid hosts.0: invalid value")
	require.Contains(t, events, "Warning FallbackKongConfigurationApplyFailed failed to apply fallback Kong configuration to g: "+frej.Error())
}

// Kong echoes values in its messages: a credential of the configuration never reaches an
// Event or the log, on the object or on the Pod.
func TestEventsDoNotCarrySecrets(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kong", Name: "konductor-0"}
	var logs strings.Builder
	r := NewReporter(rec, nil, pod, funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{}))
	consumer := kongstate.ObjectRef{Group: "configuration.konghq.com", Version: "v1", Kind: "KongConsumer", Namespace: "default", Name: "alice"}
	state := &kongstate.State{Consumers: []*file.FConsumer{{
		Consumer: kong.Consumer{Username: kong.String("alice")},
		KeyAuths: []*kong.KeyAuth{{Key: kong.String("alice-key-123")}},
	}}}
	rej := &dataplane.RejectedError{Gateway: "g", Message: `UNIQUE violation detected on '{key="alice-key-123"}'`,
		Entities: []dataplane.EntityError{{Object: consumer, EntityType: "keyauth_credential", Message: `UNIQUE violation detected on '{key="alice-key-123"}'`}}}
	r.Report(context.Background(), dataplane.Round{State: state, Gateways: []dataplane.GatewayResult{{URL: "g", Err: rej}}})
	events := drain(rec)
	require.ElementsMatch(t, []string{
		`Warning KongConfigurationApplyFailed invalid entity: UNIQUE violation detected on '{key=[redacted]}'`,
		`Warning KongConfigurationApplyFailed failed to apply Kong configuration to g: gateway g rejected the configuration: UNIQUE violation detected on '{key=[redacted]}'`,
	}, events)
	require.NotContains(t, logs.String(), "alice-key-123")
	require.Contains(t, logs.String(), "[redacted]")
}

// Issue #44 item 6: a KongClusterPlugin reads its configuration from a kube-system Secret
// (configFrom, a field not named like a secret); Kong refuses the plugin quoting the value,
// and the Event goes to a tenant's Ingress of another namespace. The round's redaction masks
// every value of every Secret the translation read, whatever the field's name.
func TestEventsDoNotCarryValuesOfSecretsTheTranslationRead(t *testing.T) {
	objs, err := manifest.LoadAll(filepath.Join("testdata", "cluster-plugin-secret.yaml"))
	require.NoError(t, err)
	st, err := store.NewForObjects(objs.Objects, store.Options{IngressClass: "kong"})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	res := translator.Build(snap, translator.Options{})
	require.Len(t, res.State.Plugins, 1, "problems: %v", res.Problems)

	rec := record.NewFakeRecorder(100)
	var logs strings.Builder
	r := NewReporter(rec, nil, nil, funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{}))
	tenant := kongstate.ObjectRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "team-b", Name: "shop", UID: "u-shop"}
	rej := &dataplane.RejectedError{Gateway: "g", Entities: []dataplane.EntityError{
		{Object: tenant, EntityType: "plugin", Field: "config.add.headers", Message: `invalid value: "x-platform-sig:platform-hmac-9f8e7d6c5b4a"`}}}
	r.Report(context.Background(), dataplane.Round{State: res.State, Gateways: []dataplane.GatewayResult{{URL: "g", Err: rej}},
		Redactor: func() *redact.Redactor { return redact.ForTranslation(res.State, res.Graph, snap.Secrets) }})
	events := drain(rec)
	require.NotEmpty(t, events)
	for _, e := range append(events, logs.String()) {
		require.NotContains(t, e, "platform-hmac-9f8e7d6c5b4a")
	}
	require.Contains(t, strings.Join(events, "\n"), "[redacted]")
}
