package kongrules

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Rule names which of Kong's rules a value breaks.
type Rule uint8

// The rules.
const (
	Valid            Rule = iota
	PathStart             // does not start with / (or ~/ for a route path)
	PathEmptySegment      // contains //
	PathRegex             // a regex path PCRE would not compile; Fault.Detail is PCRE's error
	PathChars             // characters outside RFC 3986's reserved and unreserved ones
	PathEscape            // a % not followed by two hex digits
	WildcardCount         // more than one *
	WildcardPlace         // a * that is not the whole leftmost or rightmost label
	HostBadPort           // a port that is not a number from 0 to 65535
	HostInvalid           // neither a hostname nor an IP address
	HostHasPort           // a port where none is allowed
	HostIsIP              // an IP address where a name is required
)

// Fault is why Kong refuses a value.
type Fault struct {
	Rule   Rule
	Msg    string // Kong's exact message; "" when valid
	Detail string // PCRE's error, for PathRegex
}

// OK reports whether the value is valid.
func (f Fault) OK() bool { return f.Rule == Valid }

const rfc3986Chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=%"

var rfc3986Table = func() (t [256]bool) {
	for i := 0; i < len(rfc3986Chars); i++ {
		t[rfc3986Chars[i]] = true
	}
	return t
}()

// RoutePath is Kong's rule for a route path: a fixed path starting with / or a regex path
// starting with ~/ that PCRE compiles, without empty segments.
func RoutePath(p string) Fault {
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
		return Fault{Rule: PathStart, Msg: "should start with: / (fixed path) or ~/ (regex path)"}
	}
	if strings.Contains(p, "//") {
		return Fault{Rule: PathEmptySegment, Msg: "must not have empty segments"}
	}
	if re, ok := strings.CutPrefix(p, "~"); ok {
		if e := PCRE(re); e != "" {
			return Fault{Rule: PathRegex, Msg: fmt.Sprintf("invalid regex: '%s' (PCRE returned: %s)", re, e), Detail: e}
		}
		return Fault{}
	}
	return plainPath(p)
}

// ServicePath is Kong's rule for a service path (and other plain path fields): starts with
// /, no empty segments.
func ServicePath(p string) Fault {
	if !strings.HasPrefix(p, "/") {
		return Fault{Rule: PathStart, Msg: "should start with: /"}
	}
	if strings.Contains(p, "//") {
		return Fault{Rule: PathEmptySegment, Msg: "must not have empty segments"}
	}
	return plainPath(p)
}

// plainPath checks the characters and percent escapes of a fixed path.
func plainPath(p string) Fault {
	for _, r := range p {
		if r >= 256 || !rfc3986Table[r] {
			return Fault{Rule: PathChars, Msg: "invalid path: '" + p + "' (characters outside of the reserved list of RFC 3986 found)"}
		}
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && (i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2])) {
			end := min(i+3, len(p))
			return Fault{Rule: PathEscape, Msg: "invalid url-encoded value: '" + p[i:end] + "'"}
		}
	}
	return Fault{}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// pcreOnly rewrites PCRE constructs that Go's RE2 syntax lacks into equivalents of the same
// shape, so that a pattern is not refused only for using them (Kong compiles with PCRE).
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

// pcreMessages translates RE2 parse errors into PCRE2's wording.
var pcreMessages = map[syntax.ErrorCode]string{
	syntax.ErrMissingParen:          "missing closing parenthesis",
	syntax.ErrUnexpectedParen:       "unmatched closing parenthesis",
	syntax.ErrMissingBracket:        "missing terminating ] for character class",
	syntax.ErrMissingRepeatArgument: "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatOp:       "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatSize:     "numbers out of order in {} quantifier",
	syntax.ErrInvalidCharRange:      "range out of order in character class",
	syntax.ErrInvalidEscape:         "unrecognized character follows \\",
	syntax.ErrTrailingBackslash:     "\\ at end of pattern",
	syntax.ErrInvalidNamedCapture:   "syntax error in subpattern name (missing terminator?)",
	syntax.ErrInvalidPerlOp:         "unrecognized character after (? or (?-",
}

// PCRE returns PCRE's error for pattern, or "" when PCRE compiles it.
func PCRE(pattern string) string {
	// Most paths (every fixed path the translator makes a regex of) use no construct that
	// can be malformed: skip the rewriting and compiling, which would dominate otherwise.
	if !strings.ContainsAny(pattern, `\()[]{}*+?|`) {
		return ""
	}
	p := pattern
	for _, r := range pcreOnly {
		p = r.re.ReplaceAllString(p, r.repl)
	}
	// PCRE allows repeat counts up to 65535, RE2 up to 1000.
	var tooBig, order bool
	p = bigRepeat.ReplaceAllStringFunc(p, func(m string) string {
		sub := bigRepeat.FindStringSubmatch(m)
		lo, err1 := strconv.Atoi(sub[1])
		hi, err2 := strconv.Atoi(sub[3])
		if err1 != nil || lo > 65535 || (sub[3] != "" && (err2 != nil || hi > 65535)) {
			tooBig = true
			return m
		}
		if sub[3] != "" && hi < lo {
			order = true
			return m
		}
		if lo > 1000 || hi > 1000 {
			return "{1}"
		}
		return m
	})
	if tooBig {
		return "number too big in {} quantifier"
	}
	if order {
		return "numbers out of order in {} quantifier"
	}
	_, err := regexp.Compile(p)
	var se *syntax.Error
	if errors.As(err, &se) && se.Code == syntax.ErrInvalidRepeatSize {
		// Every count is in order and at most 1000 by now: RE2 refuses the product of
		// nested counts ((a{100}){100}), which PCRE compiles. Checked again with counts of
		// one, for the rest of the syntax.
		_, err = regexp.Compile(bigRepeat.ReplaceAllString(p, "{1}"))
	}
	if err != nil {
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

// isHostname is Kong's hostname pattern,
// ^[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?)*\.?$:
// labels of letters, digits, '_' and inner '-', joined by dots, with an optional final dot.
// Written out rather than matched by a regexp: every route host and target of a translation
// is checked (issue #13, the first round's CPU); TestHostnameAndNameMatchTheirPatterns holds
// it to the pattern.
func isHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			if c := h[i]; !isWordByte(c) && c != '-' {
				return false
			}
			continue
		}
		if i == start || h[start] == '-' || h[i-1] == '-' { // an empty label, or '-' at its edge
			return false
		}
		start = i + 1
	}
	return true
}

// isWordByte is [A-Za-z0-9_].
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// Port values SplitHostPort returns besides a port number.
const (
	NoPort  = -1 // no port given
	BadPort = -2 // a port that is not a number from 0 to 65535
)

// SplitHostPort parses "host", "host:port", "[v6]", "[v6]:port" and "v6" the way Kong's
// typedefs do. It returns the host, the port (NoPort, BadPort or the number), the kind of
// host ("name", "ipv4" or "ipv6") and ok=false when s is not a hostname or an IP address
// with an optional valid port.
func SplitHostPort(s string) (host string, port int, kind string, ok bool) {
	port = NoPort
	if ip, ipv4 := parseIP(s); ip {
		if ipv4 && strings.Count(s, ".") == 3 {
			return s, NoPort, "ipv4", true
		}
		if strings.Contains(s, ":") {
			return s, NoPort, "ipv6", true
		}
	}
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return s, NoPort, "", false
		}
		h := s[1:end]
		if ip, _ := parseIP(h); !ip || !strings.Contains(h, ":") {
			return s, NoPort, "", false
		}
		rest := s[end+1:]
		if rest == "" {
			return h, NoPort, "ipv6", true
		}
		if !strings.HasPrefix(rest, ":") {
			return s, NoPort, "", false
		}
		p, err := strconv.Atoi(rest[1:])
		if err != nil || p < 0 || p > 65535 {
			return h, BadPort, "ipv6", false
		}
		return h, p, "ipv6", true
	}
	h := s
	if i := strings.LastIndex(s, ":"); i >= 0 {
		h = s[:i]
		p, err := strconv.Atoi(s[i+1:])
		if err != nil || p < 0 || p > 65535 || s[i+1:] == "" {
			return h, BadPort, "", false
		}
		port = p
	}
	if ip, _ := parseIP(h); ip && strings.Count(h, ".") == 3 {
		return h, port, "ipv4", true
	}
	if isDottedNumeric(h) {
		return h, port, "", false
	}
	if !isHostname(h) || len(h) > 253 {
		return h, port, "", false
	}
	return h, port, "name", true
}

// parseIP is net.ParseIP without its allocations: a string that holds a character no IP
// address has (every host name with a letter past 'f') is answered without parsing, whose
// error is an allocation, and an address is a netip.Addr, not a slice. The translator checks
// the host of every Kong service, route and target (issue #13, start). ipv4 is what
// net.IP.To4 reports (an IPv4 address, or one mapped into IPv6).
func parseIP(s string) (ok, ipv4 bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == '.', c == ':':
		default:
			return false, false
		}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" { // net.ParseIP takes no zone
		return false, false
	}
	return true, a.Is4() || a.Is4In6()
}

func isDottedNumeric(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// WildcardHost is Kong's rule for route hosts (allowPort is for hosts with a port): a hostname or IP
// address with at most one wildcard, as the whole leftmost or rightmost label.
func WildcardHost(s string, allowPort bool) Fault {
	if n := strings.Count(s, "*"); n > 0 {
		if n > 1 {
			return Fault{Rule: WildcardCount, Msg: "invalid wildcard: must have at most one wildcard"}
		}
		switch {
		case strings.HasPrefix(s, "*."):
			s = "x" + s[1:]
		case strings.HasSuffix(s, ".*"):
			s = s[:len(s)-1] + "x"
		default:
			return Fault{Rule: WildcardPlace, Msg: "invalid wildcard: must be placed at leftmost or rightmost label"}
		}
	}
	_, port, _, ok := SplitHostPort(s)
	if port == BadPort {
		return Fault{Rule: HostBadPort, Msg: "invalid port number"}
	}
	if !ok {
		return Fault{Rule: HostInvalid, Msg: "invalid hostname: " + s}
	}
	if port >= 0 && !allowPort {
		return Fault{Rule: HostHasPort, Msg: "must not have a port"}
	}
	return Fault{}
}

// SNI is Kong's rule for SNI names (typedefs.wildcard_host, validate_wildcard_host), looser
// than route hosts: at most one "*", as the first or last character (not necessarily a whole
// label; "*" alone is Kong's default certificate SNI), the rest, with the "*" read as a
// label, a host name without port, not an IP address.
func SNI(s string) Fault {
	if i := strings.Index(s, "*"); i >= 0 {
		if i != 0 && i != len(s)-1 {
			return Fault{Rule: WildcardPlace, Msg: "wildcard must be leftmost or rightmost character"}
		}
		if strings.Count(s, "*") > 1 {
			return Fault{Rule: WildcardCount, Msg: "only one wildcard must be specified"}
		}
		s = strings.Replace(s, "*", "wildcard", 1)
	}
	_, port, kind, ok := SplitHostPort(s)
	switch {
	case port == BadPort || port >= 0:
		return Fault{Rule: HostHasPort, Msg: "must not have a port"}
	case !ok:
		return Fault{Rule: HostInvalid, Msg: "invalid value: " + s}
	case kind == "ipv4" || kind == "ipv6":
		return Fault{Rule: HostIsIP, Msg: "must not be an IP"}
	}
	return Fault{}
}

// isName is Kong's name pattern, ^[A-Za-z0-9._~\-\x{80}-\x{10FFFF}]+$, on valid UTF-8 (where
// every byte from 0x80 is part of a character from U+0080), written out rather than matched
// by a regexp: every service and route name of a translation is checked.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x80 && !isWordByte(c) && c != '.' && c != '~' && c != '-' {
			return false
		}
	}
	return s != ""
}

// Name is Kong's rule for entity names (services, routes, workspaces...).
func Name(s string) string {
	if !utf8.ValidString(s) {
		return "invalid utf-8 character sequence detected"
	}
	if !isName(s) {
		return "invalid value '" + s + "': the only accepted ascii characters are alphanumerics or ., -, _, and ~"
	}
	return ""
}

// Tag is Kong's rule for a tag: printable ASCII except ',' and '/', or valid UTF-8. (The
// empty tag is refused by the field's minimum length, not here.)
func Tag(s string) string {
	bad := !utf8.ValidString(s)
	for _, r := range s {
		if r < 0x80 && (r < 0x21 || r > 0x7e || r == ',' || r == '/') {
			bad = true
			break
		}
	}
	if bad {
		return "invalid tag '" + s + "': expected printable ascii (except `,` and `/`) or valid utf-8 sequences"
	}
	return ""
}

var headerNameRe = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)

// HeaderName is Kong's rule for a header name (route headers, upstream hash headers).
// Route headers further must not name "host": see IsHostHeader.
func HeaderName(s string) string {
	if !headerNameRe.MatchString(s) {
		return "bad header name '" + s + "', allowed characters are A-Z, a-z, 0-9, '_', and '-'"
	}
	return ""
}

// IsHostHeader reports whether a route header names "host", which Kong refuses (hosts
// belong in the route's hosts).
func IsHostHeader(s string) bool { return strings.EqualFold(s, "host") }
