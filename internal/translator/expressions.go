package translator

import (
	"fmt"
	"iter"
	"sort"
	"strings"

	"github.com/kong/go-kong/kong"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongrules"
)

// Priorities of KIC's expression routes (translation-rules.md §13).
const (
	expressionPriorityBase = uint64(3) << 44
)

// matcher is a node of a router expression, rendered as KIC's ATC builder renders it: a
// group of several members puts each in parentheses, joined by " || " or " && "; a group of
// one is that member.
type matcher struct {
	op      string // "||", "&&" or "!" (of its one member); "" for a predicate
	pred    string
	regex   string // the pattern of a "~" predicate
	members []*matcher
}

func predicate(field, op, value string) *matcher {
	m := &matcher{pred: field + " " + op + " " + atcQuote(value)}
	if op == "~" {
		m.regex = value
	}
	return m
}

// atcQuote is value as a string literal of Kong's expression grammar (atc-router's
// atc_grammar.pest): the only escapes are \" \\ \n \r and \t, and every other character
// stands for itself. strconv.Quote's \u2028, \a or \x00 are refused by the grammar, so one
// tenant's header value made Kong refuse the whole configuration (issue #44).
func atcQuote(value string) string {
	var b strings.Builder
	b.Grow(len(value) + 2)
	b.WriteByte('"')
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// refused says why Kong's expressions router would refuse the route of m's expression, ""
// when it accepts it: first a regex the Rust regex crate refuses (the pattern named, as the
// traditional router's check names PCRE's), then anything else the router refuses (Kong's
// message). A route so refused would make a DB-less gateway refuse the whole configuration.
func (m *matcher) refused() string {
	var bad string
	var walk func(*matcher)
	walk = func(m *matcher) {
		if bad != "" {
			return
		}
		if m.regex != "" {
			if e := kongrules.RustRegexError(m.regex); e != "" {
				bad = fmt.Sprintf("invalid regex %q (Kong's expressions router, Rust's regex syntax): %s", m.regex, e)
				return
			}
		}
		for _, c := range m.members {
			walk(c)
		}
	}
	walk(m)
	if bad != "" {
		return bad
	}
	if e := kongrules.Expression(m.expression(), false); e != "" {
		return "Kong's expressions router refuses the expression: " + e
	}
	return ""
}

func group(op string, ms ...*matcher) *matcher {
	out := &matcher{op: op}
	for _, m := range ms {
		if m != nil {
			out.members = append(out.members, m)
		}
	}
	if len(out.members) == 0 {
		return nil
	}
	return out
}

// not is the negation of m (nil for none).
func not(m *matcher) *matcher {
	if m == nil {
		return nil
	}
	return &matcher{op: "!", members: []*matcher{m}}
}

func (m *matcher) expression() string {
	if m.op == "" {
		return m.pred
	}
	if m.op == "!" {
		return "!(" + m.members[0].expression() + ")"
	}
	if len(m.members) == 1 {
		return m.members[0].expression()
	}
	parts := make([]string, len(m.members))
	for i, x := range m.members {
		parts[i] = "(" + x.expression() + ")"
	}
	return strings.Join(parts, " "+m.op+" ")
}

// expressionRoutes rewrites every Ingress route for the expressions router (translation-rules.md
// §13): the same services, names and IDs; no paths, hosts, regex_priority, path_handling,
// methods, headers or snis, but an expression and a priority. The default backend's route
// matches every path at priority 0. Routes of TCPIngresses and UDPIngresses (r.ing nil) got
// KIC's stream expression when they were made (kong_streamexpressions.go).
func (b *builder) expressionRoutes() {
	for _, n := range b.kongServiceNames() {
		for _, r := range b.kongServices[n].routes {
			if r.ing == nil {
				continue
			}
			var expr string
			var priority uint64
			if r.defaultBackend {
				expr = predicate("http.path", "^=", "/").expression()
			} else {
				expr, priority = routeExpression(r)
			}
			r.Expression = kong.String(expr)
			r.Priority = kong.Uint64(priority)
			r.Paths, r.Hosts, r.Methods, r.Headers, r.SNIs = nil, nil, nil, nil, nil
			r.RegexPriority, r.PathHandling = nil, nil
		}
	}
}

// headerMatchers are the route's header matches (but Host), by name: an OR of each name's
// values, a "~*" value a regex.
func headerMatchers(headers map[string][]string) []*matcher {
	var names []string
	for name := range headers {
		if !strings.EqualFold(name, "host") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []*matcher
	for _, name := range names {
		field := "http.headers." + strings.ReplaceAll(strings.ToLower(name), "-", "_")
		var values []*matcher
		for _, v := range headers[name] {
			if rest, ok := strings.CutPrefix(v, "~*"); ok {
				values = append(values, predicate(field, "~", rest))
			} else {
				values = append(values, predicate(field, "==", v))
			}
		}
		out = append(out, group("||", values...))
	}
	return out
}

// routeExpression is the AND of the route's hosts, paths, headers, methods and SNIs, each an
// OR of its values, and KIC's priority:
// 3<<44 | matchFields<<41 | headerCount<<33 | plainHostOnly<<32 | hasRegexPath<<16 | maxPathLen.
func routeExpression(r *routeEntry) (string, uint64) {
	var hosts, paths, methods, snis []*matcher
	plainHostOnly := len(r.Hosts) > 0
	for _, h := range r.Hosts {
		if h == nil {
			continue
		}
		if strings.HasPrefix(*h, "*") {
			plainHostOnly = false
			hosts = append(hosts, predicate("http.host", "=^", strings.TrimPrefix(*h, "*")))
		} else {
			hosts = append(hosts, predicate("http.host", "==", *h))
		}
	}
	hasRegex, maxLen := false, 0
	for _, sp := range r.sources {
		m, regex, length := pathMatcher(sp)
		paths = append(paths, m)
		hasRegex = hasRegex || regex
		maxLen = max(maxLen, length)
	}
	headers := headerMatchers(r.Headers)
	for _, m := range r.Methods {
		methods = append(methods, predicate("http.method", "==", *m))
	}
	for _, s := range r.SNIs {
		snis = append(snis, predicate("tls.sni", "==", *s))
	}
	groups := []*matcher{group("||", hosts...), group("||", paths...), group("&&", headers...), group("||", methods...), group("||", snis...)}
	fields := uint64(0)
	for _, g := range groups {
		if g != nil {
			fields++
		}
	}
	root := group("&&", groups...)
	if root == nil {
		return "", 0
	}
	priority := expressionPriorityBase | fields<<41 | uint64(len(headers))<<33 | uint64(maxLen)
	if plainHostOnly {
		priority |= 1 << 32
	}
	if hasRegex {
		priority |= 1 << 16
	}
	return root.expression(), priority
}

// pathMatcher is KIC's matcher of one Ingress path, whether it counts as a regex path for
// the priority, and its length for the priority.
func pathMatcher(sp sourcePath) (*matcher, bool, int) {
	p := sp.path
	switch sp.pathType {
	case netv1.PathTypePrefix:
		base := strings.Trim(p, "/")
		if base == "" {
			return predicate("http.path", "^=", "/"), true, 1
		}
		return group("||", predicate("http.path", "==", "/"+base), predicate("http.path", "^=", "/"+base+"/")), true, 2 + len(base)
	case netv1.PathTypeExact:
		relative := strings.TrimLeft(p, "/")
		return predicate("http.path", "==", "/"+relative), true, 1 + len(relative)
	default:
		if sp.regexPrefix != "" && strings.HasPrefix(p, sp.regexPrefix) {
			regex := strings.TrimPrefix(p, sp.regexPrefix)
			if !strings.HasPrefix(regex, "^") {
				regex = "^" + regex
			}
			return predicate("http.path", "~", regex), true, len(regex)
		}
		return predicate("http.path", "^=", p), false, len(p)
	}
}

// sharePriorities records that the routes of kind gvk whose matches are split (each may
// repeat) have priorities ordered against each other's (KIC's assignPriorities across all
// routes of a kind): each reads and makes their shared value, when there are two or more.
func (b *builder) sharePriorities(gvk schema.GroupVersionKind, routes iter.Seq[client.Object]) {
	var distinct []client.Object
	seen := map[client.Object]bool{}
	for r := range routes {
		if !seen[r] {
			seen[r] = true
			distinct = append(distinct, r)
		}
	}
	if len(distinct) < 2 {
		return
	}
	for _, r := range distinct {
		b.share(gvk.Kind+" priorities", r, gvk)
	}
}
