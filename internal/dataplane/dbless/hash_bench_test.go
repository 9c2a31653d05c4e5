package dbless

import (
	"testing"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// BenchmarkKongHashOfBody is what the first push of a controller that restarted against a
// Kong that kept its configuration does before anything is sent: Kong's configuration_hash
// of the body, to learn whether the gateway holds it already (PushBody). It is on the start's
// path to its first sync.
func BenchmarkKongHashOfBody(b *testing.B) {
	state := translator.Build(benchdata.Snapshot(3000), translator.Options{}).State
	body, err := (&kongstate.Renderer{}).QuotedDeclarativeConfig(state, BodyPrefix, BodySuffix)
	if err != nil {
		b.Fatal(err)
	}
	for _, how := range []string{"unescaped", "decoded"} {
		b.Run(how, func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchdata.ProcessCPU()
			for b.Loop() {
				var sum string
				if how == "unescaped" {
					sum = kongHashOfBody(body)
				} else if config, err := configOf(body.Bytes()); err == nil { // the way before, and the fallback
					sum = kongHash(config)
				}
				if sum == "" {
					b.Fatal("no hash")
				}
			}
			b.ReportMetric(float64(benchdata.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
