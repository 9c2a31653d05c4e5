package store_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// listBodies are the first lists of the three big kinds exactly as bench-e2e's kube-apiserver
// (v1.37) answered an informer at 3,000 Ingresses (protobuf, resourceVersion=0; testdata/lists,
// captured with curl from a bench-e2e run): 1.07 MB of Ingresses, 1.81 MB of Services, 1.18 MB of
// EndpointSlices, each object with the managedFields and defaults the API server keeps.
var listBodies = []struct {
	kind, file string
	newList    func() runtime.Object
}{
	{"Ingress", "ingresses.pb.gz", func() runtime.Object { return &netv1.IngressList{} }},
	{"Service", "services.pb.gz", func() runtime.Object { return &corev1.ServiceList{} }},
	{"EndpointSlice", "endpointslices.pb.gz", func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},
}

func readListBody(tb testing.TB, file string) []byte {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "lists", file))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkListDecode is an informer's first list at 3,000 objects, from the response's bytes
// to the objects the cache keeps: decoded as controller-runtime's informers decode it
// (client-go's protobuf serializer without conversion; CRDs are served as JSON only, so
// "json" is what a custom resource's list costs per byte), then each object through the
// cache transform (store.StripForCache). cpu-ms/op is the process's CPU time per list.
func BenchmarkListDecode(b *testing.B) {
	codecs := serializer.NewCodecFactory(store.Scheme())
	decoderFor := func(mediaType string) runtime.Decoder {
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			b.Fatalf("no serializer for %s", mediaType)
		}
		return runtime.WithoutVersionDecoder{Decoder: info.Serializer}
	}
	for _, l := range listBodies {
		pb := readListBody(b, l.file)
		// The same list as JSON, encoded from the decoded protobuf.
		decoded := l.newList()
		if _, _, err := decoderFor(runtime.ContentTypeProtobuf).Decode(pb, nil, decoded); err != nil {
			b.Fatal(err)
		}
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
		var js bytes.Buffer
		if err := info.Serializer.Encode(decoded, &js); err != nil {
			b.Fatal(err)
		}
		// The same list without managedFields: what decoding would cost if the decoder skipped
		// them (a bound on what a decoder of the cache's compact form could save).
		items, err := meta.ExtractList(decoded.DeepCopyObject())
		if err != nil {
			b.Fatal(err)
		}
		for _, obj := range items {
			obj.(metav1.Object).SetManagedFields(nil)
		}
		bare := l.newList()
		if err := meta.SetList(bare, items); err != nil {
			b.Fatal(err)
		}
		pbInfo, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		var withoutManagedFields bytes.Buffer
		if err := pbInfo.Serializer.Encode(bare, &withoutManagedFields); err != nil {
			b.Fatal(err)
		}
		for _, format := range []struct {
			name, mediaType string
			body            []byte
		}{
			{"protobuf", runtime.ContentTypeProtobuf, pb},
			{"protobuf-without-managedFields", runtime.ContentTypeProtobuf, withoutManagedFields.Bytes()},
			{"json", runtime.ContentTypeJSON, js.Bytes()},
		} {
			dec := decoderFor(format.mediaType)
			for _, transform := range []bool{false, true} {
				name := fmt.Sprintf("kind=%s/format=%s/decode", l.kind, format.name)
				if transform {
					name += "+transform"
				}
				b.Run(name, func(b *testing.B) {
					b.SetBytes(int64(len(format.body)))
					b.ReportAllocs()
					cpu := benchdata.ProcessCPU()
					for b.Loop() {
						list := l.newList()
						if _, _, err := dec.Decode(format.body, nil, list); err != nil {
							b.Fatal(err)
						}
						if !transform {
							continue
						}
						items, err := meta.ExtractListWithAlloc(list)
						if err != nil {
							b.Fatal(err)
						}
						for _, obj := range items {
							if _, err := store.StripForCache(obj); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(len(format.body)), "body-bytes")
				})
			}
		}
	}
}
