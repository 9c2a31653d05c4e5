package dataplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// recorder is a DB-less Kong that only records: POST /config keeps the body's digest and
// when it arrived, GET /status reports it as the configuration hash.
type recorder struct {
	delay time.Duration // before answering POST /config (a slow gateway)

	mu      sync.Mutex
	digest  string
	arrived time.Time
	notify  chan<- struct{}
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodPost && req.URL.Path == "/config":
		body, _ := io.ReadAll(req.Body)
		time.Sleep(r.delay)
		sum := sha256.Sum256(body)
		r.mu.Lock()
		r.digest, r.arrived = hex.EncodeToString(sum[:16]), time.Now()
		notify := r.notify
		r.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("{}"))
		if notify != nil {
			notify <- struct{}{}
		}
	case req.URL.Path == "/status":
		r.mu.Lock()
		d := r.digest
		r.mu.Unlock()
		if d == "" {
			d = "00000000000000000000000000000000"
		}
		_, _ = fmt.Fprintf(w, `{"configuration_hash":%q}`, d)
	default:
		http.NotFound(w, req)
	}
}

// swapSource serves one of two stores: each benchmark iteration swaps them, a change.
type swapSource struct {
	cur atomic.Pointer[store.Store]
}

func (s *swapSource) Snapshot(ctx context.Context) (*store.Snapshot, error) {
	return s.cur.Load().Snapshot(ctx)
}

// BenchmarkFanOut measures, per change, the time from the change event until every recording
// gateway holds the new configuration (p50 and p99 over the iterations), with one gateway,
// with 100, and with 100 of which one answers only after a second (then the time until the 99
// others hold it). translations/op shows that a change to any number of gateways costs one
// translation (and so one render: the Target renders once).
func BenchmarkFanOut(b *testing.B) {
	objs := cluster()
	other := append([]client.Object{}, objs...)
	ing := objs[0].(*netv1.Ingress).DeepCopy()
	ing.Spec.Rules[0].Host = "other.example.com"
	other[0] = ing
	stores := [2]*store.Store{}
	for i, o := range [][]client.Object{objs, other} {
		s, err := store.NewForObjects(o, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		stores[i] = s
	}

	for _, tc := range []struct {
		name     string
		gateways int
		slow     int // how many of them answer after a second
	}{{"1", 1, 0}, {"100", 100, 0}, {"100-one-slow", 100, 1}} {
		b.Run(tc.name, func(b *testing.B) {
			arrivals := make(chan struct{}, tc.gateways*4)
			var recs []*recorder
			var gws []Gateway
			for i := range tc.gateways {
				rec := &recorder{notify: arrivals}
				if i < tc.slow {
					rec.delay = time.Second
				}
				srv := httptest.NewServer(rec)
				b.Cleanup(srv.Close)
				c, err := kong.NewClient(kong.String(srv.URL), srv.Client())
				if err != nil {
					b.Fatal(err)
				}
				recs = append(recs, rec)
				gws = append(gws, NewDBLessGateway(srv.URL, c, logr.Discard()))
			}
			fast := recs[tc.slow:]
			src := &swapSource{}
			src.cur.Store(stores[0])
			var translations atomic.Int64
			trigger := NewTrigger()
			l := NewLoop(Options{
				Source: src, Barrier: syncedBarrier{}, Trigger: trigger, Gateways: gws,
				Translate: func(s *store.Snapshot) translator.Result {
					translations.Add(1)
					return translator.Build(s, translator.Options{})
				},
				Period: time.Hour, Quiet: time.Millisecond, Logger: logr.Discard(),
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- l.Start(ctx) }()
			defer func() { cancel(); <-done }()
			<-l.FirstSyncDone()
			drain := func() {
				for {
					select {
					case <-arrivals:
					default:
						return
					}
				}
			}

			var times []time.Duration
			translations.Store(0)
			b.ResetTimer()
			for i := range b.N {
				drain()
				src.cur.Store(stores[(i+1)%2])
				start := time.Now()
				trigger.Request()
				// Wait until every fast gateway took this change.
				for n := 0; n < len(fast); {
					<-arrivals
					n = 0
					for _, r := range fast {
						r.mu.Lock()
						if r.arrived.After(start) {
							n++
						}
						r.mu.Unlock()
					}
				}
				var last time.Time
				for _, r := range fast {
					r.mu.Lock()
					if r.arrived.After(last) {
						last = r.arrived
					}
					r.mu.Unlock()
				}
				times = append(times, last.Sub(start))
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[(len(times)*99)/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(translations.Load())/float64(b.N), "translations/op")
		})
	}
}
