package store_test

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// protoObject is what the informers decode: an API object with its generated protobuf codec.
type protoObject interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// BenchmarkCacheRetained is the heap the cache's objects of one kind keep at benchdata's
// cluster shape (3,000 of each kind): each object decoded from protobuf as an informer decodes
// it, then kept as decoded ("decoded") or after the cache transform ("cached",
// store.StripForCache). cache-MB is the live heap they hold after a collection.
func BenchmarkCacheRetained(b *testing.B) {
	const n = 3000
	data := benchdata.Snapshot(n)
	kinds := map[string]func(i int) protoObject{
		"Ingress":       func(i int) protoObject { return data.Ingresses[i] },
		"Service":       func(i int) protoObject { return data.Services[i] },
		"EndpointSlice": func(i int) protoObject { return data.EndpointSlices[i] },
	}
	for _, kind := range []string{"Ingress", "Service", "EndpointSlice"} {
		encoded := make([][]byte, n)
		for i := range encoded {
			var err error
			if encoded[i], err = kinds[kind](i).Marshal(); err != nil {
				b.Fatal(err)
			}
		}
		for _, mode := range []string{"decoded", "cached"} {
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
						if mode == "cached" {
							kept[i], _ = store.StripForCache(obj)
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
