package translator

import (
	"fmt"
	"strings"

	"github.com/konductor/konductor/internal/kongrules"
)

// Kong's validation rules for the values the translator passes on from users
// (kong-admin-api.md §3, read from Kong's schemas; the rules live in kongrules, shared with
// the emulator). KIC does not check them, so one bad value makes Kong reject the whole
// configuration; konductor checks them here and leaves out only the offending piece. The
// functions below word the reason for a Problem, naming the value.

// checkRoutePath returns why Kong would reject p as a route path, or "".
func checkRoutePath(p string) string {
	return pathProblem(p, kongrules.RoutePath(p))
}

// routePath is checkRoutePath (which checks a regex path's PCRE syntax) with a regex path
// ("~...") also checked as pathRegex checks it after PCRE.
func (b *builder) routePath(p string) string {
	if e := checkRoutePath(p); e != "" {
		return e
	}
	if re, ok := strings.CutPrefix(p, "~"); ok {
		if e := b.compiledRegex(rustPathPattern(re)); e != "" {
			return fmt.Sprintf("invalid regex %q: %s", p, e)
		}
	}
	return ""
}

// checkServicePath is Kong's rule for a service path: a plain path, no empty segments.
func checkServicePath(p string) string {
	return pathProblem(p, kongrules.ServicePath(p))
}

func pathProblem(p string, f kongrules.Fault) string {
	switch f.Rule {
	case kongrules.Valid:
		return ""
	case kongrules.PathRegex:
		return fmt.Sprintf("invalid regex %q: %s", p, f.Detail)
	case kongrules.PathChars:
		return fmt.Sprintf("invalid path %q: characters outside of the reserved list of RFC 3986 found", p)
	case kongrules.PathEscape:
		return fmt.Sprintf("invalid url-encoded value in path %q", p)
	default: // PathStart, PathEmptySegment
		return fmt.Sprintf("path %q %s", p, f.Msg)
	}
}

// checkPCRE reports why PCRE would refuse pattern, or "".
func checkPCRE(pattern string) string { return kongrules.PCRE(pattern) }

// pathRegex is the check of a traditional route's regex path (without its "~"): PCRE's
// syntax, and with Options.RustRegexes the Rust regex crate's on the pattern Kong's
// traditional_compatible router makes of it ("^" prepended, "(?<" as "(?P<").
func (b *builder) pathRegex(pattern string) string {
	return b.regex(pattern, rustPathPattern(pattern))
}

// headerRegex is pathRegex for a header regex (without its "~*"), which the
// traditional_compatible router lowercases before it compiles it.
func (b *builder) headerRegex(pattern string) string {
	return b.regex(pattern, strings.ToLower(pattern))
}

// rustPathPattern is the pattern Kong's traditional_compatible router compiles of a regex path.
func rustPathPattern(pattern string) string { return "^" + strings.ReplaceAll(pattern, "?<", "?P<") }

// regex checks pattern with PCRE and, when a gateway compiles regexes with Rust's crate, its
// compiled form with Rust's syntax.
func (b *builder) regex(pattern, compiled string) string {
	if e := checkPCRE(pattern); e != "" {
		return e
	}
	return b.compiledRegex(compiled)
}

// compiledRegex checks compiled, the form a gateway compiles of a pattern PCRE takes, with
// Rust's syntax when a gateway compiles regexes with Rust's crate; otherwise it notes Rust's
// verdict (noteRustVerdict).
func (b *builder) compiledRegex(compiled string) string {
	if !b.rustRegexes() {
		b.noteRustVerdict(compiled)
		return ""
	}
	if e := kongrules.RustRegexError(compiled); e != "" {
		if !b.opts.ExpressionRoutes {
			b.readRustRegexes = true
		}
		return rustCompatible + e
	}
	return ""
}

// noteRustVerdict notes, with Rust's syntax off, whether Rust would refuse compiled: the
// result then depends on Options.RustRegexes (a router flavor learnt later translates it
// again). RustRegexError answers a pattern without regex constructs ("^/healthz$") at once.
func (b *builder) noteRustVerdict(compiled string) {
	if !b.readRustRegexes && kongrules.RustRegexError(compiled) != "" {
		b.readRustRegexes = true
	}
}

// rustRegexes: a gateway compiles regexes with the Rust regex crate (Options.RustRegexes, or
// the expressions router, which always does).
func (b *builder) rustRegexes() bool { return b.opts.RustRegexes || b.opts.ExpressionRoutes }

const rustCompatible = "Kong's router compiles it with Rust's regex syntax: "

// noRegexCheck accepts every pattern: for the expressions router, whose regexes are checked
// in the expression (matcher.refused).
func noRegexCheck(string) string { return "" }

// hostKind classifies s as "name", "ipv4" or "ipv6" and reports whether it has a port and
// whether it is valid at all.
func hostKind(s string) (kind string, hasPort, ok bool) {
	_, port, kind, ok := kongrules.SplitHostPort(s)
	if !ok {
		return "", false, false
	}
	return kind, port >= 0, true
}

// checkWildcardHost is Kong's rule for route hosts (allowPort) and SNI names: at most one
// wildcard, leftmost or rightmost.
func checkWildcardHost(s string, allowPort bool) string {
	return hostProblem(s, kongrules.WildcardHost(s, allowPort))
}

// checkSNI is Kong's rule for SNI names: a wildcard host without port, not an IP address.
func checkSNI(s string) string {
	f := kongrules.SNI(s)
	if f.Rule == kongrules.HostIsIP {
		return fmt.Sprintf("invalid SNI %q: must not be an IP address", s)
	}
	return hostProblem(s, f)
}

func hostProblem(s string, f kongrules.Fault) string {
	switch f.Rule {
	case kongrules.Valid:
		return ""
	case kongrules.WildcardCount:
		return fmt.Sprintf("invalid host %q: must have at most one wildcard", s)
	case kongrules.WildcardPlace:
		return fmt.Sprintf("invalid host %q: wildcard must be placed at leftmost or rightmost label", s)
	case kongrules.HostHasPort:
		return fmt.Sprintf("invalid host %q: must not have a port", s)
	default: // HostBadPort, HostInvalid
		return fmt.Sprintf("invalid host %q", s)
	}
}

// checkServiceHost is konductor's rule for a service host and an upstream name: a hostname
// without port (Kong would also take an IP address as a service host; the translator only
// ever makes hostnames).
func checkServiceHost(s string) string {
	k, hasPort, ok := hostKind(s)
	if !ok || hasPort || k != "name" {
		return fmt.Sprintf("invalid host %q: must be a hostname without port", s)
	}
	return ""
}

// checkName is Kong's rule for service and route names.
func checkName(s string) string {
	if kongrules.Name(s) != "" {
		return fmt.Sprintf("invalid name %q: allowed characters are A-Z, a-z, 0-9, '.', '-', '_' and '~'", s)
	}
	return ""
}

// checkHeaderName is Kong's rule for route header names; "host" belongs in hosts.
func checkHeaderName(s string) string {
	if kongrules.IsHostHeader(s) {
		return "route headers cannot contain the 'host' header"
	}
	if kongrules.HeaderName(s) != "" {
		return fmt.Sprintf("bad header name %q, allowed characters are A-Z, a-z, 0-9, '_', and '-'", s)
	}
	return ""
}

// checkTag is Kong's rule for tags: printable, without ',' and '/'.
func checkTag(s string) string {
	if s == "" {
		return "empty tag"
	}
	if kongrules.Tag(s) != "" {
		return fmt.Sprintf("invalid tag %q: expected printable ascii (except `,` and `/`) or valid utf-8 sequences", s)
	}
	return ""
}
