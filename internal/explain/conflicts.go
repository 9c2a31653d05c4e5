package explain

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongrules"
)

// Conflicts are the overlaps an operator wants to see across a whole configuration.
type Conflicts struct {
	// Shadowed are routes that can never win: every request they could match is taken by a
	// route Kong evaluates before them.
	Shadowed []Shadowed `json:"shadowed,omitempty"`
	// SharedHosts are hosts that routes of several namespaces serve.
	SharedHosts []SharedHost `json:"sharedHosts,omitempty"`
	// Unchecked are routes whose matching is not compared (an expression other than an AND of
	// one field's values each, regex paths without a literal start, sources and destinations):
	// none of them is listed as shadowed.
	Unchecked int `json:"unchecked,omitempty"`
}

// Shadowed is a route that can never win, with the routes that take its requests.
type Shadowed struct {
	Route Route   `json:"route"`
	By    []Route `json:"by"`
}

// SharedHost is a host routes of several namespaces serve.
type SharedHost struct {
	Host       string   `json:"host"`
	Namespaces []string `json:"namespaces"`
	Routes     []Route  `json:"routes"`
}

// Conflicts lists the routes that can never win and the hosts shared across namespaces.
//
// A matcher (a route, or the part of it Kong split by path length) is shadowed when a matcher
// of another route that Kong evaluates before it takes every request it could match: its
// hosts, methods, headers, SNIs and protocols are no narrower, and each of its paths takes
// every path the other's takes (a prefix of a prefix, a prefix of a regex's literal start, the
// same regex). A route is listed when all its matchers are. An expression route is compared by
// the fields its expression tests (traditionalOf); one that cannot be read is counted in
// Unchecked.
func (e *Explainer) Conflicts() *Conflicts {
	out := &Conflicts{}
	ms := e.gw.HTTPRouter().Matchers()
	shadowedBy := map[string][]*kong.Route{} // route id -> the routes shadowing its matchers
	parts := map[string]int{}                // route id -> matchers
	shadowedParts := map[string]int{}
	unchecked := map[string]bool{}
	// Each matcher as traditional fields (an expression route's read from its expression);
	// nil for one that cannot be compared.
	fields := make([]*kong.Route, len(ms))
	excludes := make([]bool, len(ms)) // takes less than its fields: covers nothing
	for i, m := range ms {
		if r, ex, ok := traditionalOfExcluding(matcherRoute(m)); ok && comparable(r) {
			fields[i], excludes[i] = r, ex
		}
	}
	// Only a matcher that may take b's host can cover b: one without hosts, with a wildcard,
	// or with one of b's hosts; the index keeps the comparisons near linear.
	var anyHost []int
	byHost := map[string][]int{}
	for i, r := range fields {
		if r == nil {
			continue
		}
		hosts := strs(r.Hosts)
		if len(hosts) == 0 || slices.ContainsFunc(hosts, func(h string) bool { return strings.Contains(h, "*") }) {
			anyHost = append(anyHost, i)
			continue
		}
		for _, h := range hosts {
			byHost[strings.ToLower(h)] = append(byHost[strings.ToLower(h)], i)
		}
	}
	for i, b := range ms {
		id := deref(b.Route.ID)
		parts[id]++
		rb := fields[i]
		if rb == nil {
			unchecked[id] = true
			continue
		}
		cands := append([]int(nil), anyHost...)
		for _, h := range strs(rb.Hosts) {
			cands = append(cands, byHost[strings.ToLower(h)]...)
		}
		sort.Ints(cands) // Kong's evaluation order
		for _, j := range cands {
			if j >= i {
				break
			}
			a := ms[j]
			if a.Route == b.Route || excludes[j] || !covers(fields[j], rb) {
				continue
			}
			shadowedParts[id]++
			if !slices.Contains(shadowedBy[id], a.Route) {
				shadowedBy[id] = append(shadowedBy[id], a.Route)
			}
			break
		}
	}
	out.Unchecked = len(unchecked)
	seen := map[string]bool{}
	for _, m := range ms {
		id := deref(m.Route.ID)
		if seen[id] || shadowedParts[id] == 0 || shadowedParts[id] != parts[id] {
			continue
		}
		seen[id] = true
		s := Shadowed{Route: *e.route(m, "", nil)}
		for _, by := range shadowedBy[id] {
			s.By = append(s.By, e.briefRoute(by))
		}
		out.Shadowed = append(out.Shadowed, s)
	}
	out.SharedHosts = e.sharedHosts()
	return out
}

// briefRoute is a route named with its fields and source, for lists.
func (e *Explainer) briefRoute(r *kong.Route) Route {
	return Route{Name: deref(r.Name), ID: deref(r.ID), Hosts: strs(r.Hosts), Paths: strs(r.Paths), Methods: strs(r.Methods),
		Headers: r.Headers, Expression: deref(r.Expression), Source: e.sources.of(r.Tags)}
}

// comparable: a route whose matching covers compares (traditional fields, no sources or
// destinations, regex paths only with a literal start).
func comparable(r *kong.Route) bool {
	if r.Expression != nil || len(r.Sources) > 0 || len(r.Destinations) > 0 {
		return false
	}
	for _, p := range strs(r.Paths) {
		if strings.HasPrefix(p, "~") {
			if _, ok := regexLiteralPrefix(p[1:]); !ok {
				return false
			}
		}
	}
	return true
}

// covers reports whether route a takes every request route b could take.
func covers(a, b *kong.Route) bool {
	return coversHosts(strs(a.Hosts), strs(b.Hosts)) && subset(strs(b.Methods), strs(a.Methods)) &&
		subset(strs(b.SNIs), strs(a.SNIs)) && subset(strs(b.Protocols), strs(a.Protocols)) &&
		coversHeaders(a.Headers, b.Headers) && coversPaths(strs(a.Paths), strs(b.Paths))
}

// subset: every value b takes, a takes (a without values takes every value).
func subset(b, a []string) bool { return allTaken(b, a, strings.EqualFold) }

func coversHosts(a, b []string) bool { return allTaken(b, a, hostCovers) }

// allTaken: a takes every value of b, each by one of its own that takes it (a without values
// takes every value, b without values is taken only by such an a).
func allTaken(b, a []string, takes func(a, b string) bool) bool {
	if len(a) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y string) bool { return takes(y, x) }) {
			return false
		}
	}
	return true
}

// hostCovers: host pattern a takes every host pattern b takes (Kong's leading and trailing
// wildcards match one label or more).
func hostCovers(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	switch {
	case a == b:
		return true
	case strings.HasPrefix(a, "*."):
		return strings.HasSuffix(strings.TrimPrefix(b, "*"), a[1:]) && strings.TrimPrefix(b, "*") != a[1:]
	case strings.HasSuffix(a, ".*"):
		return strings.HasPrefix(strings.TrimSuffix(b, "*"), a[:len(a)-1]) && strings.TrimSuffix(b, "*") != a[:len(a)-1]
	}
	return false
}

// coversHeaders: every header a requires, b requires too, with values a takes.
func coversHeaders(a, b map[string][]string) bool {
	for name, av := range a {
		var bv []string
		for k, v := range b {
			if strings.EqualFold(k, name) {
				bv = v
			}
		}
		// A regex value ("~*...") is compared as a string: only the same regex takes it.
		if bv == nil || !subset(bv, av) {
			return false
		}
	}
	return true
}

func coversPaths(a, b []string) bool {
	if len(a) > 0 && len(b) == 0 {
		// b takes every path: only a's "/" does too.
		return slices.Contains(a, "/")
	}
	return allTaken(b, a, pathCovers)
}

// pathCovers: Kong path a takes every request path b takes. A prefix takes what starts with
// it; a regex (anchored at the start by Kong) only itself, or what a prefix of its literal
// start takes.
func pathCovers(a, b string) bool {
	if a == b {
		return true
	}
	if strings.HasPrefix(a, "~") {
		return false
	}
	if strings.HasPrefix(b, "~") {
		lit, _ := regexLiteralPrefix(b[1:])
		return strings.HasPrefix(lit, a)
	}
	return strings.HasPrefix(b, a)
}

// regexLiteralPrefix is the literal text every match of regex starts with (Kong anchors a
// path regex at the start), up to its first metacharacter; ok is false when the regex has an
// alternation or no literal start, so that nothing is claimed of it.
func regexLiteralPrefix(regex string) (string, bool) {
	regex = strings.TrimPrefix(regex, "^")
	if strings.Contains(regex, "|") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(regex); i++ {
		c := regex[i]
		if strings.IndexByte(`\.+*?()[]{}$^`, c) >= 0 {
			// A quantifier makes the character before it optional.
			if (c == '?' || c == '*' || c == '{') && b.Len() > 0 {
				s := b.String()
				b.Reset()
				b.WriteString(s[:len(s)-1])
			}
			break
		}
		b.WriteByte(c)
	}
	return b.String(), b.Len() > 0
}

// routeHosts are a route's hosts, its expression's when it has one (the hosts it tests for,
// not those it excludes).
func routeHosts(r *kong.Route) []string {
	if t, ok := traditionalOf(r); ok {
		return strs(t.Hosts)
	}
	return nil
}

// traditionalOf is a route as traditional fields: itself, or for a route with an expression
// the fields its expression tests, when it is an AND of parts that each test one field (an OR
// of values, as KIC renders them): http.host (==, =^ ".x" as "*.x", ^= "x." as "x.*"),
// http.path (^= a prefix, == an exact path, ~ a regex anchored with ^), http.method,
// http.headers.* (== a value, any other test kept as its text: only the same one covers it)
// and tls.sni. Any other expression is not read (ok false).
func traditionalOf(r *kong.Route) (*kong.Route, bool) {
	t, _, ok := traditionalOfExcluding(r)
	return t, ok
}

// traditionalOfExcluding is traditionalOf, with the conjuncts that exclude (a NOT, as KIC's
// listener isolation excludes the hosts of more specific listeners) left out of the fields and
// reported: the fields then take more than the route, so such a route may be said to be
// covered (by a route that takes even more) but never to cover another.
func traditionalOfExcluding(r *kong.Route) (*kong.Route, bool, bool) {
	if r.Expression == nil {
		return r, false, true
	}
	root, perr := kongrules.ParseExpression(*r.Expression, false)
	if perr != "" {
		return nil, false, false
	}
	out := &kong.Route{Name: r.Name, ID: r.ID, Tags: r.Tags}
	var conjuncts []*kongrules.ATCNode
	var and func(n *kongrules.ATCNode)
	and = func(n *kongrules.ATCNode) {
		if n.Op == kongrules.ATCAnd {
			and(n.Left)
			and(n.Right)
			return
		}
		conjuncts = append(conjuncts, n)
	}
	and(root)
	seen := map[string]bool{}
	excludes := false
	for _, c := range conjuncts {
		if c.Op == kongrules.ATCNot {
			excludes = true
			continue
		}
		var preds []*kongrules.ATCPredicate
		var or func(n *kongrules.ATCNode) bool
		or = func(n *kongrules.ATCNode) bool {
			switch n.Op {
			case kongrules.ATCOr:
				return or(n.Left) && or(n.Right)
			case kongrules.ATCPredicateNode:
				preds = append(preds, n.Predicate)
				return true
			}
			return false
		}
		if !or(c) {
			return nil, false, false
		}
		field := preds[0].Field
		if seen[field] {
			return nil, false, false // two tests of one field: an intersection, not fields' values
		}
		seen[field] = true
		for _, p := range preds {
			if p.Field != field || p.Value.Type != kongrules.ATCString || !addExpressionValue(out, p) {
				return nil, false, false
			}
		}
	}
	return out, excludes, true
}

// addExpressionValue adds predicate p's value to the traditional field it tests.
func addExpressionValue(r *kong.Route, p *kongrules.ATCPredicate) bool {
	v := p.Value.Str
	switch {
	case p.Field == "http.host" && len(p.Transforms) == 0:
		switch {
		case p.Op == "==":
			r.Hosts = append(r.Hosts, kong.String(v))
		case p.Op == "=^" && strings.HasPrefix(v, "."):
			r.Hosts = append(r.Hosts, kong.String("*"+v))
		case p.Op == "^=" && strings.HasSuffix(v, "."):
			r.Hosts = append(r.Hosts, kong.String(v+"*"))
		default:
			return false
		}
	case p.Field == "http.path" && len(p.Transforms) == 0:
		switch {
		case p.Op == "^=":
			r.Paths = append(r.Paths, kong.String(v))
		case p.Op == "==":
			r.Paths = append(r.Paths, kong.String("~"+regexp.QuoteMeta(v)+"$"))
		case p.Op == "~" && strings.HasPrefix(v, "^"):
			r.Paths = append(r.Paths, kong.String("~"+v[1:]))
		default:
			return false
		}
	case p.Field == "http.method" && p.Op == "==" && len(p.Transforms) == 0:
		r.Methods = append(r.Methods, kong.String(v))
	case strings.HasPrefix(p.Field, "http.headers."):
		if r.Headers == nil {
			r.Headers = map[string][]string{}
		}
		name := strings.TrimPrefix(p.Field, "http.headers.")
		value := v
		if p.Op != "==" || len(p.Transforms) > 0 {
			value = strings.Join(p.Transforms, ",") + p.Op + v // only the same test covers it
		}
		r.Headers[name] = append(r.Headers[name], value)
	case p.Field == "tls.sni" && p.Op == "==" && len(p.Transforms) == 0:
		r.SNIs = append(r.SNIs, kong.String(v))
	default:
		return false
	}
	return true
}

// sharedHosts are the hosts whose routes come from objects of several namespaces.
func (e *Explainer) sharedHosts() []SharedHost {
	type entry struct {
		ns     map[string]bool
		routes []*kong.Route
	}
	byHost := map[string]*entry{}
	seen := map[*kong.Route]bool{}
	for _, m := range e.gw.HTTPRouter().Matchers() {
		r := m.Route
		if seen[r] {
			continue
		}
		seen[r] = true
		src := e.sources.of(r.Tags)
		if src == nil || src.Namespace == "" {
			continue
		}
		for _, h := range routeHosts(r) {
			en := byHost[strings.ToLower(h)]
			if en == nil {
				en = &entry{ns: map[string]bool{}}
				byHost[strings.ToLower(h)] = en
			}
			en.ns[src.Namespace] = true
			en.routes = append(en.routes, r)
		}
	}
	var out []SharedHost
	for h, en := range byHost {
		if len(en.ns) < 2 {
			continue
		}
		sh := SharedHost{Host: h}
		for ns := range en.ns {
			sh.Namespaces = append(sh.Namespaces, ns)
		}
		sort.Strings(sh.Namespaces)
		for _, r := range en.routes {
			sh.Routes = append(sh.Routes, e.briefRoute(r))
		}
		sort.Slice(sh.Routes, func(i, j int) bool { return sh.Routes[i].Name < sh.Routes[j].Name })
		out = append(out, sh)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// Text writes the conflicts for a reader.
func (c *Conflicts) Text(w io.Writer) error {
	var b strings.Builder
	if len(c.Shadowed) == 0 {
		b.WriteString("No route is shadowed.\n")
	} else {
		b.WriteString("Routes that can never win (every request they match goes to a route Kong evaluates first):\n")
		for _, s := range c.Shadowed {
			fmt.Fprintf(&b, "  %s%s\n", s.Route.Name, sourceSuffix(s.Route.Source))
			writeMatchesOn(&b, "    ", &s.Route)
			for _, by := range s.By {
				fmt.Fprintf(&b, "    shadowed by %s%s\n", by.Name, sourceSuffix(by.Source))
			}
		}
	}
	if c.Unchecked > 0 {
		fmt.Fprintf(&b, "(%d routes not compared: an expression not read as fields, a regex path without a literal start, sources or destinations)\n", c.Unchecked)
	}
	if len(c.SharedHosts) == 0 {
		b.WriteString("No host is served by routes of several namespaces.\n")
	} else {
		b.WriteString("Hosts served by routes of several namespaces:\n")
		for _, h := range c.SharedHosts {
			fmt.Fprintf(&b, "  %s: namespaces %s\n", h.Host, strings.Join(h.Namespaces, ", "))
			for _, r := range h.Routes {
				fmt.Fprintf(&b, "    %s%s\n", r.Name, sourceSuffix(r.Source))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
