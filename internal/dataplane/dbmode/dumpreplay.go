package dbmode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// The dump of a prepared sync, replayed (issue #13: a new leader's first sync).
//
// A sync that finds a prepared state (prepare.go) takes it only when Kong answers its dump
// exactly as it answered Prepare's: until now that dump was go-database-reconciler's, which
// decodes every answer into go-kong's structs (Kong's thousands of entities, most of the
// dump's CPU and garbage) before the digest of the answers can tell that none of it was
// needed. A dump is a deterministic function of Kong's answers: its first requests depend
// only on the dump configuration, and every later one (the next page, an upstream's targets)
// on earlier answers. So when every request Prepare's dump made gets the answer it got
// then, a dump made now would make the same requests, get the same answers and decode the
// same entities. replayDump asks those requests again, at most Concurrency at once, and
// compares each answer's digest with Prepare's; the first answer that differs stops it, and
// the sync then dumps Kong as always.

// answerHash starts the digest of one answer: its status line, then (written by the caller)
// its body. The dump's transport (dumpdigest.go) and the replay digest answers alike.
func answerHash(status string) hash.Hash {
	h := sha256.New()
	_, _ = io.WriteString(h, status+"\n")
	return h
}

// answersByRequest returns the digests of the answers collected, by request (method and request
// URI), each request's in a fixed order; nil when the digest is broken.
func (d *dumpDigest) answersByRequest() map[string][][sha256.Size]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken || d.open != 0 {
		return nil
	}
	out := make(map[string][][sha256.Size]byte, len(d.answers))
	for k, sums := range d.answers {
		sums = slices.Clone(sums)
		sortDigests(sums)
		out[k] = sums
	}
	return out
}

// errAnswerDiffers stops a replay at the first answer that is not Prepare's.
var errAnswerDiffers = errors.New("an answer differs from the prepared dump's")

// sortDigests orders the digests of one request's answers: the answers of a request the
// dump made several times are compared whatever order they came in.
func sortDigests(sums [][sha256.Size]byte) {
	slices.SortFunc(sums, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
}

// replayDump asks Kong every GET of a dump again and reports whether each got the answer
// whose digest want holds (want: request -> its answers' digests, as answersByRequest).
// An error is a request that failed; a different answer is false, not an error.
func (g *Gateway) replayDump(ctx context.Context, want map[string][][sha256.Size]byte) (bool, error) {
	if len(want) == 0 {
		return false, nil // no dump to compare with
	}
	// The first answer that differs or request that fails cancels the others.
	group, gctx := errgroup.WithContext(ctx)
	group.SetLimit(g.opts.Concurrency)
	for key, sums := range want {
		if gctx.Err() != nil {
			break
		}
		group.Go(func() error {
			uri, ok := strings.CutPrefix(key, http.MethodGet+" ")
			if !ok {
				return errAnswerDiffers // not a GET: not a dump this replays
			}
			got := make([][sha256.Size]byte, 0, len(sums))
			for range sums { // the same request as many times as the dump made it
				sum, err := g.answerDigest(gctx, uri)
				if err != nil {
					return err
				}
				got = append(got, sum)
			}
			sortDigests(got)
			if !slices.Equal(got, sums) {
				return errAnswerDiffers
			}
			return nil
		})
	}
	err := group.Wait()
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case errors.Is(err, errAnswerDiffers):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// answerDigest GETs uri (a request URI of the gateway's Kong) and digests the answer.
func (g *Gateway) answerDigest(ctx context.Context, uri string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.origin+uri, nil)
	if err != nil {
		return sum, err
	}
	resp, err := g.replay.Do(req)
	if err != nil {
		return sum, fmt.Errorf("replaying the dump of %s: %w", g.url, err)
	}
	defer resp.Body.Close()
	h := answerHash(resp.Status)
	if err := copyInto(h, resp.Body); err != nil {
		return sum, fmt.Errorf("replaying the dump of %s: %w", g.url, err)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// copyBuffers serve copyInto: io.Copy into a hash allocates 32 KB per answer (neither side
// implements ReaderFrom or WriterTo), 60 MB of garbage per dump of 2,000 upstreams.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyInto writes everything r has left into w.
func copyInto(w io.Writer, r io.Reader) error {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	_, err := io.CopyBuffer(w, r, *buf)
	return err
}
