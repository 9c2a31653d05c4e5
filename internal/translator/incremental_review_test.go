package translator

import (
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// A consumer with plugins recreated (same name, username and annotation, newer) changes the
// order plugins are met in, hence which of two plugins of one name wins on another consumer.
func TestIncrementalRecreatedConsumerWithPlugins(t *testing.T) {
	plugin := func(name string) *kongv1.KongPlugin {
		return &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "1"},
			PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: []byte(`{"minute":10}`)}}
	}
	consumer := func(name, plugins string, created int64, uid string) *kongv1.KongConsumer {
		return &kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid), ResourceVersion: uid,
			CreationTimestamp: metav1.Unix(created, 0),
			Annotations:       map[string]string{"kubernetes.io/ingress.class": "kong", annPlugins: plugins}}, Username: name}
	}
	snap := &store.Snapshot{KongPlugins: []*kongv1.KongPlugin{plugin("limit-a"), plugin("limit-b")},
		KongConsumers: []*kongv1.KongConsumer{consumer("x", "limit-b", 1, "x1"), consumer("y", "limit-a,limit-b", 2, "y1")}}
	next := *snap
	next.KongConsumers = []*kongv1.KongConsumer{consumer("x", "limit-b", 3, "x2"), snap.KongConsumers[1]}

	inc := &Incremental{noSizeLimit: true}
	inc.Build(snap, Options{})
	got := inc.Build(&next, Options{})
	t.Logf("stats %+v", inc.Stats)
	requireSameResult(t, "recreated", &kongstate.Renderer{}, got, Build(&next, Options{}))
}

// A new consumer whose credential Secret was cached without data (SecretsPending) and then
// completed (translateWithPayloads): the completed snapshot differs only in Secrets and
// SecretsPending, which translation does not read.
func TestIncrementalPendingSecretCompletedIsSpliced(t *testing.T) {
	snap := consumerCluster(20, 50)
	kc, secret := benchConsumer(1000, 0)
	first := *snap
	first.KongConsumers = append(append([]*kongv1.KongConsumer(nil), snap.KongConsumers...), kc)
	first.SecretsPending = []*corev1.Secret{secret}
	complete := first
	complete.Secrets = append(append([]*corev1.Secret(nil), snap.Secrets...), secret)
	complete.SecretsPending = nil

	inc := &Incremental{noSizeLimit: true}
	inc.Build(snap, Options{})
	requireSameResult(t, "first", &kongstate.Renderer{}, inc.Build(&first, Options{}), Build(&first, Options{}))
	requireSameResult(t, "complete", &kongstate.Renderer{}, inc.Build(&complete, Options{}), Build(&complete, Options{}))
	t.Logf("stats %+v", inc.Stats)
	require.Equal(t, 1, inc.Stats.Full, "only the first translation is full: %s", inc.Stats.LastReason)
	require.Equal(t, 2, inc.Stats.PartialConsumers)
}

// A custom entity attached through a plugin to a consumer finds the consumer's ID by username
// (consumerIDOf): a consumer of the plugin with only a custom_id gets the ID of the consumer
// whose username it is, when there is one. That consumer's username coming, going or
// changing changes the custom entity, though the consumer has no plugin of its own.
func TestIncrementalCustomEntityFollowsTheConsumerItLooksUp(t *testing.T) {
	const typ = "consumer_notes"
	opts := Options{EntitySchemas: map[string]EntitySchemaAnswer{typ: {Schema: map[string]any{"fields": []any{
		map[string]any{"consumer": map[string]any{"type": "foreign", "reference": "consumers"}},
		map[string]any{"note": map[string]any{"type": "string"}},
	}}}}}
	meta := func(name, rv string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: rv,
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}}
	}
	holder := &kongv1.KongConsumer{ObjectMeta: meta("holder", "1"), CustomID: "shared"} // the plugin's consumer
	holder.Annotations[annPlugins] = "notes"
	named := func(username string) *kongv1.KongConsumer { // no plugin
		return &kongv1.KongConsumer{ObjectMeta: meta("named", "rv-"+username), Username: username}
	}
	group, kind := kongv1alpha1.GroupVersion.Group, "KongPlugin"
	snapshot := func(consumers ...*kongv1.KongConsumer) *store.Snapshot {
		return &store.Snapshot{
			KongPlugins: []*kongv1.KongPlugin{{ObjectMeta: meta("notes", "1"), PluginName: "request-termination",
				Config: apiextensionsv1.JSON{Raw: []byte(`{"status_code":200}`)}}},
			KongCustomEntities: []*kongv1alpha1.KongCustomEntity{{ObjectMeta: meta("note", "1"), Spec: kongv1alpha1.KongCustomEntitySpec{
				EntityType: typ, ControllerName: "kong", Fields: apiextensionsv1.JSON{Raw: []byte(`{"note":"n"}`)},
				ParentRef: &kongv1alpha1.ObjectReference{Group: &group, Kind: &kind, Name: "notes"}}}},
			KongConsumers: append([]*kongv1.KongConsumer{holder}, consumers...),
		}
	}
	for _, tc := range []struct {
		name         string
		before, next *store.Snapshot
	}{
		{"takes the custom_id as username", snapshot(named("other")), snapshot(named("shared"))},
		{"gives the username up", snapshot(named("shared")), snapshot(named("other"))},
		{"deleted", snapshot(named("shared")), snapshot()},
		{"added", snapshot(), snapshot(named("shared"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inc := &Incremental{noSizeLimit: true}
			inc.Build(tc.before, opts)
			got := inc.Build(tc.next, opts)
			t.Logf("stats %+v", inc.Stats)
			requireSameResult(t, tc.name, &kongstate.Renderer{}, got, Build(tc.next, opts))
		})
	}
}
