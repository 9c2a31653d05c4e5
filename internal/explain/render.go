package explain

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Text writes the explanation for a reader: the route and why, what the upstream receives, the
// plugins, the losers, then what was left out.
func (x *Explanation) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Request: %s %s", x.Request.Method, x.Request.URL)
	if x.Request.SNI != "" {
		fmt.Fprintf(&b, " (SNI %s)", x.Request.SNI)
	}
	fmt.Fprintf(&b, " from %s, router %s\n", x.Request.Source, x.Router)
	writeHeader(&b, "  ", x.Request.Header)
	if x.Route == nil {
		b.WriteString("\nNo route matches: Kong answers " + answerLine(x.Answer) + "\n")
		if len(x.Nearest) > 0 {
			b.WriteString("\nNearest routes, and what differs:\n")
			for _, n := range x.Nearest {
				fmt.Fprintf(&b, "  %s%s\n", n.Route.Name, sourceSuffix(n.Route.Source))
				for _, d := range n.Differs {
					fmt.Fprintf(&b, "    %s\n", d)
				}
			}
		}
		writeLeftOut(&b, x.LeftOut)
		_, err := io.WriteString(w, b.String())
		return err
	}
	r := x.Route
	fmt.Fprintf(&b, "\nRoute: %s%s\n", r.Name, sourceSuffix(r.Source))
	writeMatchesOn(&b, "  ", r)
	if r.MatchedPath != "" {
		fmt.Fprintf(&b, "  matched path: %s\n", r.MatchedPath)
	}
	fmt.Fprintf(&b, "  priority: %s\n", priorityLine(r.Priority))
	if x.Service != nil {
		fmt.Fprintf(&b, "Service: %s (%s)%s\n", x.Service.Name, x.Service.URL, sourceSuffix(x.Service.Source))
	} else {
		b.WriteString("Service: none (a serviceless route: only a plugin can answer)\n")
	}
	if u := x.Upstream; u != nil {
		fmt.Fprintf(&b, "Upstream: %s%s\n", u.Name, sourceSuffix(u.Source))
		if len(u.Targets) == 0 {
			b.WriteString("  targets: none\n")
		}
		for _, t := range u.Targets {
			fmt.Fprintf(&b, "  target %s weight %d\n", t.Target, t.Weight)
		}
	}
	if len(x.Plugins) > 0 {
		b.WriteString("Plugins, in Kong's order:\n")
		for i, p := range x.Plugins {
			var notes []string
			switch {
			case p.Answered:
				notes = append(notes, "answers the request")
			case p.Unmodelled:
				notes = append(notes, "applies (not run by konductor's model)")
			case p.Ran:
				notes = append(notes, "runs")
			default:
				notes = append(notes, "response phases only")
			}
			fmt.Fprintf(&b, "  %d. %s (%s)%s: %s\n", i+1, p.Name, p.Scope, sourceSuffix(p.Source), strings.Join(notes, ", "))
		}
	}
	if x.Answer != nil {
		fmt.Fprintf(&b, "Kong answers %s\n", answerLine(x.Answer))
	}
	if f := x.Forward; f != nil {
		if x.Answer != nil {
			b.WriteString("Were there a target, it would receive:\n")
		}
		fmt.Fprintf(&b, "Upstream request: %s %s\n", f.Method, f.URL)
		fmt.Fprintf(&b, "  Host: %s\n", f.Host)
		if len(f.Added) > 0 {
			b.WriteString("  headers set:\n")
			writeHeader(&b, "    ", f.Added)
		}
		if len(f.Removed) > 0 {
			fmt.Fprintf(&b, "  headers removed: %s\n", strings.Join(f.Removed, ", "))
		}
	}
	if len(x.Losers) > 0 {
		b.WriteString("\nAlso matched, and lost:\n")
		for _, l := range x.Losers {
			fmt.Fprintf(&b, "  %s%s\n    loses: %s\n", l.Route.Name, sourceSuffix(l.Route.Source), l.Why)
		}
	}
	writeLeftOut(&b, x.LeftOut)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMatchesOn(b *strings.Builder, indent string, r *Route) {
	if r.Expression != "" {
		fmt.Fprintf(b, "%sexpression: %s\n", indent, r.Expression)
		return
	}
	var on []string
	if len(r.Hosts) > 0 {
		on = append(on, "hosts "+strings.Join(r.Hosts, ", "))
	}
	if len(r.Methods) > 0 {
		on = append(on, "methods "+strings.Join(r.Methods, ", "))
	}
	if len(r.Paths) > 0 {
		on = append(on, "paths "+strings.Join(r.Paths, ", "))
	}
	names := make([]string, 0, len(r.Headers))
	for k := range r.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		on = append(on, "header "+k+": "+strings.Join(r.Headers[k], ", "))
	}
	if len(on) > 0 {
		fmt.Fprintf(b, "%smatches on: %s\n", indent, strings.Join(on, "; "))
	}
}

func priorityLine(p *Priority) string {
	if p == nil {
		return ""
	}
	if p.Expression {
		return fmt.Sprintf("%#x (the route's own priority)", uint64(p.Value))
	}
	parts := []string{fmt.Sprintf("fields matched on: %s", fieldList(p.Fields))}
	if p.PlainHostsOnly {
		parts = append(parts, "plain hosts only")
	}
	if p.Headers > 0 {
		parts = append(parts, fmt.Sprintf("%d headers", p.Headers))
	}
	if p.RegexPaths {
		parts = append(parts, fmt.Sprintf("regex paths, regex_priority %d", p.RegexPriority))
	} else if p.PathLength > 0 {
		parts = append(parts, fmt.Sprintf("path length %d", p.PathLength))
	}
	return fmt.Sprintf("%#x (%s)", uint64(p.Value), strings.Join(parts, "; "))
}

func answerLine(a *Answer) string {
	if a == nil {
		return ""
	}
	s := fmt.Sprintf("%d", a.Status)
	if a.Message != "" {
		s += " " + a.Message
	}
	return s + " (" + a.By + ")"
}

func sourceSuffix(s *Source) string {
	if s == nil {
		return ""
	}
	return " <- " + s.String()
}

func writeHeader(b *strings.Builder, indent string, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(b, "%s%s: %s\n", indent, k, strings.Join(h[k], ", "))
	}
}

func writeLeftOut(b *strings.Builder, lo []LeftOut) {
	if len(lo) == 0 {
		return
	}
	b.WriteString("\nLeft out on the way, and would have matched:\n")
	for _, l := range lo {
		fmt.Fprintf(b, "  %s\n", l.Source.String())
		for _, p := range l.Problems {
			fmt.Fprintf(b, "    %s\n", p)
		}
	}
}
