package dbmode

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// targetPrefetch is an http.RoundTripper that lists the targets of every upstream in parallel.
// Kong has no endpoint listing all targets, and go-database-reconciler's dump lists them
// upstream after upstream, one request at a time, after the upstreams: with thousands of
// upstreams that sequence was most of a dump (1.5 s at 2,000 Ingresses against the
// emulator), and so of a new leader's first sync (issue #13). dump.Config has no setting
// for it, so the prefetch sits under the dump: when a page of GET /upstreams passes through,
// it asks for each listed upstream's first page of targets at once, at most limit requests
// in flight (--kong-admin-concurrency), with the query of the upstream list (dump lists both
// with the same size, tags and match_all_tags). The dump's own GET /upstreams/{id}/targets
// then takes the prefetched answer, waiting for it when it is still in flight. Each answer
// serves one request; a new first page of upstreams (the next dump) forgets those not taken.
// Any other request, a later page of targets, or a prefetch that failed goes to Kong as is.
type targetPrefetch struct {
	next  http.RoundTripper
	limit chan struct{}

	mu      sync.Mutex
	pending map[string]*prefetched // request path + "?" + query (keys sorted) -> answer
}

type prefetched struct {
	done chan struct{}
	resp cachedResponse
	ok   bool // a 200 answer was read
}

func newTargetPrefetch(next http.RoundTripper, limit int) *targetPrefetch {
	return &targetPrefetch{next: next, limit: make(chan struct{}, max(limit, 1)), pending: map[string]*prefetched{}}
}

func (t *targetPrefetch) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		return t.next.RoundTrip(r)
	}
	if strings.HasSuffix(r.URL.Path, "/targets") && strings.Contains(r.URL.Path, "/upstreams/") {
		key := r.URL.Path + "?" + r.URL.Query().Encode()
		t.mu.Lock()
		p := t.pending[key]
		delete(t.pending, key)
		t.mu.Unlock()
		if p != nil {
			select {
			case <-p.done:
				if p.ok {
					return p.resp.response(r), nil
				}
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
		return t.next.RoundTrip(r)
	}
	if !strings.HasSuffix(r.URL.Path, "/upstreams") {
		return t.next.RoundTrip(r)
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	t.prefetch(r, body)
	return resp, nil
}

// prefetch starts the target lists of the upstreams of one page of GET /upstreams.
func (t *targetPrefetch) prefetch(list *http.Request, body []byte) {
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &page) != nil {
		return
	}
	query := list.URL.Query()
	firstPage := query.Get("offset") == ""
	query.Del("offset")
	rawQuery := query.Encode()
	t.mu.Lock()
	if firstPage {
		clear(t.pending)
	}
	var start []*http.Request
	var entries []*prefetched
	for _, u := range page.Data {
		if u.ID == "" {
			continue
		}
		req := list.Clone(list.Context())
		req.URL.Path = list.URL.Path + "/" + u.ID + "/targets"
		req.URL.RawPath = ""
		req.URL.RawQuery = rawQuery
		p := &prefetched{done: make(chan struct{})}
		t.pending[req.URL.Path+"?"+rawQuery] = p
		start = append(start, req)
		entries = append(entries, p)
	}
	t.mu.Unlock()
	go func() {
		var wg sync.WaitGroup
		for i, req := range start {
			select {
			case t.limit <- struct{}{}:
			case <-req.Context().Done():
				for _, p := range entries[i:] {
					close(p.done)
				}
				wg.Wait()
				return
			}
			wg.Add(1)
			go func(req *http.Request, p *prefetched) {
				defer wg.Done()
				defer func() { <-t.limit }()
				defer close(p.done)
				resp, err := t.next.RoundTrip(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					return
				}
				p.resp, p.ok = cachedResponse{status: resp.StatusCode, header: resp.Header.Clone(), body: b}, true
			}(req, entries[i])
		}
		wg.Wait()
	}()
}
