package dbmode

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamCounters records the target lists a fake Kong was asked for.
type upstreamCounters struct {
	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	asked       map[string]int
	arrived     chan struct{}
}

// Every upstream's targets are asked for at once, at most limit at a time, each once, and the
// dump's own requests, made one after the other, get those answers.
func TestTargetPrefetchListsTargetsConcurrently(t *testing.T) {
	const n = 6
	released := map[string]chan struct{}{}
	for i := 0; i < n; i++ {
		released[fmt.Sprintf("u%d", i)] = make(chan struct{})
	}
	f := &upstreamCounters{asked: map[string]int{}, arrived: make(chan struct{}, n)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upstreams" {
			var ids []string
			for i := 0; i < n; i++ {
				ids = append(ids, fmt.Sprintf(`{"id":"u%d"}`, i))
			}
			fmt.Fprintf(w, `{"data":[%s],"next":null}`, strings.Join(ids, ","))
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/upstreams/"), "/targets")
		f.mu.Lock()
		f.asked[id+"?"+r.URL.RawQuery]++
		f.inFlight++
		f.maxInFlight = max(f.maxInFlight, f.inFlight)
		f.mu.Unlock()
		f.arrived <- struct{}{}
		<-released[id]
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
		fmt.Fprintf(w, `{"data":[{"target":"%s:80"}],"next":null}`, id)
	}))
	defer srv.Close()

	const limit = 3
	client := &http.Client{Transport: newTargetPrefetch(http.DefaultTransport, limit)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only against a hang
	defer cancel()
	get := func(path string) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	query := "?match_all_tags=true&size=1000&tags=managed-by-ingress-controller"
	get("/upstreams" + query)
	// The first `limit` lists arrive before the dump asks for any: they were prefetched.
	for i := 0; i < limit; i++ {
		select {
		case <-f.arrived:
		case <-ctx.Done():
			t.Fatal("target lists were not prefetched")
		}
	}
	go func() {
		for i := 0; i < n; i++ {
			close(released[fmt.Sprintf("u%d", i)])
		}
	}()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("u%d", i)
		if body := get("/upstreams/" + id + "/targets" + query); !strings.Contains(body, id+":80") {
			t.Errorf("targets of %s: %s", id, body)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxInFlight > limit {
		t.Errorf("%d target lists in flight at once, limit %d", f.maxInFlight, limit)
	}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("u%d?%s", i, strings.TrimPrefix(query, "?"))
		if f.asked[key] != 1 {
			t.Errorf("targets of u%d asked %d times, want once (asked: %v)", i, f.asked[key], f.asked)
		}
	}
}
