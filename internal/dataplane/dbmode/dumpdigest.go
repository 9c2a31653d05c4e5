package dbmode

import (
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"sync"
)

// dumpDigests is an http.RoundTripper that, for the requests of a context carrying a
// dumpDigest, adds each answer's body to that digest as the answer is read. It lets a sync
// tell whether its dump of Kong is the dump Prepare indexed (prepare.go) without comparing
// thousands of decoded entities: go-database-reconciler decodes every list answer the same
// way, so the same answers to the same requests make the same dump. Other requests pass
// through untouched.
type dumpDigests struct{ next http.RoundTripper }

// dumpDigest collects the answers of one dump: request URI -> digests of its answers' bodies
// and status (the dump lists collections concurrently, so the answers are keyed rather than
// hashed in the order they come).
type dumpDigest struct {
	mu      sync.Mutex
	answers map[string][][sha256.Size]byte
	open    int  // answers not closed yet: their bodies are not in the digest
	broken  bool // an answer was not read to its end: the dump failed, its digest means nothing
}

type dumpDigestKey struct{}

// withDumpDigest returns ctx carrying d: the requests made with it are digested.
func withDumpDigest(ctx context.Context, d *dumpDigest) context.Context {
	return context.WithValue(ctx, dumpDigestKey{}, d)
}

func (t dumpDigests) RoundTrip(r *http.Request) (*http.Response, error) {
	d, _ := r.Context().Value(dumpDigestKey{}).(*dumpDigest)
	resp, err := t.next.RoundTrip(r)
	if d == nil || err != nil {
		if d != nil {
			d.fail()
		}
		return resp, err
	}
	h := answerHash(resp.Status)
	d.mu.Lock()
	d.open++
	d.mu.Unlock()
	resp.Body = &digestedBody{body: resp.Body, h: h, done: func(ok bool) {
		if !ok {
			d.fail()
			return
		}
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		d.add(r.Method+" "+r.URL.RequestURI(), sum)
	}}
	return resp, nil
}

func (d *dumpDigest) fail() {
	d.mu.Lock()
	d.broken = true
	d.mu.Unlock()
}

func (d *dumpDigest) add(key string, sum [sha256.Size]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.answers == nil {
		d.answers = map[string][][sha256.Size]byte{}
	}
	d.answers[key] = append(d.answers[key], sum)
	d.open--
}

// digestedBody hashes what is read through it; Close reads the rest first, so that the
// digest covers the whole body however much of it the decoder read.
type digestedBody struct {
	body io.ReadCloser
	h    hash.Hash
	done func(ok bool)
	once sync.Once
}

func (b *digestedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.h.Write(p[:n])
	if err != nil && err != io.EOF {
		b.once.Do(func() { b.done(false) })
	}
	return n, err
}

func (b *digestedBody) Close() error {
	err := copyInto(b.h, b.body)
	b.once.Do(func() { b.done(err == nil) })
	return b.body.Close()
}
