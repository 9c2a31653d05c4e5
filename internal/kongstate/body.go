package kongstate

import (
	"bytes"
	"hash"
	"io"
	"unsafe"
)

// Body is a rendered body held as the pieces it is made of, in order, rather than as one
// slice: the pieces of a body a Renderer gives are mostly its cache of each entity's bytes,
// so a body costs a slice header per entity instead of a copy of megabytes (14 MB per round
// at 10,000 Ingresses, and as much kept alive for as long as the gateway's last good body is
// compared with the next). A Body and its pieces are read-only: the Renderer never writes to
// bytes it handed out.
type Body struct {
	pieces [][]byte
	size   int
}

// BodyOf is the Body of b's bytes (b is not copied: it must not be modified afterwards).
func BodyOf(b []byte) Body {
	if b == nil {
		return Body{}
	}
	return Body{pieces: [][]byte{b}, size: len(b)}
}

// BodyOfPieces is the Body made of pieces, in order (not copied: they must not be modified
// afterwards).
func BodyOfPieces(pieces [][]byte) Body {
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	return Body{pieces: pieces, size: size}
}

// Len is the body's size in bytes.
func (b Body) Len() int { return b.size }

// IsNil reports whether b holds no body at all (not even an empty one).
func (b Body) IsNil() bool { return b.pieces == nil }

// Bytes is the body in one slice: its only piece, or a copy of them all.
func (b Body) Bytes() []byte {
	if len(b.pieces) == 1 {
		return b.pieces[0]
	}
	out := make([]byte, 0, b.size)
	for _, p := range b.pieces {
		out = append(out, p...)
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
	var x, y []byte
	i, j := 0, 0
	for {
		for len(x) == 0 && i < len(b.pieces) {
			x, i = b.pieces[i], i+1
		}
		for len(y) == 0 && j < len(o.pieces) {
			y, j = o.pieces[j], j+1
		}
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
	for _, p := range b.pieces {
		h.Write(p)
	}
	return h.Sum(nil)
}

// Reader reads the body from the start; it does not copy the pieces.
func (b Body) Reader() io.Reader {
	return &bodyReader{pieces: b.pieces}
}

// bodyReader reads pieces in order.
type bodyReader struct {
	pieces [][]byte
	off    int // into pieces[0]
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.pieces) > 0 {
		c := copy(p[n:], r.pieces[0][r.off:])
		n += c
		r.off += c
		if r.off == len(r.pieces[0]) {
			r.pieces, r.off = r.pieces[1:], 0
		}
	}
	if n == 0 && len(r.pieces) == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left of the body to w, a piece at a time.
func (r *bodyReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(r.pieces) > 0 {
		n, err := w.Write(r.pieces[0][r.off:])
		total += int64(n)
		r.off += n
		if err != nil {
			return total, err
		}
		r.pieces, r.off = r.pieces[1:], 0
	}
	return total, nil
}
