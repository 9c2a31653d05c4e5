package translator

import (
	"fmt"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// consumerCluster is benchdata.Snapshot(ingresses) with n API-key customers, as a KIC user
// with many consumers has them (issue #13 item 2): each KongConsumer with one key-auth
// credential Secret, every 50th in one of five KongConsumerGroups, every 100th with a
// rate-limiting KongPlugin.
func consumerCluster(ingresses, n int) *store.Snapshot {
	snap := benchdata.Snapshot(ingresses)
	snap.KongPlugins = append(snap.KongPlugins, &kongv1.KongPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: "limit", Namespace: "ns-0", UID: "aaaaaaaa-0000-4000-8000-000000000001"},
		PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: []byte(`{"minute":10}`)},
	})
	for g := range 5 {
		snap.KongConsumerGroups = append(snap.KongConsumerGroups, &kongv1beta1.KongConsumerGroup{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tier-%d", g), Namespace: "ns-0", UID: types.UID(fmt.Sprintf("bbbbbbbb-0000-4000-8000-%012x", g)),
				Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
		})
	}
	for i := range n {
		kc, secret := benchConsumer(i, 0)
		if i%50 == 0 {
			kc.ConsumerGroups = []string{fmt.Sprintf("tier-%d", i/50%5)}
		}
		if i%100 == 0 {
			kc.Annotations["konghq.com/plugins"] = "limit"
		}
		snap.KongConsumers = append(snap.KongConsumers, kc)
		snap.Secrets = append(snap.Secrets, secret)
	}
	return snap
}

// benchConsumer is the i-th API-key consumer of consumerCluster and its key-auth Secret,
// whose key is the version-th.
func benchConsumer(i, version int) (*kongv1.KongConsumer, *corev1.Secret) {
	name := fmt.Sprintf("customer-%d", i)
	kc := &kongv1.KongConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns-0", UID: types.UID(fmt.Sprintf("cccccccc-0000-4000-8000-%012x", i)), ResourceVersion: "1",
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
		Username: name, Credentials: []string{name + "-key"},
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-key", Namespace: "ns-0", UID: types.UID(fmt.Sprintf("dddddddd-0000-4000-8000-%012x", i)),
			ResourceVersion: fmt.Sprint(version + 1), Labels: map[string]string{CredentialLabel: "key-auth"}},
		Data: map[string][]byte{"key": fmt.Appendf(nil, "%s-key-%d", name, version)},
	}
	return kc, secret
}

// BenchmarkIncrementalConsumers measures a round (Incremental.Build and the body of
// POST /config by a kongstate.Renderer, as benchIncrementalRounds) in a cluster of 3,000
// Ingresses and 10,000 API-key consumers (consumerCluster), after: one Ingress's host
// changed ("ingress"), one consumer's credential Secret changed its key ("credential"), one
// consumer and its Secret added ("consumer-added"). full-builds/op is the share of rounds
// that were a full translation.
func BenchmarkIncrementalConsumers(b *testing.B) {
	const ingresses, consumers = 3000, 10000
	base := consumerCluster(ingresses, consumers)
	edits := []struct {
		name string
		edit func(snap *store.Snapshot, i int) *store.Snapshot
	}{
		{"ingress", func(snap *store.Snapshot, i int) *store.Snapshot {
			next := *snap
			next.Ingresses = append(next.Ingresses[:0:0], snap.Ingresses...)
			if i >= 0 {
				k := i % ingresses
				ing := next.Ingresses[k].DeepCopy()
				ing.ResourceVersion = fmt.Sprint(i + 2)
				ing.Spec.Rules[0].Host = fmt.Sprintf("changed-%d.example.com", i)
				next.Ingresses[k] = ing
			}
			return &next
		}},
		{"credential", func(snap *store.Snapshot, i int) *store.Snapshot {
			next := *snap
			next.Secrets = append(next.Secrets[:0:0], snap.Secrets...)
			if i >= 0 {
				k := i % consumers
				_, secret := benchConsumer(k, i+1)
				next.Secrets[k] = secret
			}
			return &next
		}},
		{"consumer-added", func(snap *store.Snapshot, i int) *store.Snapshot {
			next := *snap
			next.KongConsumers = append(next.KongConsumers[:0:0], snap.KongConsumers...)
			next.Secrets = append(next.Secrets[:0:0], snap.Secrets...)
			if i >= 0 {
				kc, secret := benchConsumer(consumers+i, 0)
				next.KongConsumers = append(next.KongConsumers, kc)
				next.Secrets = append(next.Secrets, secret)
			}
			return &next
		}},
	}
	for _, e := range edits {
		b.Run(fmt.Sprintf("ingresses=%d/consumers=%d/%s", ingresses, consumers, e.name), func(b *testing.B) {
			full := benchRounds(b, "incremental", Options{}, base, e.edit, func(res Result) {
				if len(res.Problems) != 0 || len(res.State.Services) != ingresses || len(res.State.Consumers) < consumers {
					b.Fatalf("unexpected result: %d services, %d consumers, problems %v", len(res.State.Services), len(res.State.Consumers), res.Problems)
				}
			})
			b.ReportMetric(float64(full)/float64(b.N), "full-builds/op")
		})
	}
}
