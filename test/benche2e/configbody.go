package benche2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// A Kong reads the body of POST /config into one buffer of the length the request announces
// (nginx: client_body_buffer_size, 10m on Kong's Admin API) and hashes the configuration
// string. The recording Kong does the same with buffers kept from push to push, so that the
// harness adds neither io.ReadAll's regrowing (a dozen copies of megabytes, the collections
// they cause) to the measured read, nor encoding/json's validation of the whole body to the
// time the controller's sync waits for the answer (70-170 ms per push at 3,000 Ingresses on
// the loaded machine; a change made meanwhile waited for it): docs/performance.md.

// maxPooledBody bounds the bodies read into a kept buffer; larger ones are read as they come.
const maxPooledBody = 64 << 20

// buffers are the kept buffers of the bodies and of their configurations.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// readBody reads r's body; release gives its buffer back once the body is no longer used.
func readBody(r *http.Request) (body []byte, release func(), err error) {
	if r.ContentLength < 0 || r.ContentLength > maxPooledBody {
		body, err := io.ReadAll(r.Body)
		return body, func() {}, err
	}
	buf := buffers.Get().(*[]byte)
	if int64(cap(*buf)) < r.ContentLength {
		*buf = make([]byte, r.ContentLength)
	}
	body = (*buf)[:r.ContentLength]
	if _, err := io.ReadFull(r.Body, body); err != nil {
		buffers.Put(buf)
		return nil, func() {}, err
	}
	return body, func() { buffers.Put(buf) }, nil
}

// configOf is the configuration a body {"config": "<configuration>"} carries (the string's
// content, unescaped), or the body itself when it is something else; release gives its buffer
// back.
func configOf(body []byte) (config []byte, release func()) {
	const prefix, suffix = `{"config":"`, `"}`
	if bytes.HasPrefix(body, []byte(prefix)) && bytes.HasSuffix(body, []byte(suffix)) && len(body) >= len(prefix)+len(suffix) {
		buf := buffers.Get().(*[]byte)
		if out, ok := unescapeJSONString((*buf)[:0], body[len(prefix):len(body)-len(suffix)]); ok {
			*buf = out
			return out, func() { buffers.Put(buf) }
		}
		buffers.Put(buf)
	}
	var wrapped struct {
		Config *string `json:"config"`
	}
	if json.Unmarshal(body, &wrapped) == nil && wrapped.Config != nil {
		return []byte(*wrapped.Config), func() {}
	}
	return body, func() {}
}

// unescapeJSONString appends to dst the content of a JSON string, s without its quotes, as
// encoding/json decodes it; false when s is not one that this decodes exactly as
// encoding/json does (a surrogate escape, invalid UTF-8, an unescaped quote): the caller asks
// encoding/json then. Raw control bytes, which encoding/json refuses, are taken as they are:
// the recording Kong validates nothing.
func unescapeJSONString(dst, s []byte) ([]byte, bool) {
	if !utf8.Valid(s) {
		return dst, false
	}
	dst = slices.Grow(dst, len(s))
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			i = len(s)
		}
		plain := s[:i]
		if bytes.IndexByte(plain, '"') >= 0 {
			return dst, false
		}
		dst = append(dst, plain...)
		s = s[i:]
		if len(s) == 0 {
			break
		}
		if len(s) < 2 {
			return dst, false
		}
		// JSON's one-letter escapes, and the bytes they stand for.
		const letters, stand = `"\/bfnrt`, "\"\\/\b\f\n\r\t"
		c := s[1]
		if i := strings.IndexByte(letters, c); i >= 0 {
			dst = append(dst, stand[i])
			s = s[2:]
			continue
		}
		if c != 'u' || len(s) < 6 {
			return dst, false
		}
		r := rune(0)
		for _, h := range s[2:6] {
			switch {
			case '0' <= h && h <= '9':
				r = r<<4 | rune(h-'0')
			case 'a' <= h && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case 'A' <= h && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return dst, false
			}
		}
		if utf8.RuneLen(r) < 0 || (0xd800 <= r && r < 0xe000) {
			return dst, false // a surrogate: encoding/json pairs them
		}
		dst = utf8.AppendRune(dst, r)
		s = s[6:]
	}
	return dst, true
}
