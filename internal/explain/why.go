package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/konductor/konductor/internal/kongrouter"
)

// losers are the other routes that match req (those that miss nothing of it), in Kong's
// evaluation order, each with the part of Kong's priority that ranks the winner first. Other
// parts of the winner's own route (Kong splits a route by path length) are not losers: they are
// the same route.
func (e *Explainer) losers(req *kongrouter.Request, won *kongrouter.Match, misses [][]string) []Loser {
	winner := kongrouter.PriorityPartsOf(matcherRoute(won.Matcher))
	seen := map[string]bool{deref(won.Route.ID): true}
	var out []Loser
	for i, m := range e.gw.HTTPRouter().Matchers() {
		id := deref(m.Route.ID)
		if len(misses[i]) > 0 || seen[id] {
			continue
		}
		seen[id] = true
		parts := kongrouter.PriorityPartsOf(matcherRoute(m))
		decider := kongrouter.Decider(winner, parts)
		l := Loser{Route: *e.route(m, "", req), Decider: decider}
		l.Why = why(decider, won.Matcher, m, winner, parts, e.sources)
		out = append(out, l)
	}
	return out
}

// why says, in the user's terms, why loser ranks below winner.
func why(decider string, won, lost *kongrouter.Matcher, w, l kongrouter.PriorityParts, src *sources) string {
	switch decider {
	case kongrouter.PartNone:
		return fmt.Sprintf("the same priority (%#x): Kong evaluates the greater id first (%s > %s), an order no Kubernetes field sets",
			won.Priority, won.ID, lost.ID)
	case kongrouter.PartExpression:
		return fmt.Sprintf("a lower priority (%#x < %#x)%s", lost.Priority, won.Priority,
			src.expressionPriorityWhy(won.Route, lost.Route, won.Priority, lost.Priority))
	case kongrouter.PartPlainHosts:
		if len(lost.Route.Hosts) == 0 {
			return "no host: a route whose hosts are all plain (no wildcard) ranks above"
		}
		return "a wildcard host: a route whose hosts are all plain (no wildcard) ranks above"
	case kongrouter.PartRegexPaths:
		return "prefix paths: regex paths rank above prefixes, whatever their length"
	case kongrouter.PartWeight:
		return fmt.Sprintf("matches on fewer fields (%s) than the winner (%s)", fieldList(l.Fields), fieldList(w.Fields))
	case kongrouter.PartHeaders:
		return fmt.Sprintf("fewer headers (%d < %d)", l.Headers, w.Headers)
	case kongrouter.PartRegexPriority:
		return fmt.Sprintf("a lower regex_priority (%d < %d)", l.RegexPriority, w.RegexPriority)
	case kongrouter.PartPathLength:
		return fmt.Sprintf("a shorter path (%d < %d characters)", l.PathLength, w.PathLength)
	}
	return decider
}

func fieldList(f []string) string {
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, ", ")
}

// nearest are the routes that miss req by the fewest fields (misses: each matcher's, in
// Matchers' order), and what differs for each.
func (e *Explainer) nearest(req *kongrouter.Request, misses [][]string) []Near {
	type scored struct {
		m      *kongrouter.Matcher
		misses []string
	}
	var all []scored
	seen := map[string]bool{}
	for i, m := range e.gw.HTTPRouter().Matchers() {
		id := deref(m.Route.ID)
		if len(misses[i]) == 0 || seen[id] {
			continue
		}
		seen[id] = true
		ms := misses[i]
		if slices.Contains(ms, "tls.sni") {
			// Kong's SNI test reads (net.protocol != "https" || tls.sni == ...): the protocol
			// there is the SNI's guard, not a difference of its own.
			ms = slices.DeleteFunc(slices.Clone(ms), func(f string) bool { return f == "net.protocol" })
		}
		all = append(all, scored{m, ms})
	}
	// Fewest misses first; among equals, Kong's order (the matchers' order, kept by the
	// stable sort).
	sort.SliceStable(all, func(i, j int) bool { return len(all[i].misses) < len(all[j].misses) })
	var out []Near
	for _, s := range all[:min(len(all), maxNearest)] {
		r := e.route(s.m, "", req)
		n := Near{Route: *r}
		// What the route takes, an expression route's read from its expression.
		takes := r
		if t, ok := traditionalOf(s.m.Route); ok && t != s.m.Route {
			takes = &Route{Hosts: strs(t.Hosts), Paths: strs(t.Paths), Methods: strs(t.Methods), Headers: t.Headers}
		}
		for _, f := range s.misses {
			n.Differs = append(n.Differs, differs(f, takes, req))
		}
		out = append(out, n)
	}
	return out
}

// differs says what of req a route's field does not take.
func differs(field string, r *Route, req *kongrouter.Request) string {
	switch {
	case field == "http.host":
		if len(r.Hosts) > 0 {
			return fmt.Sprintf("host: the route takes %s, not %s", strings.Join(r.Hosts, ", "), req.Host)
		}
		return "host: not " + req.Host
	case field == "http.path":
		if len(r.Paths) > 0 {
			return fmt.Sprintf("path: the route takes %s, not %s", strings.Join(r.Paths, ", "), req.URI)
		}
		return "path: not " + req.URI
	case field == "http.method":
		if len(r.Methods) > 0 {
			return fmt.Sprintf("method: the route takes %s, not %s", strings.Join(r.Methods, ", "), req.Method)
		}
		return "method: not " + req.Method
	case strings.HasPrefix(field, "http.headers."):
		name := strings.TrimPrefix(field, "http.headers.")
		for k, v := range r.Headers {
			if strings.EqualFold(strings.ReplaceAll(k, "-", "_"), name) {
				return fmt.Sprintf("header %s: the route takes %s, the request has %q", k, strings.Join(v, ", "), req.Header.Get(k))
			}
		}
		return "header " + strings.ReplaceAll(name, "_", "-")
	case field == "tls.sni":
		return "sni: not " + orNone(req.SNI)
	case field == "net.protocol":
		return "protocol: not " + req.Scheme
	case strings.HasPrefix(field, "http.queries."):
		return "query " + strings.TrimPrefix(field, "http.queries.")
	}
	return field
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
