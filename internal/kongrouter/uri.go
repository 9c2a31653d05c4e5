package kongrouter

import (
	"strconv"
	"strings"
)

// Kong's handling of request and upstream paths: kong/tools/uri.lua (normalize, escape) and
// kong/router/utils.lua (strip_uri_args, sanitize_uri_postfix, get_upstream_uri_v0).

// reservedChars are RFC 3986's reserved characters and "%": Kong leaves their percent-encoded
// triplets encoded (upper-cased) and decodes every other triplet.
const reservedChars = "!*'();:@&=+$,/?%#[]"

// NormalizePath is Kong's normalize(uri, merge_slashes): percent-encoded triplets of
// unreserved and other characters are decoded (reserved ones are upper-cased), dot segments are
// removed and, with mergeSlashes, runs of "/" become one.
func NormalizePath(uri string, mergeSlashes bool) string {
	if uri == "" || uri == "/" {
		return uri
	}
	if strings.Contains(uri, "%") {
		uri = decodeUnreserved(uri)
	}
	if !strings.Contains(uri, ".") && (!mergeSlashes || !strings.Contains(uri, "//")) {
		return uri
	}
	var out []string
	for len(uri) > 0 {
		switch {
		case uri == "/.":
			uri = "/"
		case uri == "/..":
			uri = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case uri == "." || uri == "..":
			uri = ""
		case strings.HasPrefix(uri, "../"):
			uri = uri[3:]
		case strings.HasPrefix(uri, "./"):
			uri = uri[2:]
		case strings.HasPrefix(uri, "/./"):
			uri = uri[2:]
		case strings.HasPrefix(uri, "/../"):
			uri = uri[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case mergeSlashes && strings.HasPrefix(uri, "//"):
			uri = uri[1:]
		default:
			if i := strings.IndexByte(uri[1:], '/'); i >= 0 {
				out = append(out, uri[:i+1])
				uri = uri[i+1:]
			} else {
				out = append(out, uri)
				uri = ""
			}
		}
	}
	return strings.Join(out, "")
}

func decodeUnreserved(uri string) string {
	var b strings.Builder
	for i := 0; i < len(uri); i++ {
		if uri[i] == '%' && i+2 < len(uri) && isHex(uri[i+1]) && isHex(uri[i+2]) {
			n, _ := strconv.ParseUint(uri[i+1:i+3], 16, 8)
			if strings.IndexByte(reservedChars, byte(n)) < 0 {
				b.WriteByte(byte(n))
			} else {
				b.WriteString(strings.ToUpper(uri[i : i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(uri[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// EscapePath is Kong's escape(uri), applied to the upstream path before it is sent: every byte
// outside RFC 3986's reserved and unreserved characters and "%" is percent-encoded.
func EscapePath(uri string) string {
	const keep = "!#$&'()*+,/:;=?@[]-_.~%"
	var b strings.Builder
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		if (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
	}
	return b.String()
}

// stripURIArgs is utils.lua's strip_uri_args: the request URI without its query, normalized
// with slashes merged; the path the router matches.
func stripURIArgs(requestURI string) string {
	// Kong searches from the second byte.
	if len(requestURI) > 1 {
		if i := strings.IndexByte(requestURI[1:], '?'); i >= 0 {
			requestURI = requestURI[:i+1]
		}
	}
	return NormalizePath(requestURI, true)
}

// sanitizeURIPostfix is utils.lua's sanitize_uri_postfix: what follows the stripped prefix,
// without a leading dot segment.
func sanitizeURIPostfix(postfix string) string {
	switch {
	case postfix == "":
		return postfix
	case postfix == "." || postfix == "..":
		return ""
	case strings.HasPrefix(postfix, "./"):
		return postfix[2:]
	case strings.HasPrefix(postfix, "../"):
		return postfix[3:]
	}
	return postfix
}

// upstreamURIv0 is utils.lua's get_upstream_uri_v0: how path_handling "v0" joins the service's
// path (upstreamBase) and the request's path, with or without the matched prefix. Kong's
// expressions and traditional_compatible routers use it whatever the route's path_handling.
func upstreamURIv0(stripPath bool, postfix, reqURI, upstreamBase string) string {
	if strings.HasSuffix(upstreamBase, "/") {
		if stripPath {
			if postfix == "" {
				if upstreamBase == "/" {
					return "/"
				}
				if strings.HasSuffix(reqURI, "/") {
					return upstreamBase
				}
				return upstreamBase[:len(upstreamBase)-1]
			}
			if strings.HasPrefix(postfix, "/") {
				return upstreamBase[:len(upstreamBase)-1] + postfix
			}
			return upstreamBase + postfix
		}
		if reqURI == "" {
			return upstreamBase
		}
		return upstreamBase + reqURI[1:]
	}
	if stripPath {
		if postfix == "" {
			if len(reqURI) > 1 && strings.HasSuffix(reqURI, "/") {
				return upstreamBase + "/"
			}
			return upstreamBase
		}
		if strings.HasPrefix(postfix, "/") {
			return upstreamBase + postfix
		}
		return upstreamBase + "/" + postfix
	}
	if reqURI == "/" {
		return upstreamBase
	}
	return upstreamBase + reqURI
}

// splitHostPort is transform.lua's split_host_port: "example.com:123" is ("example.com", 123);
// a part after the first ":" that is not a number leaves the host whole ("[::1]:80" included).
func splitHostPort(key string) (string, int, bool) {
	i := strings.IndexByte(key, ':')
	if i < 0 {
		return key, 0, false
	}
	port, ok := luaToNumber(key[i+1:])
	if !ok {
		return key, 0, false
	}
	return key[:i], port, true
}

// luaToNumber is Lua's tonumber for a port: decimal (with surrounding spaces) or 0x hex; a
// fraction or anything else is not a port.
func luaToNumber(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 0, 64); err == nil && !strings.ContainsAny(s, "_oObB") {
		return int(n), true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int(f)) && !strings.ContainsAny(s, "nN_") {
		return int(f), true
	}
	return 0, false
}
