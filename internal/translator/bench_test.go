package translator

import (
	"fmt"
	"testing"

	"github.com/konductor/konductor/internal/translator/benchdata"
)

var benchSizes = []int{100, 1000, 10000}

// BenchmarkTranslate measures Translate alone: snapshot in, Kong state out.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range benchSizes {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				state, problems := Translate(snap, Options{})
				if len(problems) != 0 || len(state.Services) != n {
					b.Fatalf("unexpected result: %d services, problems %v", len(state.Services), problems)
				}
			}
		})
	}
}

// BenchmarkDeclarativeConfig measures rendering the DB-less /config body of a translated state.
func BenchmarkDeclarativeConfig(b *testing.B) {
	for _, n := range benchSizes {
		state, _ := Translate(benchdata.Snapshot(n), Options{})
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				out, err := state.DeclarativeConfig()
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "bytes/config")
		})
	}
}

// BenchmarkTranslateAndRender is the work of one DB-less sync: translate then render.
func BenchmarkTranslateAndRender(b *testing.B) {
	for _, n := range benchSizes {
		snap := benchdata.Snapshot(n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				state, _ := Translate(snap, Options{})
				if _, err := state.DeclarativeConfig(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
