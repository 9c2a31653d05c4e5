package explain

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongrouter"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// benchIngresses is the size issue #41 sets: answers in under 100 ms at 10,000 Ingresses.
const benchIngresses = 10000

var bench struct {
	once sync.Once
	e    *Explainer
	load time.Duration
}

// benchExplainer is an Explainer over benchdata's 10,000 Ingresses (3 paths each, 30,000 Kong
// paths), as `konductor explain -f` builds it after translating: the declarative
// configuration read back, Kong's routers built once.
func benchExplainer(b *testing.B) *Explainer {
	bench.once.Do(func() {
		snap := benchdata.Snapshot(benchIngresses)
		state, _ := translator.Translate(snap, translator.Options{RustRegexes: true})
		cfg, err := state.DeclarativeConfig()
		require.NoError(b, err)
		start := time.Now()
		kc, err := kongrouter.ConfigFromDeclarative(kongrouter.TraditionalCompatible, cfg)
		require.NoError(b, err)
		var objs []client.Object
		for _, ing := range snap.Ingresses {
			objs = append(objs, ing)
		}
		bench.e, err = New(Input{Config: kc, Objects: objs})
		require.NoError(b, err)
		bench.load = time.Since(start)
	})
	return bench.e
}

// BenchmarkExplain10kIngresses: one request explained, once the configuration is loaded (the
// load is reported as load-ms). matched: a route takes it (its Ingress path read back); miss: none does (every
// route is asked what differs); conflicts: --all-conflicts over the whole configuration.
func BenchmarkExplain10kIngresses(b *testing.B) {
	e := benchExplainer(b)
	for _, c := range []struct {
		name string
		r    Request
	}{
		{"matched", Request{URL: "http://app-5000.example.com/api/v1/users?page=2"}},
		{"miss", Request{URL: "http://nothing.example.net/api/v1/users"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				x, err := e.Explain(c.r)
				if err != nil {
					b.Fatal(err)
				}
				if c.name == "matched" && (x.Route == nil || x.Route.Source.Path == nil || *x.Route.Source.Path != 1) {
					var s strings.Builder
					_ = x.Text(&s)
					b.Fatal(s.String())
				}
			}
			// After the loop: its start resets the timer and the metrics.
			b.ReportMetric(float64(bench.load.Milliseconds()), "load-ms")
		})
	}
	b.Run("conflicts", func(b *testing.B) {
		for b.Loop() {
			if c := e.Conflicts(); len(c.SharedHosts) != 0 {
				b.Fatal("benchdata's hosts are each one Ingress's")
			}
		}
	})
}
