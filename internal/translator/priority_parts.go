package translator

import "math/bits"

// KIC's priorities of expression routes, read back: which part of two priorities of routes of
// one source kind decides between them (`konductor explain`'s "why this route loses"). The
// layouts are those routeExpression, httpMatchPriority and grpcMatchPriority build;
// TestExpressionPriorityPart holds each part to the function that sets it.

// priorityPart is a range of bits [low, high] of a priority.
type priorityPart struct {
	low, high int
	name      string
}

// expressionPriorityLayouts are the parts of each kind's priorities, highest first.
var expressionPriorityLayouts = map[string][]priorityPart{
	// routeExpression: 3<<44 | matchFields<<41 | headerCount<<33 | plainHostOnly<<32 |
	// hasRegexPath<<16 | maxPathLen.
	"Ingress": {
		{44, 63, "kind"}, {41, 43, "fields matched on"}, {33, 40, "header count"}, {32, 32, "plain hosts only"},
		{16, 16, "regex paths (KIC counts Prefix and Exact paths as regexes)"}, {0, 15, "path length"},
	},
	// httpMatchPriority: kind, precise hostname, hostname length, Exact path, RegularExpression
	// path, path length - 1, method, headers, query parameters; 12 bits of relative order.
	"HTTPRoute": {
		{44, 63, "kind"}, {43, 43, "precise hostname"}, {35, 42, "hostname length"}, {34, 34, "Exact path"},
		{33, 33, "RegularExpression path"}, {23, 32, "path length"}, {22, 22, "method"}, {17, 21, "header count"},
		{12, 16, "query parameter count"}, {0, 11, "creation order (older first, then namespace, name, rule and match)"},
	},
	// grpcMatchPriority: kind, precise hostname, hostname length, service length, method
	// length, headers; 8 bits of relative order.
	"GRPCRoute": {
		{44, 63, "kind"}, {43, 43, "precise hostname"}, {35, 42, "hostname length"}, {24, 34, "service name length"},
		{13, 23, "method name length"}, {8, 12, "header count"}, {0, 7, "creation order (older first, then namespace, name, rule and match)"},
	},
}

// ExpressionPriorityPart names the part of KIC's priority layout for kind's expression routes
// that orders priorities a and b: the part holding the highest bit where they differ. "" when
// they are equal or kind has no layout.
func ExpressionPriorityPart(kind string, a, b uint64) string {
	if a == b {
		return ""
	}
	bit := 63 - bits.LeadingZeros64(a^b)
	for _, p := range expressionPriorityLayouts[kind] {
		if bit >= p.low && bit <= p.high {
			return p.name
		}
	}
	return ""
}
