package translator

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Kong's validation rules for the values the translator passes on from users
// (kong-admin-api.md §3, read from Kong's schemas). KIC does not check them, so one bad value
// makes Kong reject the whole configuration; konductor checks them here and leaves out only
// the offending piece.

const rfc3986Chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=%"

// checkRoutePath returns why Kong would reject p as a route path, or "".
func checkRoutePath(p string) string {
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
		return fmt.Sprintf("path %q should start with: / (fixed path) or ~/ (regex path)", p)
	}
	if strings.Contains(p, "//") {
		return fmt.Sprintf("path %q must not have empty segments", p)
	}
	if strings.HasPrefix(p, "~") {
		if e := checkPCRE(p[1:]); e != "" {
			return fmt.Sprintf("invalid regex %q: %s", p, e)
		}
		return ""
	}
	return checkPlainPath(p)
}

var rfc3986Table = func() (t [256]bool) {
	for i := 0; i < len(rfc3986Chars); i++ {
		t[rfc3986Chars[i]] = true
	}
	return t
}()

func checkPlainPath(p string) string {
	for _, r := range p {
		if r >= 256 || !rfc3986Table[r] {
			return fmt.Sprintf("invalid path %q: characters outside of the reserved list of RFC 3986 found", p)
		}
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && (i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2])) {
			return fmt.Sprintf("invalid url-encoded value in path %q", p)
		}
	}
	return ""
}

// checkServicePath is Kong's rule for a service path: a plain path, no empty segments.
func checkServicePath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return fmt.Sprintf("path %q should start with: /", p)
	}
	if strings.Contains(p, "//") {
		return fmt.Sprintf("path %q must not have empty segments", p)
	}
	return checkPlainPath(p)
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// pcreOnly rewrites PCRE constructs that Go's RE2 lacks into RE2 of the same shape, so that
// a pattern is not refused only for using them (Kong compiles paths with PCRE).
var pcreOnly = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\(\?(<=|<!|=|!|>|\|)`), "(?:"}, // lookaround, atomic, branch reset
	{regexp.MustCompile(`\\[1-9][0-9]*`), "x"},          // back-references
	{regexp.MustCompile(`\\[gk](\{[^}]*\}|<[^>]*>|'[^']*'|-?[0-9]+)`), "x"},
	{regexp.MustCompile(`\(\?P=[A-Za-z_][A-Za-z0-9_]*\)`), "x"},
	{regexp.MustCompile(`\\[GKZ]`), ""},
	{regexp.MustCompile(`\\[hR]`), `\s`},
	{regexp.MustCompile(`\\[HV]`), `\S`},
	{regexp.MustCompile(`\\v`), `\s`},
	{regexp.MustCompile(`([*+?}])\+`), "$1"}, // possessive quantifiers
	{regexp.MustCompile(`\(\?<([A-Za-z_][A-Za-z0-9_]*)>`), "(?P<$1>"},
	{regexp.MustCompile(`\(\?'([A-Za-z_][A-Za-z0-9_]*)'`), "(?P<$1>"},
}

var bigRepeat = regexp.MustCompile(`\{([0-9]+)(,([0-9]*))?\}`)

var pcreMessages = map[syntax.ErrorCode]string{
	syntax.ErrMissingParen:          "missing closing parenthesis",
	syntax.ErrUnexpectedParen:       "unmatched closing parenthesis",
	syntax.ErrMissingBracket:        "missing terminating ] for character class",
	syntax.ErrMissingRepeatArgument: "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatOp:       "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatSize:     "numbers out of order in {} quantifier",
	syntax.ErrInvalidCharRange:      "range out of order in character class",
	syntax.ErrInvalidEscape:         "unrecognized character follows \\",
}

// checkPCRE reports why PCRE would refuse pattern, or "".
func checkPCRE(pattern string) string {
	// Most paths (every Exact and Prefix path) use no construct that can be malformed: skip
	// the rewriting and compiling, which dominate translation time otherwise.
	if !strings.ContainsAny(pattern, `\()[]{}*+?|`) {
		return ""
	}
	p := pattern
	for _, r := range pcreOnly {
		p = r.re.ReplaceAllString(p, r.repl)
	}
	tooBig := false
	p = bigRepeat.ReplaceAllStringFunc(p, func(m string) string {
		sub := bigRepeat.FindStringSubmatch(m)
		for _, x := range []string{sub[1], sub[3]} {
			if x == "" {
				continue
			}
			if n, err := strconv.Atoi(x); err != nil || n > 65535 {
				tooBig = true
			}
		}
		return "{1}"
	})
	if tooBig {
		return "number too big in {} quantifier"
	}
	if _, err := regexp.Compile(p); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			if m, ok := pcreMessages[se.Code]; ok {
				return m
			}
			return se.Code.String()
		}
		return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	}
	return ""
}

var hostnameRe = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?)*\.?$`)

// hostKind classifies s as "name", "ipv4" or "ipv6" and reports whether it has a port and
// whether it is valid at all.
func hostKind(s string) (kind string, hasPort, ok bool) {
	if ip := net.ParseIP(s); ip != nil {
		if strings.Contains(s, ":") {
			return "ipv6", false, true
		}
		return "ipv4", false, true
	}
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || net.ParseIP(s[1:end]) == nil {
			return "", false, false
		}
		rest := s[end+1:]
		if rest == "" {
			return "ipv6", false, true
		}
		if !strings.HasPrefix(rest, ":") || !validPort(rest[1:]) {
			return "", false, false
		}
		return "ipv6", true, true
	}
	h := s
	if i := strings.LastIndex(s, ":"); i >= 0 {
		if !validPort(s[i+1:]) {
			return "", false, false
		}
		h, hasPort = s[:i], true
	}
	if ip := net.ParseIP(h); ip != nil && !strings.Contains(h, ":") {
		return "ipv4", hasPort, true
	}
	if strings.Trim(h, "0123456789.") == "" || len(h) > 253 || !hostnameRe.MatchString(h) {
		return "", false, false
	}
	return "name", hasPort, true
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535 && s != ""
}

// checkWildcardHost is Kong's rule for route hosts (allowPort) and SNI names: at most one
// wildcard, leftmost or rightmost.
func checkWildcardHost(s string, allowPort bool) string {
	h := s
	if n := strings.Count(h, "*"); n > 0 {
		switch {
		case n > 1:
			return fmt.Sprintf("invalid host %q: must have at most one wildcard", s)
		case strings.HasPrefix(h, "*."):
			h = "x" + h[1:]
		case strings.HasSuffix(h, ".*"):
			h = h[:len(h)-1] + "x"
		default:
			return fmt.Sprintf("invalid host %q: wildcard must be placed at leftmost or rightmost label", s)
		}
	}
	_, hasPort, ok := hostKind(h)
	if !ok {
		return fmt.Sprintf("invalid host %q", s)
	}
	if hasPort && !allowPort {
		return fmt.Sprintf("invalid host %q: must not have a port", s)
	}
	return ""
}

// checkSNI is Kong's rule for SNI names: a wildcard host without port, not an IP address.
func checkSNI(s string) string {
	if e := checkWildcardHost(s, false); e != "" {
		return e
	}
	if k, _, _ := hostKind(s); k == "ipv4" || k == "ipv6" {
		return fmt.Sprintf("invalid SNI %q: must not be an IP address", s)
	}
	return ""
}

// checkServiceHost is Kong's rule for a service host and an upstream name: a hostname
// without port.
func checkServiceHost(s string) string {
	k, hasPort, ok := hostKind(s)
	if !ok || hasPort || k != "name" {
		return fmt.Sprintf("invalid host %q: must be a hostname without port", s)
	}
	return ""
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9._~\-\x{80}-\x{10FFFF}]+$`)

// checkName is Kong's rule for service and route names.
func checkName(s string) string {
	if !nameRe.MatchString(s) {
		return fmt.Sprintf("invalid name %q: allowed characters are A-Z, a-z, 0-9, '.', '-', '_' and '~'", s)
	}
	return ""
}

var headerNameRe = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)

// checkHeaderName is Kong's rule for route header names; "host" belongs in hosts.
func checkHeaderName(s string) string {
	if strings.EqualFold(s, "host") {
		return "route headers cannot contain the 'host' header"
	}
	if !headerNameRe.MatchString(s) {
		return fmt.Sprintf("bad header name %q, allowed characters are A-Z, a-z, 0-9, '_', and '-'", s)
	}
	return ""
}

// checkTag is Kong's rule for tags: printable, without ',' and '/'.
func checkTag(s string) string {
	if s == "" {
		return "empty tag"
	}
	for _, r := range s {
		if r == ',' || r == '/' || (r < 0x80 && (r < 0x21 || r > 0x7e)) {
			return fmt.Sprintf("invalid tag %q: expected printable ascii (except `,` and `/`) or valid utf-8 sequences", s)
		}
	}
	return ""
}
