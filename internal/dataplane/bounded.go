package dataplane

import (
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Bounds of what konductor reads from an Admin API (docs/security.md, "A hostile Admin API"):
// a discovered endpoint, or a URL, that is not Kong can answer with an endless body or with
// pages that never end, and the controller would read on.
const (
	// MaxAdminAnswerBytes bounds one answer's body. Kong's largest are a page of 1,000
	// entities and a DB-less /config answer, whose request Kong itself bounds (10 MiB by
	// default, nginx_admin_client_max_body_size).
	MaxAdminAnswerBytes = 64 << 20
	// MaxAdminPages bounds the pages of one listing (requests that carry the offset of a
	// previous page): 10,000 pages of 1,000 entities, ten million of one kind.
	MaxAdminPages = 10_000
)

// BoundedAnswers is the Admin API clients' transport over next: an answer's body longer than
// maxBytes, and a listing of more than maxPages pages, fail with an error that names the
// gateway (scheme and host) and the request, instead of being read on.
func BoundedAnswers(next http.RoundTripper, maxBytes int64, maxPages int) http.RoundTripper {
	return &boundedAnswers{next: next, maxBytes: maxBytes, maxPages: maxPages, pages: map[string]int{}}
}

type boundedAnswers struct {
	next     http.RoundTripper
	maxBytes int64
	maxPages int

	mu sync.Mutex
	// pages counts, by listing (method, gateway, path and query but the offset), the pages
	// asked for since its first page.
	pages map[string]int
}

// maxListings bounds the listings counted at once (nested ones carry an ID in their path):
// past it the counts start again, which bounds the map, not the pages of a listing in
// progress by more than twice.
const maxListings = 4096

func (t *boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	gateway := req.URL.Scheme + "://" + req.URL.Host
	what := req.Method + " " + req.URL.Path
	if err := t.page(req); err != nil {
		return nil, fmt.Errorf("gateway %s: %s: %w", gateway, what, err)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.maxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("gateway %s: %s: the answer is %d bytes, more than the %d konductor reads; is it Kong's Admin API?", gateway, what, resp.ContentLength, t.maxBytes)
	}
	resp.Body = &boundedBody{body: resp.Body, left: t.maxBytes, max: t.maxBytes, gateway: gateway, what: what}
	return resp, nil
}

// Unwrap is the transport the answers come from.
func (t *boundedAnswers) Unwrap() http.RoundTripper { return t.next }

// page counts req when it asks for a page of a listing, and fails when the listing has had
// maxPages already.
func (t *boundedAnswers) page(req *http.Request) error {
	if req.Method != http.MethodGet {
		return nil
	}
	q := req.URL.Query()
	_, next := q["offset"]
	q.Del("offset")
	key := req.URL.Scheme + "://" + req.URL.Host + req.URL.Path + "?" + q.Encode()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !next {
		delete(t.pages, key) // a listing's first page
		return nil
	}
	if len(t.pages) >= maxListings {
		clear(t.pages)
	}
	t.pages[key]++
	if t.pages[key] >= t.maxPages {
		return fmt.Errorf("more than %d pages; is it Kong's Admin API?", t.maxPages)
	}
	return nil
}

// boundedBody is an answer's body that fails once more than max bytes are read.
type boundedBody struct {
	body          io.ReadCloser
	left, max     int64
	gateway, what string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly max bytes from a longer one.
		var one [1]byte
		if _, err := io.ReadFull(b.body, one[:]); err != nil {
			return 0, err // io.EOF: the body was exactly max bytes
		}
		return 0, fmt.Errorf("gateway %s: %s: the answer is longer than the %d bytes konductor reads; is it Kong's Admin API?", b.gateway, b.what, b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }
