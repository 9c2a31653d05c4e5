package kongrules

import (
	"math/rand/v2"
	"net"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRoutePath(t *testing.T) {
	cases := []struct {
		in   string
		rule Rule
		msg  string
	}{
		{"/", Valid, ""},
		{"/a/b", Valid, ""},
		{"/a%20b", Valid, ""},
		{"/a:b@c", Valid, ""},
		{"~/a$", Valid, ""},
		{`~/(?=x)\1`, Valid, ""},
		{"~/a++", Valid, ""},
		{"~/a{1000}", Valid, ""},
		{"~/x{2000}", Valid, ""},
		{`~/(?<id>\d+)$`, Valid, ""},
		{"~/(?!x)y", Valid, ""},
		{"a", PathStart, "should start with: / (fixed path) or ~/ (regex path)"},
		{"~a", PathStart, "should start with: / (fixed path) or ~/ (regex path)"},
		{"/a//b", PathEmptySegment, "must not have empty segments"},
		{"~/a(", PathRegex, "invalid regex: '/a(' (PCRE returned: missing closing parenthesis)"},
		{"~/[a", PathRegex, "invalid regex: '/[a' (PCRE returned: missing terminating ] for character class)"},
		{"~/a|*b", PathRegex, "invalid regex: '/a|*b' (PCRE returned: quantifier does not follow a repeatable item)"},
		{"~/x{3,2}", PathRegex, "invalid regex: '/x{3,2}' (PCRE returned: numbers out of order in {} quantifier)"},
		{"~/a{70000}", PathRegex, "invalid regex: '/a{70000}' (PCRE returned: number too big in {} quantifier)"},
		{`~/a\`, PathRegex, `invalid regex: '/a\' (PCRE returned: \ at end of pattern)`},
		{"/a b", PathChars, "invalid path: '/a b' (characters outside of the reserved list of RFC 3986 found)"},
		{"/é", PathChars, "invalid path: '/é' (characters outside of the reserved list of RFC 3986 found)"},
		{"/%zz", PathEscape, "invalid url-encoded value: '%zz'"},
		{"/a%2", PathEscape, "invalid url-encoded value: '%2'"},
	}
	for _, c := range cases {
		f := RoutePath(c.in)
		if f.Rule != c.rule || f.Msg != c.msg {
			t.Errorf("RoutePath(%q) = %v %q, want %v %q", c.in, f.Rule, f.Msg, c.rule, c.msg)
		}
	}
	if f := RoutePath("~/(("); f.Detail != "missing closing parenthesis" {
		t.Errorf("Detail = %q", f.Detail)
	}
}

func TestServicePath(t *testing.T) {
	cases := []struct {
		in   string
		rule Rule
		msg  string
	}{
		{"/", Valid, ""},
		{"/a/b%2F", Valid, ""},
		{"~/a", PathStart, "should start with: /"},
		{"a", PathStart, "should start with: /"},
		{"/a//b", PathEmptySegment, "must not have empty segments"},
		{"/a b", PathChars, "invalid path: '/a b' (characters outside of the reserved list of RFC 3986 found)"},
		{"/a%zz", PathEscape, "invalid url-encoded value: '%zz'"},
	}
	for _, c := range cases {
		f := ServicePath(c.in)
		if f.Rule != c.rule || f.Msg != c.msg {
			t.Errorf("ServicePath(%q) = %v %q, want %v %q", c.in, f.Rule, f.Msg, c.rule, c.msg)
		}
	}
}

func TestPCRE(t *testing.T) {
	cases := map[string]string{
		"/plain":             "",
		`(a)\1`:              "",
		`a\Kb`:               "",
		`(?'n'a)\k<n>`:       "",
		"a{65535}":           "",
		"a{65536}":           "number too big in {} quantifier",
		"a{2,1}":             "numbers out of order in {} quantifier",
		"(a{100}){100}":      "", // nested counts: RE2 refuses their product, PCRE compiles it
		"((a{10}){10}){10}(": "missing closing parenthesis",
		"(a{2000}){100}":     "",
		"(":                  "missing closing parenthesis",
		")":                  "unmatched closing parenthesis",
		"[z-a]":              "range out of order in character class",
		`\q`:                 `unrecognized character follows \`,
		"(?z)":               "unrecognized character after (? or (?-",
	}
	for in, want := range cases {
		if got := PCRE(in); got != want {
			t.Errorf("PCRE(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitHostPort(t *testing.T) {
	cases := []struct {
		in   string
		host string
		port int
		kind string
		ok   bool
	}{
		{"example.com", "example.com", NoPort, "name", true},
		{"example.com:8080", "example.com", 8080, "name", true},
		{"example.com:99999", "example.com", BadPort, "", false},
		{"example.com:", "example.com", BadPort, "", false},
		{"10.0.0.1", "10.0.0.1", NoPort, "ipv4", true},
		{"10.0.0.1:80", "10.0.0.1", 80, "ipv4", true},
		{"::1", "::1", NoPort, "ipv6", true},
		{"[::1]", "::1", NoPort, "ipv6", true},
		{"[::1]:80", "::1", 80, "ipv6", true},
		{"[::1]:x", "::1", BadPort, "ipv6", false},
		{"[1.2.3.4]", "[1.2.3.4]", NoPort, "", false},
		{"1.2.3", "1.2.3", NoPort, "", false},
		{"-a.com", "-a.com", NoPort, "", false},
		{"a b", "a b", NoPort, "", false},
		{"", "", NoPort, "", false},
	}
	for _, c := range cases {
		h, p, k, ok := SplitHostPort(c.in)
		if h != c.host || p != c.port || k != c.kind || ok != c.ok {
			t.Errorf("SplitHostPort(%q) = %q %d %q %v, want %q %d %q %v", c.in, h, p, k, ok, c.host, c.port, c.kind, c.ok)
		}
	}
}

func TestWildcardHostAndSNI(t *testing.T) {
	cases := []struct {
		in        string
		allowPort bool
		rule      Rule
		msg       string
	}{
		{"example.com", true, Valid, ""},
		{"*.example.com", true, Valid, ""},
		{"example.*", true, Valid, ""},
		{"a_b.example.com", true, Valid, ""},
		{"example.com:8080", true, Valid, ""},
		{"10.0.0.1", true, Valid, ""},
		{"[::1]:80", true, Valid, ""},
		{"*.*.com", true, WildcardCount, "invalid wildcard: must have at most one wildcard"},
		{"a.*.com", true, WildcardPlace, "invalid wildcard: must be placed at leftmost or rightmost label"},
		{"ex*ample.com", true, WildcardPlace, "invalid wildcard: must be placed at leftmost or rightmost label"},
		{"example.com:99999", true, HostBadPort, "invalid port number"},
		{"bad host", true, HostInvalid, "invalid hostname: bad host"},
		{"*.-a.com", true, HostInvalid, "invalid hostname: x.-a.com"},
		{"", true, HostInvalid, "invalid hostname: "},
		{"example.com:80", false, HostHasPort, "must not have a port"},
	}
	for _, c := range cases {
		f := WildcardHost(c.in, c.allowPort)
		if f.Rule != c.rule || f.Msg != c.msg {
			t.Errorf("WildcardHost(%q, %v) = %v %q, want %v %q", c.in, c.allowPort, f.Rule, f.Msg, c.rule, c.msg)
		}
	}
	sni := map[string]Fault{
		"*.a.com":  {},
		"a.com":    {},
		"10.0.0.1": {Rule: HostIsIP, Msg: "must not be an IP"},
		"::1":      {Rule: HostIsIP, Msg: "must not be an IP"},
		"a.com:80": {Rule: HostHasPort, Msg: "must not have a port"},
		// Kong's validate_wildcard_host: a "*" as the first or last character, whole label
		// or not; "*" alone is Kong's default certificate SNI.
		"*":              {},
		"example.*":      {},
		"*foo.com":       {},
		"a.*.com":        {Rule: WildcardPlace, Msg: "wildcard must be leftmost or rightmost character"},
		"*.example.*":    {Rule: WildcardCount, Msg: "only one wildcard must be specified"},
		"*.a.com:8000":   {Rule: HostHasPort, Msg: "must not have a port"},
		"*.bad host.com": {Rule: HostInvalid, Msg: "invalid value: wildcard.bad host.com"},
	}
	for in, want := range sni {
		if got := SNI(in); got != want {
			t.Errorf("SNI(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestNameTagHeader(t *testing.T) {
	names := map[string]string{
		"svc.ns_80~x": "",
		"ünïcode":     "",
		"a b":         "invalid value 'a b': the only accepted ascii characters are alphanumerics or ., -, _, and ~",
		"a/b":         "invalid value 'a/b': the only accepted ascii characters are alphanumerics or ., -, _, and ~",
		"a\xff":       "invalid utf-8 character sequence detected",
	}
	for in, want := range names {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
	tags := map[string]string{
		"k8s-name:x": "",
		"é":          "",
		"a,b":        "invalid tag 'a,b': expected printable ascii (except `,` and `/`) or valid utf-8 sequences",
		"a/b":        "invalid tag 'a/b': expected printable ascii (except `,` and `/`) or valid utf-8 sequences",
		"a b":        "invalid tag 'a b': expected printable ascii (except `,` and `/`) or valid utf-8 sequences",
		"a\xff":      "invalid tag 'a\xff': expected printable ascii (except `,` and `/`) or valid utf-8 sequences",
	}
	for in, want := range tags {
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
	}
	headers := map[string]string{
		"X-Foo_1": "",
		"host":    "",
		"x foo":   "bad header name 'x foo', allowed characters are A-Z, a-z, 0-9, '_', and '-'",
		"":        "bad header name '', allowed characters are A-Z, a-z, 0-9, '_', and '-'",
	}
	for in, want := range headers {
		if got := HeaderName(in); got != want {
			t.Errorf("HeaderName(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsHostHeader("Host") || IsHostHeader("x-host") {
		t.Error("IsHostHeader")
	}
}

// TestHostnameAndNameMatchTheirPatterns: isHostname and isName, written out for speed, accept
// exactly what Kong's patterns accept, over strings of the bytes that matter.
func TestHostnameAndNameMatchTheirPatterns(t *testing.T) {
	hostnamePattern := regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?)*\.?$`)
	namePattern := regexp.MustCompile(`^[A-Za-z0-9._~\-\x{80}-\x{10FFFF}]+$`)
	alphabet := []string{"a", "Z", "0", "_", "-", ".", "~", "*", ":", " ", "\n", "é", "\u2028", "/", "%"}
	rng := rand.New(rand.NewPCG(3, 9))
	check := func(s string) {
		if want, got := hostnamePattern.MatchString(s), isHostname(s); want != got {
			t.Fatalf("hostname %q: the pattern says %v, isHostname %v", s, want, got)
		}
		if want, got := namePattern.MatchString(s), isName(s); utf8.ValidString(s) && want != got {
			t.Fatalf("name %q: the pattern says %v, isName %v", s, want, got)
		}
	}
	for _, s := range []string{"", ".", "..", "a.", "a..", ".a", "-a", "a-", "a-b", "a.-b", "a.b-", "_", "a.b.c.", "a\n", "é"} {
		check(s)
	}
	for range 50000 {
		var b strings.Builder
		for n := rng.IntN(8); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		check(b.String())
	}
}

// TestParseIPIsNetParseIP: parseIP gives net.ParseIP's answer, and To4's.
func TestParseIPIsNetParseIP(t *testing.T) {
	for _, s := range []string{"", "10.0.0.1", "::1", "fe80::1", "fe80::1%eth0", "::ffff:10.0.0.1", "[::1]",
		"2001:DB8::1", "cafe", "face.cafe", "1.2.3", "1.2.3.4.5", "256.1.1.1", "example.com", "x.1.2.3", "1.2.3.4:80", " 1.2.3.4", "::ffff:0102:0304", "::1.2.3.4", "0.0.0.0", "01.2.3.4"} {
		want := net.ParseIP(s)
		if ok, ipv4 := parseIP(s); ok != (want != nil) || ipv4 != (want.To4() != nil) {
			t.Errorf("parseIP(%q) = %v, %v; net.ParseIP gives %v", s, ok, ipv4, want)
		}
	}
}
