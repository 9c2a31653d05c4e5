package kongemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// benchDo sends one request straight to the handler and fails on an unexpected status.
func benchDo(b *testing.B, e *Emulator, method, path, body string, want int) []byte {
	b.Helper()
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes()
}

// benchFill writes n services, routes, upstreams and targets the way
// go-database-reconciler's first sync does (PUT by id, targets by POST), all
// tagged; it returns the upstream ids.
func benchFill(b *testing.B, e *Emulator, n int) []string {
	b.Helper()
	ups := make([]string, n)
	for i := 0; i < n; i++ {
		svc, rt, up := uuid.NewString(), uuid.NewString(), uuid.NewString()
		ups[i] = up
		name := fmt.Sprintf("default.app-%05d.80", i)
		benchDo(b, e, "PUT", "/services/"+svc, fmt.Sprintf(
			`{"name":%q,"host":"app-%05d.default.80.svc","port":80,"tags":["managed-by-ingress-controller","k8s-name:app"]}`, name, i), 200)
		benchDo(b, e, "PUT", "/upstreams/"+up, fmt.Sprintf(
			`{"name":"app-%05d.default.80.svc","tags":["managed-by-ingress-controller"]}`, i), 200)
		benchDo(b, e, "PUT", "/routes/"+rt, fmt.Sprintf(
			`{"name":"default.app-%05d.00","paths":["/app-%05d"],"service":{"id":%q},"tags":["managed-by-ingress-controller"]}`, i, i, svc), 200)
		benchDo(b, e, "POST", "/upstreams/"+up+"/targets", fmt.Sprintf(
			`{"target":"10.0.%d.%d:8080","tags":["managed-by-ingress-controller"]}`, i/250, i%250), 201)
	}
	return ups
}

var benchSizes = []int{1000, 5000, 10000}

// BenchmarkPutServicesRoutes: an empty database Kong, n services, upstreams,
// routes and targets created (4n writes per op).
func BenchmarkPutServicesRoutes(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				e := New(Options{Mode: Postgres})
				benchFill(b, e, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4*n), "ns/write")
		})
	}
}

// BenchmarkListPaged: the dump of a Kong holding n of each: every page of
// /services, /routes, /upstreams with size=1000 and the filter tag, then one
// target list per upstream.
func BenchmarkListPaged(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			e := New(Options{Mode: Postgres})
			ups := benchFill(b, e, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, coll := range []string{"services", "routes", "upstreams"} {
					got := 0
					path := "/" + coll + "?size=1000&tags=managed-by-ingress-controller"
					for {
						var page struct {
							Data   []json.RawMessage `json:"data"`
							Offset string            `json:"offset"`
						}
						if err := json.Unmarshal(benchDo(b, e, "GET", path, "", 200), &page); err != nil {
							b.Fatal(err)
						}
						got += len(page.Data)
						if page.Offset == "" {
							break
						}
						path = "/" + coll + "?size=1000&tags=managed-by-ingress-controller&offset=" + page.Offset
					}
					if got != n {
						b.Fatalf("%s: %d, want %d", coll, got, n)
					}
				}
				for _, up := range ups {
					benchDo(b, e, "GET", "/upstreams/"+up+"/targets?size=1000", "", 200)
				}
			}
		})
	}
}
