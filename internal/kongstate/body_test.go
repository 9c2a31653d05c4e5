package kongstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// cut splits b into random pieces (some empty), sharing b's bytes, in random runs (some
// empty).
func cut(rng *rand.Rand, b []byte) Body {
	var pieces [][]byte
	for len(b) > 0 {
		n := rng.IntN(min(len(b), 7) + 1)
		pieces = append(pieces, b[:n])
		b = b[n:]
	}
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	pieces = append(pieces, nil)
	var chunks [][][]byte
	for len(pieces) > 0 {
		n := rng.IntN(min(len(pieces), 4) + 1)
		chunks = append(chunks, pieces[:n])
		pieces = pieces[n:]
	}
	return Body{chunks: append(chunks, nil), size: size}
}

// TestBodyActsAsItsBytes: whatever its pieces, a Body compares, hashes, reads and writes as
// the bytes they make.
func TestBodyActsAsItsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 500; i++ {
		a := make([]byte, rng.IntN(40))
		for k := range a {
			a[k] = byte('a' + rng.IntN(3))
		}
		b := append([]byte(nil), a...)
		if len(b) > 0 && rng.IntN(2) == 0 {
			b[rng.IntN(len(b))] = 'z' // differs, same size
		}
		x, y := cut(rng, a), cut(rng, b)
		require.Equal(t, bytes.Equal(a, b), x.Equal(y), "%q %q", a, b)
		require.Equal(t, bytes.Equal(a, b), y.Equal(x), "%q %q", a, b)
		require.True(t, x.Equal(BodyOf(a)))
		require.Equal(t, len(a), x.Len())
		require.Equal(t, string(a), x.String())
		sum := sha256.Sum256(a)
		require.Equal(t, sum[:], x.Hash(sha256.New()))
		read, err := io.ReadAll(x.Reader())
		require.NoError(t, err)
		require.Equal(t, string(a), string(read))
		var w bytes.Buffer
		_, err = io.Copy(&w, x.Reader())
		require.NoError(t, err)
		require.Equal(t, string(a), w.String())
		buf := make([]byte, 3)
		var small []byte
		r := x.Reader()
		for {
			n, err := r.Read(buf)
			small = append(small, buf[:n]...)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		require.Equal(t, string(a), string(small))
	}
	require.False(t, Body{}.Equal(BodyOf([]byte{})), "no body is not an empty body")
	require.True(t, Body{}.Equal(Body{}))
}

// AppendJSONStringContent gives the content of a JSON string that reads back as its input,
// control bytes included, after what dst holds.
func TestAppendJSONStringContent(t *testing.T) {
	var all []byte
	for c := 0; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	for _, in := range []string{"", `{"a":"b\\c"}`, "plain", "é\u2028<&>", string(all), "\x00\x1f\"\\\n\r\t"} {
		out := AppendJSONStringContent(nil, []byte(in))
		var back string
		require.NoError(t, json.Unmarshal([]byte(`"`+string(out)+`"`), &back), "%q", in)
		require.Equal(t, in, back)
		require.Equal(t, "x"+string(out), string(AppendJSONStringContent([]byte("x"), []byte(in))))
	}
}
