package translator

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Route annotations of translation-rules.md §10.1.
const (
	annStripPath          = "konghq.com/strip-path"
	annForceSSLRedirect   = "ingress.kubernetes.io/force-ssl-redirect"
	annHTTPSRedirectCode  = "konghq.com/https-redirect-status-code"
	annPreserveHost       = "konghq.com/preserve-host"
	annRequestBuffering   = "konghq.com/request-buffering"
	annResponseBuffering  = "konghq.com/response-buffering"
	annProtocols          = "konghq.com/protocols"
	annRegexPriority      = "konghq.com/regex-priority"
	annMethods            = "konghq.com/methods"
	annSNIs               = "konghq.com/snis"
	annHostAliases        = "konghq.com/host-aliases"
	annHeadersPrefix      = "konghq.com/headers."
	annHeadersSeparator   = "konghq.com/headers-separator"
	annPathHandling       = "konghq.com/path-handling"
	annotationFieldFormat = "metadata.annotations[%s]"
)

func annField(key string) string { return fmt.Sprintf(annotationFieldFormat, key) }

// routeOverrides are an Ingress's route annotations, parsed once and applied to each of its
// routes. Nil and unset fields leave the route as translated.
type routeOverrides struct {
	annotationProtocols []string // annotation order; nil when absent
	stripPath           *bool
	forceSSL            bool
	redirectCode        *int
	preserveHost        *bool
	requestBuffering    *bool
	responseBuffering   *bool
	protocolsValid      bool
	regexPriority       *int
	methods             []string
	snisSet             bool
	snis                []string
	hostAliases         []string
	headers             map[string][]string
	pathHandling        *string
}

var validRouteProtocols = map[string]bool{
	"http": true, "https": true, "grpc": true, "grpcs": true, "ws": true, "wss": true,
	"tls": true, "tcp": true, "tls_passthrough": true,
}

// httpRouteProtocolGroups are the protocol sets Kong accepts on a route with paths: it
// refuses to mix groups, and tcp, tls, udp and tls_passthrough routes cannot have paths.
var httpRouteProtocolGroups = []map[string]bool{
	{"http": true, "https": true},
	{"grpc": true, "grpcs": true},
	{"ws": true, "wss": true},
}

var (
	methodRe       = regexp.MustCompile(`^[A-Z]+$`)
	pathHandlingRe = regexp.MustCompile(`v\d`)
	// aliasHostRe is KIC's host regex for host-aliases: a leading "*." or trailing ".*" is allowed.
	aliasHostRe = regexp.MustCompile(`^(\*\.)?[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(\.\*)?$`)
	sniRe       = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$`)
)

// splitList is KIC's list parsing: comma-separated, trimmed, empty items dropped.
func splitList(v, sep string) []string {
	if v == "" {
		return nil // what strings.Split would have made of it, without its slice
	}
	var out []string
	for _, s := range strings.Split(v, sep) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func strictBool(v string) *bool {
	switch strings.ToLower(v) {
	case "true":
		return kong.Bool(true)
	case "false":
		return kong.Bool(false)
	}
	return nil
}

// annotationInt is strconv.Atoi of annotation key, false when it is missing or not a number.
// A missing annotation is answered without strconv, whose error for "" is an allocation (one
// per Ingress and annotation, 4% of a full translation's allocations at 3,000 Ingresses).
func annotationInt(a map[string]string, key string) (int, bool) {
	v := a[key]
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// annotationBool is annotationInt for strconv.ParseBool.
func annotationBool(a map[string]string, key string) (bool, bool) {
	v := a[key]
	if v == "" {
		return false, false
	}
	b, err := strconv.ParseBool(v)
	return b, err == nil
}

// annotationExpressionRefused says why Kong's expressions router would refuse what the route
// annotations put in a route's expression (probe: a route they were applied to), "" when it
// takes it: the check an HTTPRoute's expression passes (the paths are checked with their rule).
func annotationExpressionRefused(probe *file.FRoute) string {
	var parts []*matcher
	for _, h := range probe.Hosts {
		parts = append(parts, predicate("http.host", "==", *h))
	}
	for _, m := range probe.Methods {
		parts = append(parts, predicate("http.method", "==", *m))
	}
	for _, sni := range probe.SNIs {
		parts = append(parts, predicate("tls.sni", "==", *sni))
	}
	if m := group("&&", append(parts, headerMatchers(probe.Headers)...)...); m != nil {
		return m.refused()
	}
	return ""
}

// routeAnnotations parses the route annotations of ing. Values KIC ignores are ignored. A
// value that KIC passes on but Kong would refuse (protocols that cannot serve a route with
// paths, a header name Kong refuses, a path_handling Kong does not know) is reported; for
// protocols and headers the Ingress gets no routes at all (ok false), because serving them
// without the constraint would match more traffic than the user asked for.
func (b *builder) routeAnnotations(ing client.Object, gvk schema.GroupVersionKind) (*routeOverrides, bool) {
	a := ing.GetAnnotations()
	ro := &routeOverrides{}
	if v, ok := a[annProtocols]; ok {
		ro.annotationProtocols = splitList(v, ",")
		ro.protocolsValid = true
		for _, p := range ro.annotationProtocols {
			if !validRouteProtocols[p] {
				ro.protocolsValid = false
			}
		}
	}
	ro.stripPath = strictBool(a[annStripPath])
	ro.forceSSL = a[annForceSSLRedirect] == "true"
	if v, ok := annotationInt(a, annHTTPSRedirectCode); ok {
		switch v {
		case 426, 301, 302, 307, 308:
			ro.redirectCode = kong.Int(v)
		}
	}
	ro.preserveHost = strictBool(a[annPreserveHost])
	if v, ok := annotationBool(a, annRequestBuffering); ok {
		ro.requestBuffering = kong.Bool(v)
	}
	if v, ok := annotationBool(a, annResponseBuffering); ok {
		ro.responseBuffering = kong.Bool(v)
	}
	if v, ok := annotationInt(a, annRegexPriority); ok {
		ro.regexPriority = kong.Int(v)
	}
	// A restriction that cannot be read leaves the routes out (KIC drops it and serves them
	// to every method or SNI: a widening no one asked for; docs/security.md, item 5).
	var unreadable []string
	if v, ok := a[annMethods]; ok {
		ms := splitList(v, ",")
		valid := true
		for i, m := range ms {
			ms[i] = strings.ToUpper(m)
			if !methodRe.MatchString(ms[i]) {
				valid = false
				b.problem(ing, gvk, annField(annMethods), "%q is not an HTTP method (methods are comma-separated); the %s's routes are left out rather than served to every method", m, gvk.Kind)
			}
		}
		if valid {
			ro.methods = ms
		} else {
			unreadable = append(unreadable, annMethods)
		}
	}
	if v, ok := a[annSNIs]; ok {
		snis := splitList(v, ",")
		valid := true
		for _, s := range snis {
			if !sniRe.MatchString(s) {
				valid = false
				why := "is not an SNI (SNIs are comma-separated)"
				if strings.HasPrefix(s, "*") {
					why = "is a wildcard, which konghq.com/snis does not take (KIC's rule)"
				}
				b.problem(ing, gvk, annField(annSNIs), "%q %s; the %s's routes are left out rather than served to every SNI", s, why, gvk.Kind)
			}
		}
		if valid {
			ro.snisSet, ro.snis = true, snis
		} else {
			unreadable = append(unreadable, annSNIs)
		}
	}
	if v, ok := a[annHostAliases]; ok {
		hs := splitList(v, ",")
		valid := true
		for _, h := range hs {
			if !aliasHostRe.MatchString(h) || checkWildcardHost(h, true) != "" {
				valid = false
			}
		}
		if valid {
			ro.hostAliases = hs
		}
	}
	if v, ok := a[annPathHandling]; ok && pathHandlingRe.MatchString(v) {
		if v == "v0" || v == "v1" {
			ro.pathHandling = kong.String(v)
		} else {
			b.problem(ing, gvk, annField(annPathHandling), "path_handling %q is not one of v0, v1; the annotation is ignored", v)
		}
	}

	ok := len(unreadable) == 0
	// Headers, in sorted annotation order so problems come out in a stable order.
	sep := ","
	if v := a[annHeadersSeparator]; v != "" {
		sep = v
	}
	keys := make([]string, 0)
	for k := range a {
		if strings.HasPrefix(k, annHeadersPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := strings.TrimPrefix(k, annHeadersPrefix)
		vals := splitList(a[k], sep)
		if name == "" || len(vals) == 0 {
			continue
		}
		if e := checkHeaderName(name); e != "" {
			b.problem(ing, gvk, annField(k), "%s; the %s's routes are left out", e, gvk.Kind)
			ok = false
			continue
		}
		for _, v := range vals {
			if strings.HasPrefix(v, "~*") {
				if e := b.headerRegex(v[2:]); e != "" {
					b.problem(ing, gvk, annField(k), "invalid regex %q: %s; the %s's routes are left out", v, e, gvk.Kind)
					ok = false
				}
			}
		}
		if ro.headers == nil {
			ro.headers = map[string][]string{}
		}
		ro.headers[name] = vals
	}

	// What protocols the routes end with, checked now so the whole Ingress is judged once.
	probe := &file.FRoute{}
	ro.apply(probe)
	if ok && b.opts.ExpressionRoutes {
		if e := annotationExpressionRefused(probe); e != "" {
			b.problem(ing, gvk, "metadata.annotations", "%s; the %s's routes are left out", e, gvk.Kind)
			ok = false
		}
	}
	if e := checkHTTPRouteProtocols(probe.Protocols); e != "" {
		b.problem(ing, gvk, annField(annProtocols), "%s; the %s's routes are left out", e, gvk.Kind)
		ok = false
	}
	return ro, ok
}

// apply sets the overrides on r in KIC's order (translation-rules.md §10.1), then normalises the
// protocols as KIC's traditional router translation does.
func (ro *routeOverrides) apply(r *file.FRoute) {
	if ro.annotationProtocols != nil {
		// The translator first sets the annotation values sorted and unvalidated.
		sorted := append([]string(nil), ro.annotationProtocols...)
		sort.Strings(sorted)
		r.Protocols = kong.StringSlice(sorted...)
	}
	if ro.stripPath != nil {
		r.StripPath = kong.Bool(*ro.stripPath)
	}
	if ro.forceSSL {
		r.HTTPSRedirectStatusCode = kong.Int(302)
		g, h := protocolsContain(r.Protocols, "grpc"), protocolsContain(r.Protocols, "http")
		switch {
		case g && h:
			r.Protocols = kong.StringSlice("grpcs", "https")
		case g:
			r.Protocols = kong.StringSlice("grpcs")
		default:
			r.Protocols = kong.StringSlice("https")
		}
	}
	if ro.redirectCode != nil {
		r.HTTPSRedirectStatusCode = kong.Int(*ro.redirectCode)
	}
	if ro.preserveHost != nil {
		r.PreserveHost = kong.Bool(*ro.preserveHost)
	}
	if ro.requestBuffering != nil {
		r.RequestBuffering = kong.Bool(*ro.requestBuffering)
	}
	if ro.responseBuffering != nil {
		r.ResponseBuffering = kong.Bool(*ro.responseBuffering)
	}
	if ro.annotationProtocols != nil && ro.protocolsValid {
		r.Protocols = kong.StringSlice(ro.annotationProtocols...)
	}
	if ro.regexPriority != nil {
		r.RegexPriority = kong.Int(*ro.regexPriority)
	}
	if ro.methods != nil {
		r.Methods = kong.StringSlice(ro.methods...)
	}
	if ro.snisSet {
		r.SNIs = kong.StringSlice(ro.snis...)
		if len(ro.snis) == 0 {
			r.SNIs = nil
		}
	}
	for _, h := range ro.hostAliases {
		present := false
		for _, x := range r.Hosts {
			if *x == h {
				present = true
			}
		}
		if !present {
			r.Hosts = append(r.Hosts, kong.String(h))
		}
	}
	if ro.headers != nil {
		r.Headers = map[string][]string{}
		for k, v := range ro.headers {
			r.Headers[k] = append([]string(nil), v...)
		}
	}
	if ro.pathHandling != nil {
		r.PathHandling = kong.String(*ro.pathHandling)
	}

	// Normalisation: gRPC together with HTTP (or an invalid value) becomes http+https; gRPC
	// alone drops strip_path.
	g := protocolsContain(r.Protocols, "grpc")
	h := protocolsContain(r.Protocols, "http")
	for _, p := range r.Protocols {
		if !validRouteProtocols[*p] {
			h = true
		}
	}
	switch {
	case g && h:
		r.Protocols = kong.StringSlice("http", "https")
	case g:
		r.StripPath = nil
	}
}

func protocolsContain(ps []*string, sub string) bool {
	for _, p := range ps {
		if strings.Contains(*p, sub) {
			return true
		}
	}
	return false
}

// checkHTTPRouteProtocols returns why Kong would refuse these protocols on a route with
// paths, or "". Unset protocols are Kong's default, http and https.
func checkHTTPRouteProtocols(ps []*string) string {
	if len(ps) == 0 {
		return ""
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = *p
		if !validRouteProtocols[*p] {
			return fmt.Sprintf("invalid protocol %q", *p)
		}
	}
	for _, g := range httpRouteProtocolGroups {
		all := true
		for _, n := range names {
			if !g[n] {
				all = false
			}
		}
		if all {
			return ""
		}
	}
	return fmt.Sprintf("protocols [%s] cannot serve an Ingress route (Kong refuses to mix protocol families, and tcp, tls and tls_passthrough routes cannot match paths)", strings.Join(names, ", "))
}
