package translator

import (
	"fmt"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// pluginCluster is benchdata.Snapshot(ingresses) with 30 rate-limiting KongPlugins (three in
// each of the ten namespaces), each named by konghq.com/plugins on ten Ingresses of its
// namespace (300 in all at 3,000), and one global KongClusterPlugin: a KIC user's rate limits.
func pluginCluster(ingresses int) *store.Snapshot {
	snap := benchdata.Snapshot(ingresses)
	for n := range 10 {
		for j := range 3 {
			snap.KongPlugins = append(snap.KongPlugins, benchPlugin(n, j, 0))
		}
	}
	for i, ing := range snap.Ingresses {
		if (i/10)%10 == 0 {
			ing.Annotations = map[string]string{annPlugins: fmt.Sprintf("limit-%d", (i/100)%3)}
		}
	}
	snap.KongClusterPlugins = append(snap.KongClusterPlugins, &kongv1.KongClusterPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: "correlation", UID: "eeeeeeee-0000-4000-8000-000000000001", ResourceVersion: "1",
			Labels:      map[string]string{labelGlobal: "true"},
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
		PluginName: "correlation-id", Config: apiextensionsv1.JSON{Raw: []byte(`{"header_name":"X-Request-ID"}`)},
	})
	return snap
}

// benchPlugin is pluginCluster's KongPlugin limit-j of namespace ns-n, its version-th config.
func benchPlugin(n, j, version int) *kongv1.KongPlugin {
	return &kongv1.KongPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("limit-%d", j), Namespace: fmt.Sprintf("ns-%d", n),
			UID: types.UID(fmt.Sprintf("ffffffff-0000-4000-8000-%012x", 3*n+j)), ResourceVersion: fmt.Sprint(version + 1)},
		PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"minute":%d,"policy":"local"}`, 10+version)},
	}
}

// BenchmarkIncrementalPlugins measures a round (Incremental.Build and the body of
// POST /config by a kongstate.Renderer, as benchIncrementalRounds) in pluginCluster at 3,000
// Ingresses after one KongPlugin's config changed (its rate limit). full-builds/op is the
// share of rounds that were a full translation.
func BenchmarkIncrementalPlugins(b *testing.B) {
	const ingresses = 3000
	base := pluginCluster(ingresses)
	edit := func(snap *store.Snapshot, i int) *store.Snapshot {
		next := *snap
		next.KongPlugins = append(next.KongPlugins[:0:0], snap.KongPlugins...)
		if i >= 0 {
			k := i % len(next.KongPlugins)
			next.KongPlugins[k] = benchPlugin(k/3, k%3, i+1)
		}
		return &next
	}
	b.Run(fmt.Sprintf("ingresses=%d/plugin-config", ingresses), func(b *testing.B) {
		full := benchRounds(b, "incremental", Options{}, base, edit, func(res Result) {
			if len(res.Problems) != 0 || len(res.State.Services) != ingresses || len(res.State.Plugins) != 301 {
				b.Fatalf("unexpected result: %d services, %d plugins, problems %v", len(res.State.Services), len(res.State.Plugins), res.Problems)
			}
		})
		b.ReportMetric(float64(full)/float64(b.N), "full-builds/op")
	})
}

// BenchmarkIncrementalIngressPlugins measures a round (as BenchmarkIncrementalPlugins) in
// pluginCluster at 3,000 Ingresses after konghq.com/plugins was added to or removed from one
// Ingress (each round another), naming one of its namespace's rate limits, which ten other
// Ingresses name too: the commonest edit of plugins. full-builds/op is the share of rounds
// that were a full translation (all of them before Incremental spliced Ingresses' plugins).
func BenchmarkIncrementalIngressPlugins(b *testing.B) {
	const ingresses = 3000
	base := pluginCluster(ingresses)
	edit := func(snap *store.Snapshot, i int) *store.Snapshot {
		next := *snap
		next.Ingresses = append(next.Ingresses[:0:0], snap.Ingresses...)
		if i >= 0 {
			k := (i * 7) % ingresses
			ing := next.Ingresses[k].DeepCopy()
			ing.ResourceVersion = fmt.Sprint(i + 2)
			ing.Generation++
			if _, on := ing.Annotations[annPlugins]; on {
				delete(ing.Annotations, annPlugins)
			} else {
				if ing.Annotations == nil {
					ing.Annotations = map[string]string{}
				}
				ing.Annotations[annPlugins] = fmt.Sprintf("limit-%d", i%3)
			}
			next.Ingresses[k] = ing
		}
		return &next
	}
	b.Run(fmt.Sprintf("ingresses=%d/ingress-plugins", ingresses), func(b *testing.B) {
		full := benchRounds(b, "incremental", Options{}, base, edit, func(res Result) {
			if len(res.Problems) != 0 || len(res.State.Services) != ingresses {
				b.Fatalf("unexpected result: %d services, problems %v", len(res.State.Services), res.Problems)
			}
		})
		b.ReportMetric(float64(full)/float64(b.N), "full-builds/op")
	})
}
