package kongrouter

import (
	"fmt"
	"math/bits"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/kong/go-kong/kong"
)

// What Kong makes of a route's traditional fields (kong/router/transform.lua, compat.lua,
// expressions.lua): one ATC expression and one priority per route, which its ATC router then
// evaluates in order. Both router flavors konductor emits go through here: traditional_compatible
// for every route, expressions for routes without an expression.

// Flavor is a Kong router_flavor.
type Flavor string

const (
	TraditionalCompatible Flavor = "traditional_compatible"
	Expressions           Flavor = "expressions"
)

// isStreamRoute is transform.lua's is_stream_route: a route whose first protocol is a stream one.
func isStreamRoute(r *kong.Route) bool {
	if len(r.Protocols) == 0 || r.Protocols[0] == nil {
		return false
	}
	switch *r.Protocols[0] {
	case "tcp", "udp", "tls", "tls_passthrough":
		return true
	}
	return false
}

// escapeATCString is transform.lua's escape_str: a raw string unless s holds `"#`.
func escapeATCString(s string) string {
	if !strings.Contains(s, `"#`) {
		return `r#"` + s + `"#`
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`
}

// asciiLower is Lua's string.lower in the C locale: only A-Z change.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// headerField is the ATC field of a header name: lower-cased, "-" as "_" (replace_dashes_lower).
func headerField(name string) string {
	return "http.headers." + strings.ReplaceAll(asciiLower(name), "-", "_")
}

func strs(ps []*string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// orGroup is gen_for_field: "(v1 || v2 ...)", nil for no values.
func orGroup(values []string, predicate func(string) string) string {
	if len(values) == 0 {
		return ""
	}
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = predicate(v)
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

func sniPredicate(sni string) string {
	op := "=="
	switch {
	case strings.HasPrefix(sni, "*"):
		op = "=^"
	case strings.HasSuffix(sni, "*"):
		op = "^="
	}
	value := sni
	if op == "^=" {
		value = sni[:len(sni)-1]
	} else {
		// The last dot of a fully qualified name is not used for routing.
		if len(value) > 1 && strings.HasSuffix(value, ".") {
			value = value[:len(value)-1]
		}
		if op == "=^" {
			value = value[1:]
		}
	}
	return "tls.sni " + op + " " + escapeATCString(value)
}

// netsPredicate is gen_for_nets for sources (src) or destinations (dst).
func netsPredicate(side string, nets []*kong.CIDRPort) (string, error) {
	if len(nets) == 0 {
		return "", nil
	}
	parts := make([]string, 0, len(nets))
	for _, n := range nets {
		if n == nil || (n.IP == nil && n.Port == nil) {
			return "", fmt.Errorf("%ss elements must not be empty", side)
		}
		var ipExpr, portExpr string
		if n.IP != nil {
			addr, mask := parseIPAddr(*n.IP)
			if mask != "" {
				ipExpr = "net." + side + ".ip in " + addr + "/" + mask
			} else {
				ipExpr = "net." + side + ".ip == " + addr
			}
		}
		if n.Port != nil {
			portExpr = "net." + side + ".port == " + strconv.Itoa(*n.Port)
		}
		switch {
		case n.IP == nil:
			parts = append(parts, portExpr)
		case n.Port == nil:
			parts = append(parts, ipExpr)
		default:
			parts = append(parts, "("+ipExpr+" && "+portExpr+")")
		}
	}
	return "(" + strings.Join(parts, " || ") + ")", nil
}

// parseIPAddr is transform.lua's parse_ip_addr: an IPv4 CIDR has its host bits cleared; an IPv6
// one is left as written (Kong's FIXME).
func parseIPAddr(ip string) (string, string) {
	addr, mask, ok := strings.Cut(ip, "/")
	if !ok {
		return ip, ""
	}
	if a, err := netip.ParseAddr(addr); err == nil && a.Is4() {
		if bits, err := strconv.Atoi(mask); err == nil && bits >= 0 && bits <= 32 {
			if p, err := a.Prefix(bits); err == nil {
				return p.Addr().String(), mask
			}
		}
	}
	return addr, mask
}

func hostPredicate(h string) string {
	host, port, hasPort := splitHostPort(h)
	op := "=="
	switch {
	case strings.HasPrefix(host, "*"):
		op, host = "=^", host[1:]
	case strings.HasSuffix(host, "*"):
		op, host = "^=", host[:len(host)-1]
	}
	expr := "http.host " + op + ` r#"` + host + `"#`
	if hasPort {
		expr = "(" + expr + " && net.dst.port == " + strconv.Itoa(port) + ")"
	}
	return expr
}

func pathPredicate(p string) string {
	if strings.HasPrefix(p, "~") {
		// Anchored as the traditional router was; named groups in the Rust crate's form.
		return "http.path ~ " + escapeATCString("^"+strings.ReplaceAll(p[1:], "?<", "?P<"))
	}
	return "http.path ^= " + escapeATCString(p)
}

// headersPredicate joins one group per header name, in name order (Kong walks a Lua hash, in
// no fixed order; the meaning is the same).
func headersPredicate(headers map[string][]string) string {
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	var groups []string
	for _, name := range names {
		field := "any(lower(" + headerField(name) + "))"
		groups = append(groups, orGroup(headers[name], func(v string) string {
			op := "=="
			if strings.HasPrefix(v, "~*") {
				op, v = "~", v[2:]
			}
			return field + " " + op + " " + escapeATCString(asciiLower(v))
		}))
	}
	return strings.Join(groups, " && ")
}

// TraditionalExpression is transform.lua's get_expression: the route's expression field when it
// has one, else the expression Kong makes of its traditional fields (snis, sources,
// destinations, and for http routes methods, hosts, paths and headers). Paths are those of the
// route as given; the router splits a route's paths by length first.
func TraditionalExpression(r *kong.Route) (string, error) {
	if r.Expression != nil {
		return *r.Expression, nil
	}
	var and []string
	stream := isStreamRoute(r)
	if sni := orGroup(strs(r.SNIs), sniPredicate); sni != "" {
		protocol := "https"
		if stream {
			protocol = "tls"
		}
		// Kong #6425: SNIs only count for TLS connections.
		and = append(and, `(net.protocol != r#"`+protocol+`"# || `+sni+")")
	}
	for _, side := range []struct {
		name string
		nets []*kong.CIDRPort
	}{{"src", r.Sources}, {"dst", r.Destinations}} {
		g, err := netsPredicate(side.name, side.nets)
		if err != nil {
			return "", err
		}
		if g != "" {
			and = append(and, g)
		}
	}
	if !stream {
		for _, g := range []string{
			orGroup(strs(r.Methods), func(m string) string { return "http.method == " + escapeATCString(m) }),
			orGroup(strs(r.Hosts), hostPredicate),
			orGroup(strs(r.Paths), pathPredicate),
			headersPredicate(r.Headers),
		} {
			if g != "" {
				and = append(and, g)
			}
		}
	}
	return strings.Join(and, " && "), nil
}

// protocolOverride maps a route protocol to the net.protocol value the expressions router
// compares (expressions.lua's PROTOCOLS_OVERRIDE).
var protocolOverride = map[string]string{"tls_passthrough": "tcp", "grpc": "http", "grpcs": "https"}

// ExpressionsFlavorExpression is expressions.lua's get_expression: the route's expression (or
// the one made of its traditional fields), "net.port" read as "net.dst.port", and unless the
// route's only protocol is https, tls or tls_passthrough (left to the protocol checks after
// the match, so that Kong can redirect), "&& (net.protocol == ...)".
func ExpressionsFlavorExpression(r *kong.Route) (string, error) {
	exp, err := TraditionalExpression(r)
	if err != nil || exp == "" {
		return exp, err
	}
	exp = amendNetPort(exp)
	protocols := strs(r.Protocols)
	if len(protocols) == 1 && (protocols[0] == "https" || protocols[0] == "tls" || protocols[0] == "tls_passthrough") {
		return exp, nil
	}
	if g := orGroup(protocols, func(p string) string {
		if o, ok := protocolOverride[p]; ok {
			p = o
		}
		return "net.protocol == " + escapeATCString(p)
	}); g != "" {
		exp += " && " + g
	}
	return exp, nil
}

// amendNetPort is amending_expression's rewrite of the deprecated field "net.port" (followed by
// spaces and a comparison) into "net.dst.port".
func amendNetPort(exp string) string {
	if !strings.Contains(exp, "net.port") {
		return exp
	}
	var b strings.Builder
	for {
		i := strings.Index(exp, "net.port")
		if i < 0 {
			b.WriteString(exp)
			return b.String()
		}
		rest := exp[i+len("net.port"):]
		j := 0
		for j < len(rest) && strings.IndexByte(" \t\r\n\f\v", rest[j]) >= 0 {
			j++
		}
		if j < len(rest) && strings.IndexByte("=><!", rest[j]) >= 0 {
			b.WriteString(exp[:i] + "net.dst.port")
		} else {
			b.WriteString(exp[:i] + "net.port")
		}
		exp = rest
	}
}

// Priority bits of transform.lua's get_priority.
const (
	expressionOnlyBits uint64 = 0xFF << 56
	plainHostOnlyBit   uint64 = 1 << 60
	regexURLBit        uint64 = 1 << 51
	streamSNIBit       uint64 = 1 << 61
	maxHeaderCount            = 255
)

// Priority is transform.lua's get_priority as Kong computes it: the route's priority field
// above every traditional route for a route with an expression; for a stream route its SNI,
// source and destination bits; for an http route the match weight (one for each of sources,
// destinations, methods, hosts, headers, snis, paths), whether every host is plain, the header
// count, whether its paths are regexes, its regex_priority and its path length.
//
// Kong's own arithmetic decides, not the layout its comment draws. Since Kong 3.0
// (a3d523b4be, "reuse FFI uint64 cdata objects") lshift_uint64 rebinds its local variable
// instead of storing into the uint64 cdata, so LuaJIT shifts the weight, the header count and
// the regex priority as 32-bit numbers, the count masked to 5 bits: the weight lands at bits
// 29-31, the header count at bits 20-27, the regex priority at bit 19 up (so a regex_priority
// of 2 weighs as much as one header, and larger ones spill into the weight), the length in bits
// 0-18. The 32-bit result is sign-extended into 64 bits when a 64-bit bit (plain hosts, regex
// paths) joins it and when it is passed to the router as a uintptr_t, so a weight of 4 or more
// (bit 31) sets every bit above 31: such a route outranks every route of a smaller weight, and
// the plain-host and regex bits (60, 51) decide only between routes of weight 3 or less, where
// they outrank the weight itself.
func Priority(r *kong.Route) uint64 {
	if r.Expression == nil && isStreamRoute(r) {
		return streamPriority(r)
	}
	return PriorityPartsOf(r).Priority()
}

// PriorityParts are what an http route's priority is made of (get_priority's inputs), for
// saying which part decided between two routes (explain).
type PriorityParts struct {
	// Expression: a route with an expression, whose priority is its own (ExpressionPriority)
	// above every traditional route.
	Expression         bool
	ExpressionPriority uint64
	// Fields are the fields the route matches on that count in its weight, in get_priority's
	// order (sources, destinations, methods, hosts, headers, snis, paths).
	Fields         []string
	PlainHostsOnly bool
	Headers        int
	RegexPaths     bool
	RegexPriority  int
	PathLength     int
}

// PriorityPartsOf reads an http route's priority parts (a route with an expression has only
// its own priority).
func PriorityPartsOf(r *kong.Route) PriorityParts {
	if r.Expression != nil {
		p := PriorityParts{Expression: true}
		if r.Priority != nil {
			p.ExpressionPriority = *r.Priority
		}
		return p
	}
	var p PriorityParts
	for _, f := range []struct {
		name    string
		present bool
	}{
		{"sources", len(r.Sources) > 0}, {"destinations", len(r.Destinations) > 0}, {"methods", len(r.Methods) > 0},
		{"hosts", len(r.Hosts) > 0}, {"headers", len(r.Headers) > 0}, {"snis", len(r.SNIs) > 0}, {"paths", len(r.Paths) > 0},
	} {
		if f.present {
			p.Fields = append(p.Fields, f.name)
		}
	}
	p.Headers = min(len(r.Headers), maxHeaderCount)
	// type(hosts) == "table": a route without hosts is not "plain hosts only".
	p.PlainHostsOnly = r.Hosts != nil
	for _, h := range strs(r.Hosts) {
		if strings.Contains(h, "*") {
			p.PlainHostsOnly = false
			break
		}
	}
	if paths := strs(r.Paths); len(paths) > 0 {
		if strings.HasPrefix(paths[0], "~") {
			p.RegexPaths = true
		} else {
			p.PathLength = len(paths[0])
		}
	}
	if p.RegexPaths && r.RegexPriority != nil {
		p.RegexPriority = *r.RegexPriority
	}
	return p
}

// Priority is the priority Kong computes from the parts.
func (p PriorityParts) Priority() uint64 {
	if p.Expression {
		return expressionOnlyBits | p.ExpressionPriority
	}
	low := lshift32(len(p.Fields), 61) | lshift32(p.Headers, 52) | lshift32(p.RegexPriority, 19) | int32(p.PathLength&0x7FFFF)
	priority := uint64(int64(low)) // sign-extended, as LuaJIT widens a number
	if p.PlainHostsOnly {
		priority |= plainHostOnlyBit
	}
	if p.RegexPaths {
		priority |= regexURLBit
	}
	return priority
}

// Priority parts, as Decider names them.
const (
	PartExpression    = "expression priority"
	PartWeight        = "fields matched on"
	PartPlainHosts    = "plain hosts only"
	PartRegexPaths    = "regex paths"
	PartHeaders       = "header count"
	PartRegexPriority = "regex_priority"
	PartPathLength    = "path length"
	PartNone          = "" // equal priorities: the greater id is evaluated first
)

// Decider names the part of the priorities of a and b (of traditional routes, or both with an
// expression) that orders them: the highest bit where Kong's priorities differ, read back to the
// part that set it (the weight reaches bits 29-31 and, from 4 fields, every bit above 31; the
// header count bits 20-27; regex_priority bit 19 up, overlapping them).
func Decider(a, b PriorityParts) string {
	pa, pb := a.Priority(), b.Priority()
	if pa == pb {
		return PartNone
	}
	if a.Expression || b.Expression {
		return PartExpression
	}
	switch bit := 63 - bits.LeadingZeros64(pa^pb); {
	case bit == 60:
		return PartPlainHosts
	case bit == 51:
		return PartRegexPaths
	case bit >= 29:
		return PartWeight
	case bit >= 19 && a.Headers != b.Headers:
		return PartHeaders
	case bit >= 19:
		return PartRegexPriority
	default:
		return PartPathLength
	}
}

// lshift32 is LuaJIT's bit.lshift on a plain number: 32-bit, the shift count masked to 5 bits.
func lshift32(v, n int) int32 {
	return int32(uint32(int32(v)) << (uint(n) & 31))
}

// streamPriority is stream_get_priority (all 64-bit: every operand there is cdata).
func streamPriority(r *kong.Route) uint64 {
	var weight uint64
	if len(r.SNIs) > 0 || (len(r.Sources) > 0 && len(r.Destinations) > 0) {
		weight = streamSNIBit
	}
	ipWeight := func(nets []*kong.CIDRPort) uint64 {
		var w uint64
		for _, n := range nets {
			if n == nil {
				continue
			}
			if n.IP != nil {
				if strings.Contains(*n.IP, "/") {
					w |= 1 // CIDR
				} else {
					w |= 1 << 3 // IP
				}
			}
			if n.Port != nil {
				w |= 1 << 2
			}
		}
		return w
	}
	return weight | ipWeight(r.Sources)<<4 | ipWeight(r.Destinations)
}
