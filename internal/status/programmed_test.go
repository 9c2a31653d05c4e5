package status

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// The Programmed condition: True for an object whose entities a gateway took, False with the
// problem for a broken one, Unknown while nothing uses it; written only where it differs.
func TestProgrammedCondition(t *testing.T) {
	ctx := context.Background()
	class := "kong"
	prefix := netv1.PathTypePrefix
	objs := []client.Object{
		&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-ing", Annotations: map[string]string{"konghq.com/plugins": "used"}},
			Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: "web.example.com", IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
				Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "web", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
		// Left out for its broken plugin (the translator's fail-closed rule).
		&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-broken", UID: "u-ing-2", Annotations: map[string]string{"konghq.com/plugins": "broken"}},
			Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: "broken.example.com", IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
				Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "web", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "used", UID: "u-used", Generation: 3}, PluginName: "correlation-id"},
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unused", UID: "u-unused", Generation: 1}, PluginName: "cors"},
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "broken", UID: "u-broken", Generation: 2}, PluginName: "cors",
			ConfigFrom: &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: "missing", Key: "k"}}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alice", UID: "u-alice", Generation: 1,
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}}, Username: "alice"},
	}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&kongv1.KongPlugin{}, &kongv1.KongConsumer{}).Build()
	st := store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)})
	snap, err := st.Snapshot(ctx)
	require.NoError(t, err)
	state, problems := translator.Translate(snap, translator.Options{})

	u := NewProgrammedUpdater(st, c, logr.Discard())
	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{URL: "http://kong", Err: &dataplane.RejectedError{}}}})
	require.NoError(t, u.Update(ctx))
	require.Nil(t, programmed(t, c, &kongv1.KongPlugin{}, "used"), "nothing is written before a gateway took a configuration")

	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{URL: "http://kong"}}})
	require.NoError(t, u.Update(ctx))

	used := programmed(t, c, &kongv1.KongPlugin{}, "used")
	require.Equal(t, metav1.ConditionTrue, used.Status)
	require.Equal(t, ReasonProgrammed, used.Reason)
	require.EqualValues(t, 3, used.ObservedGeneration)
	broken := programmed(t, c, &kongv1.KongPlugin{}, "broken")
	require.Equal(t, metav1.ConditionFalse, broken.Status)
	require.Equal(t, ReasonInvalid, broken.Reason)
	require.Contains(t, broken.Message, "configFrom: ")
	require.Contains(t, broken.Message, "secret ns/missing not found")
	unused := programmed(t, c, &kongv1.KongPlugin{}, "unused")
	require.Equal(t, metav1.ConditionUnknown, unused.Status)
	require.Equal(t, ReasonPending, unused.Reason)
	require.Equal(t, metav1.ConditionTrue, programmed(t, c, &kongv1.KongConsumer{}, "alice").Status)
	// The outcome records only objects with the condition, not the Ingress and Service whose
	// entities the gateway took too.
	require.ElementsMatch(t, []kongstate.ObjectRef{
		{Group: "configuration.konghq.com", Kind: "KongPlugin", Namespace: "ns", Name: "used"},
		{Group: "configuration.konghq.com", Kind: "KongConsumer", Namespace: "ns", Name: "alice"},
	}, slices.Collect(maps.Keys(u.last.programmed)))

	// Nothing differs: nothing is written.
	var before kongv1.KongPlugin
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "used"}, &before))
	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{URL: "http://kong"}}})
	require.NoError(t, u.Update(ctx))
	var after kongv1.KongPlugin
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "used"}, &after))
	require.Equal(t, before.ResourceVersion, after.ResourceVersion, "an unchanged condition is not written again")

	// Kong refusing the plugin's entity makes it Invalid with Kong's message.
	ref := kongstate.RefFor(objs[3], kongv1.SchemeGroupVersion.WithKind("KongPlugin")) // used
	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{URL: "http://kong",
		Err: &dataplane.RejectedError{RestApplied: true, Entities: []dataplane.EntityError{{Object: ref, Field: "config.header_name", Message: "expected a string"}}}}}})
	require.NoError(t, u.Update(ctx))
	used = programmed(t, c, &kongv1.KongPlugin{}, "used")
	require.Equal(t, metav1.ConditionFalse, used.Status)
	require.Equal(t, "Kong refused it: invalid config.header_name: expected a string", used.Message)
}

func programmed(t *testing.T, c client.Client, obj client.Object, name string) *metav1.Condition {
	t.Helper()
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, obj))
	switch o := obj.(type) {
	case *kongv1.KongPlugin:
		return meta.FindStatusCondition(o.Status.Conditions, ConditionProgrammed)
	case *kongv1.KongConsumer:
		return meta.FindStatusCondition(o.Status.Conditions, ConditionProgrammed)
	case *kongv1alpha1.KongCustomEntity:
		return meta.FindStatusCondition(o.Status.Conditions, ConditionProgrammed)
	}
	t.Fatalf("%T", obj)
	return nil
}

// The outcome of a round is kept for objects with a condition that appear after it, also when
// there was none to write when the round came (its entities are then walked later).
func TestProgrammedConditionOfAnObjectThatAppearsAfterTheRound(t *testing.T) {
	ctx := context.Background()
	class := "kong"
	prefix := netv1.PathTypePrefix
	plugin := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "used", UID: "u-used", Generation: 1}, PluginName: "correlation-id"}
	objs := []client.Object{
		&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-ing", Annotations: map[string]string{"konghq.com/plugins": "used"}},
			Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: "web.example.com", IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
				Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "web", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		plugin,
	}
	withPlugin := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).Build()
	snap, err := store.New(withPlugin, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}).Snapshot(ctx)
	require.NoError(t, err)
	state, problems := translator.Translate(snap, translator.Options{})

	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs[:2]...).WithStatusSubresource(&kongv1.KongPlugin{}).Build()
	u := NewProgrammedUpdater(store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, logr.Discard())
	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{URL: "http://kong"}}})
	require.NoError(t, u.Update(ctx))

	created := plugin.DeepCopy()
	created.ResourceVersion = ""
	require.NoError(t, c.Create(ctx, created))
	require.NoError(t, u.Update(ctx))
	require.Equal(t, metav1.ConditionTrue, programmed(t, c, &kongv1.KongPlugin{}, "used").Status)
}

// A condition's message goes through the redaction Events do: Kong's refusal quoting a
// credential of the configuration (a database-mode UNIQUE violation quotes the key) is
// written without it (docs/security.md, item 3).
func TestProgrammedConditionIsRedacted(t *testing.T) {
	ctx := context.Background()
	consumer := &kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alice", UID: "u-alice", Generation: 1,
		Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}}, Username: "alice", Credentials: []string{"alice-key"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alice-key", Labels: map[string]string{"konghq.com/credential": "key-auth"}},
		Data: map[string][]byte{"key": []byte("alice-very-secret-key")}}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(consumer, secret).WithStatusSubresource(&kongv1.KongConsumer{}).Build()
	st := store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)})
	snap, err := st.Snapshot(ctx)
	require.NoError(t, err)
	state, problems := translator.Translate(snap, translator.Options{})
	require.Len(t, state.Consumers, 1)
	ref := kongstate.RefFor(consumer, kongv1.SchemeGroupVersion.WithKind("KongConsumer"))
	u := NewProgrammedUpdater(st, c, logr.Discard())
	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{URL: "http://kong",
		Err: &dataplane.RejectedError{RestApplied: true, Entities: []dataplane.EntityError{{Object: ref, Field: "keyauth_credentials",
			Message: `UNIQUE violation detected on '{key="alice-very-secret-key"}'`}}}}}})
	require.NoError(t, u.Update(ctx))
	cond := programmed(t, c, &kongv1.KongConsumer{}, "alice")
	require.Equal(t, metav1.ConditionFalse, cond.Status)
	require.NotContains(t, cond.Message, "alice-very-secret-key")
	require.Contains(t, cond.Message, "[redacted]")
}
