package translator

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

// Stream routes (TCPIngress, UDPIngress, TCPRoute, TLSRoute, UDPRoute) under the expressions
// router, as KIC renders them when its ExpressionRoutes flag is on (its
// applyExpressionToIngressRules, called at the end of ingressRulesFromTCPIngressV1beta1,
// ingressRulesFromUDPIngressV1beta1, ingressRulesFromTCPRoutes, ingressRulesFromTLSRoutes and
// ingressRulesFromUDPRoutes, and subtranslator.ApplyExpressionToL4KongRoute): the route keeps
// its name, ID, protocols and tags; its snis and destinations become
//
//	(tls.sni == "a" || tls.sni == "b") && (net.dst.port == 9000 || ...)
//
// (each OR group parenthesised per member when it has several, the AND parenthesised per
// group when both are present) and its priority is 1, for every stream route alike. No
// net.protocol predicate: the protocols field stays.

// kicValidSNI is KIC's validSNIs (kongstate/route.go, subtranslator/atc_utils.go): only the
// SNIs it matches are put in a tls.sni predicate; the others (a wildcard, a label with "--"
// such as punycode's "xn--", an underscore, a trailing dot) are skipped without a word.
var kicValidSNI = regexp.MustCompile(`^([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*)+(\.([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*))*$`)

// l4ExpressionPriority is the priority KIC gives every stream expression route
// (atc.ApplyExpression(&r.Route, ..., 1)).
const l4ExpressionPriority = uint64(1)

// l4Expression is the expression of a stream route matching snis and ports, and the SNIs KIC
// leaves out of it (kicValidSNI). "" when nothing is left to match: Kong refuses such a route
// (an empty string, below the schema's minimum length), with the whole DB-less configuration.
func l4Expression(snis []string, ports []int) (string, []string) {
	var sniPreds, portPreds []*matcher
	var skipped []string
	for _, s := range snis {
		if !kicValidSNI.MatchString(s) {
			skipped = append(skipped, s)
			continue
		}
		sniPreds = append(sniPreds, predicate("tls.sni", "==", s))
	}
	for _, p := range ports {
		// An integer literal, unquoted (atc.IntLiteral).
		portPreds = append(portPreds, &matcher{pred: "net.dst.port == " + strconv.Itoa(p)})
	}
	root := group("&&", group("||", sniPreds...), group("||", portPreds...))
	if root == nil {
		return "", skipped
	}
	return root.expression(), skipped
}

// setL4Expression turns the traditional stream route r into KIC's expression route: expr
// (l4Expression of its snis and destinations) and priority 1 instead of snis and
// destinations.
func setL4Expression(r *kong.Route, expr string) {
	r.Expression = kong.String(expr)
	r.Priority = kong.Uint64(l4ExpressionPriority)
	r.SNIs, r.Destinations = nil, nil
}

// destinationPorts are the ports of a stream route's destinations, in order.
func destinationPorts(ds []*kong.CIDRPort) []int {
	ports := make([]int, 0, len(ds))
	for _, d := range ds {
		if d != nil && d.Port != nil {
			ports = append(ports, *d.Port)
		}
	}
	return ports
}

// warnSkippedSNI reports, as a warning (the route is sent, as KIC sends it), a host KIC's
// expression does not match; consequence says what the route matches then.
func (b *builder) warnSkippedSNI(obj client.Object, gvk schema.GroupVersionKind, field, sni, consequence string) {
	b.problems = append(b.problems, Problem{Object: kongstate.RefFor(obj, gvk), Field: field, Warning: true,
		Message: fmt.Sprintf("SNI %q is not matched under the expressions router (KIC's expression takes only plain hostnames in tls.sni, no wildcard): %s", sni, consequence)})
}
