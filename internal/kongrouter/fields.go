package kongrouter

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// The request's facts as the router's context holds them (kong/router/fields.lua).

// context fills the fields the router's matchers read (fields.lua's fill_atc_context).
func (r *Router) context(p Params) (atcContext, error) {
	ctx := atcContext{}
	host, port, hasPort := splitHostPort(p.Host)
	add := func(field, s string) error {
		if !utf8.ValidString(s) {
			return errors.New(utf8Error(s))
		}
		ctx[field] = append(ctx[field], atcValue{str: s})
		return nil
	}
	addIP := func(field, s string) error {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return errors.New("invalid IP address syntax")
		}
		ctx[field] = append(ctx[field], atcValue{ip: a.Unmap()})
		return nil
	}
	var segments []string
	for _, f := range r.fields {
		var err error
		switch {
		case f == "net.protocol" && p.Scheme != "":
			err = add(f, p.Scheme)
		case f == "tls.sni" && p.SNI != "":
			err = add(f, p.SNI)
		case f == "http.method" && p.Method != "":
			err = add(f, p.Method)
		case f == "http.host" && host != "":
			err = add(f, host)
		case f == "http.path" && p.URI != "":
			err = add(f, p.URI)
		case f == "net.src.ip" && p.SrcIP != "":
			err = addIP(f, p.SrcIP)
		case f == "net.dst.ip" && p.DstIP != "":
			err = addIP(f, p.DstIP)
		case f == "net.src.port" && p.SrcPort != 0:
			ctx[f] = append(ctx[f], atcValue{num: int64(p.SrcPort)})
		case f == "net.dst.port":
			switch {
			case hasPort && !r.opts.Stream:
				ctx[f] = append(ctx[f], atcValue{num: int64(port)})
			case p.DstPort != 0:
				ctx[f] = append(ctx[f], atcValue{num: int64(p.DstPort)})
			}
		case strings.HasPrefix(f, "http.headers."):
			name := f[len("http.headers."):]
			for k, values := range p.Headers {
				if headerKey(k) != name {
					continue
				}
				for _, v := range values {
					if err = add(f, v); err != nil {
						break
					}
				}
			}
		case strings.HasPrefix(f, "http.queries."):
			for _, v := range p.Queries[f[len("http.queries."):]] {
				if err = add(f, v); err != nil {
					break
				}
			}
		case f == "http.path.segments.len":
			if segments == nil {
				segments = pathSegments(p.URI)
			}
			ctx[f] = append(ctx[f], atcValue{num: int64(len(segments))})
		case strings.HasPrefix(f, "http.path.segments."):
			if segments == nil {
				segments = pathSegments(p.URI)
			}
			if v, ok := segmentRange(segments, f[len("http.path.segments."):]); ok {
				err = add(f, v)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return ctx, nil
}

// headerKey is how Kong finds a request header by an ATC field's name: lower-cased, "-" as "_".
func headerKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "-", "_")
}

// pathSegments is fields.lua's get_http_segments: the path after its first "/" split on "/",
// without trailing empty segments.
func pathSegments(path string) []string {
	if path == "" {
		return []string{}
	}
	segs := strings.Split(path[1:], "/")
	for len(segs) > 0 && segs[len(segs)-1] == "" {
		segs = segs[:len(segs)-1]
	}
	if segs == nil {
		segs = []string{}
	}
	return segs
}

// segmentRange is http.path.segments.N (from 0) or .N_M (N to M, joined by "/").
func segmentRange(segs []string, r string) (string, bool) {
	lo, hi, isRange := strings.Cut(r, "_")
	if !isRange {
		n, ok := luaToNumber(lo)
		if !ok || n < 0 || n >= len(segs) {
			return "", false
		}
		return segs[n], true
	}
	a, ok1 := luaToNumber(lo)
	b, ok2 := luaToNumber(hi)
	count := len(segs) - 1
	if !ok1 || !ok2 || a >= b || a > count || b > count || a < 0 {
		return "", false
	}
	return strings.Join(segs[a:b+1], "/"), true
}

// utf8Error is Rust's Utf8Error message for s, which the router gives for a field value that
// is not UTF-8.
func utf8Error(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < 0x80 {
			i++
			continue
		}
		width, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			width = 2
		case c >= 0xE0 && c <= 0xEF:
			width = 3
			if c == 0xE0 {
				lo = 0xA0
			} else if c == 0xED {
				hi = 0x9F
			}
		case c >= 0xF0 && c <= 0xF4:
			width = 4
			if c == 0xF0 {
				lo = 0x90
			} else if c == 0xF4 {
				hi = 0x8F
			}
		default:
			return fmt.Sprintf("invalid utf-8 sequence of 1 bytes from index %d", i)
		}
		for k := 1; k < width; k++ {
			if i+k >= len(s) {
				return fmt.Sprintf("incomplete utf-8 byte sequence from index %d", i)
			}
			b := s[i+k]
			if k > 1 {
				lo, hi = 0x80, 0xBF
			}
			if b < lo || b > hi {
				return fmt.Sprintf("invalid utf-8 sequence of %d bytes from index %d", k, i)
			}
		}
		i += width
	}
	return ""
}
