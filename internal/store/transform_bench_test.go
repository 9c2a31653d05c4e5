package store_test

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// protoObject is what the informers decode: an API object with its generated protobuf codec.
type protoObject interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// BenchmarkCacheRetained is the heap the cache's objects of one kind keep at benchdata's
// cluster shape (3,000 of each kind; ConfigMaps: benchConfigMaps): each object decoded from protobuf as an informer decodes
// it, then kept as decoded ("decoded") or after the cache transform ("cached",
// store.StripForCache). cache-MB is the live heap they hold after a collection.
func BenchmarkCacheRetained(b *testing.B) {
	const n = 3000
	data := benchdata.Snapshot(n)
	configMaps := benchConfigMaps(n)
	kinds := map[string]func(i int) protoObject{
		"Ingress":       func(i int) protoObject { return data.Ingresses[i] },
		"Service":       func(i int) protoObject { return data.Services[i] },
		"EndpointSlice": func(i int) protoObject { return data.EndpointSlices[i] },
		"ConfigMap":     func(i int) protoObject { return configMaps[i] },
	}
	payloads := store.NewSecretPayloads(nil)
	for _, kind := range []string{"Ingress", "Service", "EndpointSlice", "ConfigMap"} {
		encoded := make([][]byte, n)
		for i := range encoded {
			var err error
			if encoded[i], err = kinds[kind](i).Marshal(); err != nil {
				b.Fatal(err)
			}
		}
		modes := []string{"decoded", "cached"}
		if kind == "ConfigMap" {
			// payloads: the cache's transform, which keeps an unlabelled ConfigMap nothing
			// names as metadata (issue #40; before, the informer's label selector kept none).
			modes = append(modes, "payloads")
		}
		for _, mode := range modes {
			b.Run(fmt.Sprintf("kind=%s/%s", kind, mode), func(b *testing.B) {
				var retained float64
				for b.Loop() {
					before := liveHeap()
					kept := make([]any, n)
					for i, raw := range encoded {
						obj := newLike(kinds[kind](i))
						if err := obj.Unmarshal(raw); err != nil {
							b.Fatal(err)
						}
						kept[i] = obj
						switch mode {
						case "cached":
							kept[i], _ = store.StripForCache(obj)
						case "payloads":
							kept[i], _ = payloads.Transform(obj)
						}
					}
					retained = float64(liveHeap()-before) / 1e6
					runtime.KeepAlive(kept)
				}
				b.ReportMetric(retained, "cache-MB")
			})
		}
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// newLike is a new empty object of obj's type.
func newLike(obj protoObject) protoObject {
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(protoObject)
}

// benchConfigMaps are n ConfigMaps as a cluster has them unlabelled: each namespace's
// kube-root-ca.crt (one PEM certificate, 1.1 kB) and application configuration (2 kB of
// properties), with the labels and annotations Helm and kubectl leave.
func benchConfigMaps(n int) []*corev1.ConfigMap {
	cert := "-----BEGIN CERTIFICATE-----\n" + strings.Repeat(strings.Repeat("A", 64)+"\n", 16) + "-----END CERTIFICATE-----\n"
	props := strings.Repeat("some.application.property=a value of some length\n", 40)
	out := make([]*corev1.ConfigMap, n)
	for i := range out {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i/10), Name: fmt.Sprintf("config-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "12345",
			Labels:      map[string]string{"app.kubernetes.io/name": "app", "app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "app", "meta.helm.sh/release-namespace": "apps"},
		}}
		if i%2 == 0 {
			c.Name, c.Labels, c.Annotations = "kube-root-ca.crt", nil, map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}
			c.Data = map[string]string{"ca.crt": cert}
		} else {
			c.Data = map[string]string{"application.properties": props}
		}
		out[i] = c
	}
	return out
}
