package kongstate

import (
	"bytes"
	"hash"
	"io"
	"unsafe"
)

// Body is a rendered body held as the pieces it is made of, in order, rather than as one
// slice: the pieces of a body a Renderer gives are mostly its cache of each entity's bytes,
// so a body costs no copy of megabytes (14 MB per round at 10,000 Ingresses, and as much kept
// alive for as long as the gateway's last good body is compared with the next), and its runs
// of pieces are mostly those of the body before. A Body, its runs and its pieces are
// read-only: the Renderer never writes to what it handed out.
type Body struct {
	// chunks are runs of pieces, in order: a Renderer's bodies share the runs of entities
	// that did not change with the body before (issue #45), so that a body costs a slice
	// header per run of entities changed, not per entity.
	chunks [][][]byte
	size   int
}

// BodyOf is the Body of b's bytes (b is not copied: it must not be modified afterwards).
func BodyOf(b []byte) Body {
	if b == nil {
		return Body{}
	}
	return Body{chunks: [][][]byte{{b}}, size: len(b)}
}

// BodyOfPieces is the Body made of pieces, in order (not copied: they must not be modified
// afterwards).
func BodyOfPieces(pieces [][]byte) Body {
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	return Body{chunks: [][][]byte{pieces}, size: size}
}

// Len is the body's size in bytes.
func (b Body) Len() int { return b.size }

// IsNil reports whether b holds no body at all (not even an empty one).
func (b Body) IsNil() bool { return b.chunks == nil }

// Bytes is the body in one slice: its only piece, or a copy of them all.
func (b Body) Bytes() []byte {
	if len(b.chunks) == 1 && len(b.chunks[0]) == 1 {
		return b.chunks[0][0]
	}
	out := make([]byte, 0, b.size)
	for _, chunk := range b.chunks {
		for _, p := range chunk {
			out = append(out, p...)
		}
	}
	return out
}

// String is the body as a string (tests, logs of small bodies).
func (b Body) String() string { return string(b.Bytes()) }

// Equal reports whether a and b hold the same bytes. Bodies of different sizes (nearly every
// change) cost nothing; pieces shared by both (the same entity's cached bytes) are not read.
func (b Body) Equal(o Body) bool {
	if b.size != o.size || b.IsNil() != o.IsNil() {
		return false
	}
	xs, ys := pieceCursor{chunks: b.chunks}, pieceCursor{chunks: o.chunks}
	var x, y []byte
	for {
		x, y = xs.fill(x), ys.fill(y)
		if len(x) == 0 || len(y) == 0 {
			return len(x) == len(y)
		}
		n := min(len(x), len(y))
		if unsafe.SliceData(x) != unsafe.SliceData(y) && !bytes.Equal(x[:n], y[:n]) {
			return false
		}
		x, y = x[n:], y[n:]
	}
}

// Hash writes the body to h (a digest) and returns its sum.
func (b Body) Hash(h hash.Hash) []byte {
	for _, chunk := range b.chunks {
		for _, p := range chunk {
			h.Write(p)
		}
	}
	return h.Sum(nil)
}

// Reader reads the body from the start; it does not copy the pieces.
func (b Body) Reader() io.Reader {
	return &bodyReader{pieces: pieceCursor{chunks: b.chunks}}
}

// pieceCursor walks a body's pieces in order.
type pieceCursor struct {
	chunks [][][]byte // the runs after chunk
	chunk  [][]byte   // what is left of the current run
}

// fill is p when it is not empty, else the next non-empty piece (empty when none is left).
func (c *pieceCursor) fill(p []byte) []byte {
	for len(p) == 0 {
		for len(c.chunk) == 0 {
			if len(c.chunks) == 0 {
				return nil
			}
			c.chunk, c.chunks = c.chunks[0], c.chunks[1:]
		}
		p, c.chunk = c.chunk[0], c.chunk[1:]
	}
	return p
}

// bodyReader reads pieces in order.
type bodyReader struct {
	pieces pieceCursor
	piece  []byte // what is left of the current piece
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.piece = r.pieces.fill(r.piece); len(r.piece) == 0 {
			break
		}
		c := copy(p[n:], r.piece)
		n += c
		r.piece = r.piece[c:]
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left of the body to w, a piece at a time.
func (r *bodyReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if r.piece = r.pieces.fill(r.piece); len(r.piece) == 0 {
			return total, nil
		}
		n, err := w.Write(r.piece)
		total += int64(n)
		r.piece = r.piece[n:]
		if err != nil {
			return total, err
		}
	}
}
