package dbless

import (
	"crypto/md5" //nolint:gosec // Kong's configuration_hash
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"unicode/utf8"

	"github.com/konductor/konductor/internal/kongstate"
)

// BodyPrefix and BodySuffix surround the configuration, escaped as the content of a JSON
// string, in the body of POST /config: {"config":"<config>"} (post says why a string).
const (
	BodyPrefix = `{"config":"`
	BodySuffix = `"}`
)

// Body is config as the body {"config": "<config>"}: what json.Marshal of that struct gives
// a decoder, without its cost (kongstate.AppendJSONStringContent).
func Body(config []byte) []byte {
	return kongstate.QuotedBody(config, BodyPrefix, BodySuffix)
}

// configOf is the configuration a Body holds.
func configOf(body []byte) ([]byte, error) {
	var b struct {
		Config *string `json:"config"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Config == nil {
		return nil, errors.New("no configuration in the body")
	}
	return []byte(*b.Config), nil
}

// unescapedHash is kongHash of the configuration body holds when body is BodyPrefix, the
// configuration escaped as the content of a JSON string, BodySuffix, as Body and a
// kongstate.Renderer write it: the content is unescaped into the hash piece by piece. ok is
// false when it cannot tell the hash configOf's decoding would give: another form, a byte a
// JSON string cannot hold, invalid UTF-8 (which a decoder replaces), or a \u escape of a
// character beyond ASCII.
func unescapedHash(body kongstate.Body) (string, bool) {
	if body.Len() < len(BodyPrefix)+len(BodySuffix) {
		return "", false
	}
	u := &unescaper{h: md5.New(), end: body.Len() - len(BodySuffix), buf: make([]byte, 0, unescapeBuffer)} //nolint:gosec // Kong's hash
	if _, err := body.Reader().(io.WriterTo).WriteTo(u); err != nil || u.esc != 0 || u.off != body.Len() {
		return "", false
	}
	u.h.Write(u.buf)
	return hex.EncodeToString(u.h.Sum(nil)), true
}

// unescapeBuffer is how many unescaped bytes are hashed at once.
const unescapeBuffer = 32 << 10

var errUnsure = errors.New("not a body unescapedHash reads")

// unescaper hashes the content of the JSON string between BodyPrefix and BodySuffix of what
// is written to it, unescaped.
type unescaper struct {
	h   hash.Hash
	buf []byte // unescaped, not hashed yet
	off int    // bytes of the body written so far
	end int    // where BodySuffix starts
	// esc is the escape being read: 0 none, '\\' after its backslash, 'u' within \uXXXX
	// (digits its digits so far, code their value).
	esc    byte
	digits int
	code   rune
}

func (u *unescaper) Write(p []byte) (int, error) {
	n := len(p)
	if !utf8.Valid(p) { // the pieces are whole entities and parts of the skeleton: whole characters
		return 0, errUnsure
	}
	if u.off < len(BodyPrefix) {
		k := min(len(p), len(BodyPrefix)-u.off)
		if string(p[:k]) != BodyPrefix[u.off:u.off+k] {
			return 0, errUnsure
		}
		p, u.off = p[k:], u.off+k
	}
	content := p[:max(0, min(len(p), u.end-u.off))]
	if err := u.unescape(content); err != nil {
		return 0, err
	}
	u.off += len(content)
	if suffix := p[len(content):]; len(suffix) > 0 {
		at := u.off - u.end // where in BodySuffix
		if at+len(suffix) > len(BodySuffix) || string(suffix) != BodySuffix[at:at+len(suffix)] {
			return 0, errUnsure
		}
		u.off += len(suffix)
	}
	return n, nil
}

func (u *unescaper) unescape(p []byte) error {
	start := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch u.esc {
		case 0:
			if c >= 0x20 && c != '"' && c != '\\' {
				continue
			}
			if c != '\\' {
				return errUnsure // the string would end there, or a decoder refuses it
			}
			u.emit(p[start:i])
			u.esc = '\\'
		case 'u':
			d, ok := hexDigit(c)
			if !ok {
				return errUnsure
			}
			u.code, u.digits = u.code<<4|rune(d), u.digits+1
			if u.digits == 4 {
				if u.code >= utf8.RuneSelf {
					return errUnsure
				}
				u.emitByte(byte(u.code))
				u.esc = 0
			}
		default: // after a backslash
			unescaped := jsonEscapes[c]
			switch {
			case c == 'u':
				u.esc, u.digits, u.code = 'u', 0, 0
				start = i + 1
				continue
			case unescaped == 0:
				return errUnsure
			}
			u.emitByte(unescaped)
			u.esc = 0
		}
		start = i + 1
	}
	if u.esc == 0 {
		u.emit(p[start:])
	}
	return nil
}

// jsonEscapes are the one-character escapes of a JSON string and what they stand for (0:
// not one).
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f'}

// emit adds unescaped bytes to the hash, through the buffer.
func (u *unescaper) emit(b []byte) {
	if len(u.buf)+len(b) > cap(u.buf) {
		u.h.Write(u.buf)
		u.buf = u.buf[:0]
		if len(b) > cap(u.buf) {
			u.h.Write(b)
			return
		}
	}
	u.buf = append(u.buf, b...)
}

func (u *unescaper) emitByte(c byte) {
	if len(u.buf) == cap(u.buf) {
		u.h.Write(u.buf)
		u.buf = u.buf[:0]
	}
	u.buf = append(u.buf, c)
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
