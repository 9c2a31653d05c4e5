package translator

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

const (
	annRegexPrefix = "konghq.com/regex-prefix"
	// defaultRegexPrefix marks an ImplementationSpecific path as a regex (translation-rules.md §3.5).
	defaultRegexPrefix = "/~"
	implicitPort       = "implicitPort"

	serviceBackendField = ".backend.service"
)

// portKey is KIC's canonical port string: the number, else the name, else implicitPort.
func portKey(p netv1.ServiceBackendPort) string {
	switch {
	case p.Number != 0:
		return strconv.Itoa(int(p.Number))
	case p.Name != "":
		return p.Name
	default:
		return implicitPort
	}
}

// kongServiceFor returns the Kong service of (ns, svc, port), creating it when needed. A new
// service from Ingress rules has path "/", one created for the default backend has none
// (translation-rules.md §3.7). It reports and returns nil when the name or host that the user's
// backend reference produces would be refused by Kong.
func (b *builder) kongServiceFor(ing *netv1.Ingress, field, svcName string, port netv1.ServiceBackendPort, withPath bool) *kongService {
	pk := portKey(port)
	if m := &b.lastServiceFor; m.ks != nil && m.namespace == ing.Namespace && m.svcName == svcName && m.portKey == pk {
		return m.ks
	}
	name := ing.Namespace + "." + svcName + "." + pk
	if ks, ok := b.kongServices[name]; ok {
		b.lastServiceFor = serviceMemo{ing.Namespace, svcName, pk, ks}
		return ks
	}
	host := svcName + "." + ing.Namespace + "." + pk + ".svc"
	if e := checkName(name); e != "" {
		b.problem(ing, gvkIngress, field, "Kong service %s", e)
		return nil
	}
	if e := checkServiceHost(host); e != "" {
		b.problem(ing, gvkIngress, field, "Kong service %s", e)
		return nil
	}
	ks := &kongService{
		namespace:  ing.Namespace,
		svcName:    svcName,
		port:       port,
		portKey:    pk,
		routeByKey: map[string]*routeEntry{},
		svc:        b.httpKongService(name, host),
	}
	if withPath {
		ks.svc.Path = &sharedRootPath
	}
	b.kongServices[name] = ks
	b.lastServiceFor = serviceMemo{ing.Namespace, svcName, pk, ks}
	return ks
}

// serviceMemo is kongServiceFor's last answer: an Ingress's paths mostly name the backend
// of the path before, whose Kong service is then found without building its name.
type serviceMemo struct {
	namespace, svcName, portKey string
	ks                          *kongService
}

// ingressRoute is a new Ingress route with what its own fields point to (newRoute).
type ingressRoute struct {
	file.FRoute
	id, name, host string
	hosts          [1]*string
}

// ingressPathAt is one HTTP path of an Ingress: spec.rules[rule].http.paths[index].
type ingressPathAt struct {
	rule, index int
	path        *netv1.HTTPIngressPath
}

// ingressPaths yields the HTTP paths of ing's rules in order: the one walk of an Ingress's
// paths, for its translation (ingressRules) and for what it names (appendServicesNamed).
func ingressPaths(ing *netv1.Ingress) iter.Seq[ingressPathAt] {
	return func(yield func(ingressPathAt) bool) {
		for i := range ing.Spec.Rules {
			if http := ing.Spec.Rules[i].HTTP; http != nil {
				for j := range http.Paths {
					if !yield(ingressPathAt{i, j, &http.Paths[j]}) {
						return
					}
				}
			}
		}
	}
}

// regexPrefixOf is the prefix that marks ing's regex paths (konghq.com/regex-prefix, "/~").
func regexPrefixOf(ing *netv1.Ingress) string {
	if v := ing.Annotations[annRegexPrefix]; v != "" {
		return v
	}
	return defaultRegexPrefix
}

// IngressPath is one path of an Ingress, spec.rules[Rule].http.paths[Index], with the Kong
// paths it becomes: what `konductor explain` reads a matched Kong path back to. Backend is
// the Service's (or KongServiceFacade's) name.
type IngressPath struct {
	Rule, Index int
	Host        string
	Backend     string
	KongPaths   []string
}

// IngressPaths are ing's paths with their Kong paths as translation renders them
// (translation-rules.md §3.1-3.5), before their validation: the ones translation refuses are
// also here, and are in no route.
func IngressPaths(ing *netv1.Ingress, legacyRegexDetection bool) []IngressPath {
	prefix := regexPrefixOf(ing)
	var out []IngressPath
	for at := range ingressPaths(ing) {
		pt := netv1.PathTypeImplementationSpecific
		if at.path.PathType != nil {
			pt = *at.path.PathType
		}
		ip := IngressPath{Rule: at.rule, Index: at.index, Host: ing.Spec.Rules[at.rule].Host}
		if be := at.path.Backend.Service; be != nil {
			ip.Backend = be.Name
		} else if res := at.path.Backend.Resource; res != nil {
			ip.Backend = res.Name
		}
		for _, kp := range kongPaths(nil, normalizePath(at.path.Path), pt) {
			ip.KongPaths = append(ip.KongPaths, applyRegexPrefix(kp, prefix, legacyRegexDetection))
		}
		out = append(out, ip)
	}
	return out
}

// ingressRules builds a route per (Ingress, rule host, backend) with the paths of every rule
// and path that share it (translation-rules.md §3.1-3.6).
func (b *builder) ingressRules() {
	var made []*routeEntry // the routes of the Ingress being translated
	for _, ing := range b.ingresses {
		ro, ok := b.routeAnnotations(ing, gvkIngress)
		if !ok {
			continue
		}
		prefix := regexPrefixOf(ing)
		// Routes that some path asked for but that got no valid path, by key, with the
		// field of their first rule.
		lost := map[string]string{}
		var lostOrder []string
		made = made[:0]
		// The route key of the last path, which the next path of the same host and
		// backend shares: joined once rather than for every path.
		var last struct {
			host, backend string
			ks            *kongService
			key           string
		}
		badRule := -1 // a rule whose host is left out, with its paths
		for at := range ingressPaths(ing) {
			i, j, path, rule := at.rule, at.index, at.path, &ing.Spec.Rules[at.rule]
			if i == badRule {
				continue
			}
			if j == 0 && rule.Host != "" {
				if e := checkWildcardHost(rule.Host, true); e != "" {
					b.problem(ing, gvkIngress, fmt.Sprintf("spec.rules[%d].host", i), "%s; the rule is left out", e)
					badRule = i
					continue
				}
			}
			// One string for the path's field and its backend's (kept by the Kong
			// service's referrers), without fmt: 2.5% of a translation's allocations.
			refField := "spec.rules[" + strconv.Itoa(i) + "].http.paths[" + strconv.Itoa(j) + "]" + serviceBackendField
			field := refField[:len(refField)-len(serviceBackendField)]
			p := normalizePath(path.Path)
			be := path.Backend.Service
			var ks *kongService
			switch {
			case be != nil:
				ks = b.kongServiceFor(ing, refField, be.Name, be.Port, true)
			case b.opts.KongServiceFacade && isFacade(path.Backend.Resource):
				refField = field + ".backend.resource"
				ks = b.facadeService(ing, refField, path.Backend.Resource.Name, true)
				be = &netv1.IngressServiceBackend{Name: path.Backend.Resource.Name}
			default:
				b.unsupportedBackend(ing, field+".backend", p, path.Backend.Resource)
				continue
			}
			if ks == nil {
				continue
			}
			pt := netv1.PathTypeImplementationSpecific
			if path.PathType != nil {
				pt = *path.PathType
			}
			var pathBuf [2]*string
			paths := pathBuf[:0]
			var kpBuf [2]string
			kps := kongPaths(kpBuf[:0], p, pt)
			// Two Kong paths' strings are allocated together.
			var strs *[2]string
			if len(kps) > 1 {
				strs = new([2]string)
			}
			for k, kp := range kps {
				kp = applyRegexPrefix(kp, prefix, b.opts.EnableLegacyRegexDetection)
				if e := b.routePath(kp); e != "" {
					b.problem(ing, gvkIngress, field+".path", "%s; the path is left out", e)
					continue
				}
				switch {
				case kp == sharedRootPath:
					// The most common path: one value for every route (sharedvalues.go).
					paths = append(paths, &sharedRootPath)
				case strs != nil:
					strs[k] = kp
					paths = append(paths, &strs[k])
				default:
					paths = append(paths, kong.String(kp))
				}
			}
			// The expressions router compiles a regex path with the Rust regex crate, which
			// refuses some that PCRE takes ("/v1/{id}"): such a path is left out here rather
			// than make Kong refuse the whole configuration.
			if b.opts.ExpressionRoutes && len(paths) > 0 {
				if m, _, _ := pathMatcher(sourcePath{pathType: pt, path: p, regexPrefix: prefix}); m != nil {
					if e := m.refused(); e != "" {
						b.problem(ing, gvkIngress, field+".path", "%s; the path is left out", e)
						paths = nil
					}
				}
			}
			if last.ks != ks || last.host != rule.Host || last.backend != be.Name {
				last.host, last.backend, last.ks = rule.Host, be.Name, ks
				last.key = strings.Join([]string{ing.Namespace, ing.Name, rule.Host, be.Name, ks.portKey, ks.facade}, "\x00")
			}
			key := last.key
			ks.addReferrer(ing, gvkIngress, refField)
			if len(paths) == 0 {
				if _, seen := lost[key]; !seen {
					lost[key] = fmt.Sprintf("spec.rules[%d]", i)
					lostOrder = append(lostOrder, key)
				}
				continue
			}
			re := ks.routeByKey[key]
			if re == nil {
				name := ing.Namespace + "." + ing.Name + "." + be.Name + "." + strings.ReplaceAll(rule.Host, "*", "_") + "." + ks.portKey
				if ks.facade != "" {
					name = ing.Namespace + "." + ing.Name + "." + strings.ReplaceAll(rule.Host, "*", "_") + "." + ks.facade + ".svc.facade"
				}
				re = b.newRoute(ing, ro, field, key, name, rule.Host)
				if re == nil {
					continue
				}
				ks.routeByKey[key] = re
				ks.routes = append(ks.routes, re)
				made = append(made, re)
			}
			re.Paths = append(re.Paths, paths...)
			re.sources = append(re.sources, sourcePath{pathType: pt, path: p, regexPrefix: prefix})
		}
		// The routes' paths were grown by append, up to twice the room they need; the
		// State keeps them as long as the Ingress is unchanged (issue #13, memory).
		for _, re := range made {
			if cap(re.Paths) > len(re.Paths) {
				re.Paths = slices.Clone(re.Paths)
			}
		}
		for _, key := range lostOrder {
			if b.routeExists(key) {
				continue
			}
			parts := strings.Split(key, "\x00")
			b.problem(ing, gvkIngress, lost[key], "no valid path left for host %q and backend %s; no route is made for them", parts[2], parts[3])
		}
	}
}

func (b *builder) routeExists(key string) bool { return b.routeKeys[key] }

// newRoute makes a route with KIC's defaults and the Ingress's annotations. It refuses a
// name that another route already has: Kong would reject the whole configuration for it.
func (b *builder) newRoute(ing *netv1.Ingress, ro *routeOverrides, field, key, name, host string) *routeEntry {
	if e := checkName(name); e != "" {
		b.problem(ing, gvkIngress, field, "route %s; the route is left out", e)
		return nil
	}
	if b.routeNameTaken(ing, gvkIngress, name, key) {
		b.problem(ing, gvkIngress, field, "route name %q is already used by another route; the route is left out", name)
		return nil
	}
	b.routeKeys[key] = true
	// The route and what its own fields point to are one block, one allocation per route
	// (416 bytes; the FRoute alone is 384 in its size class). The defaults point to the values
	// every route shares (sharedvalues.go), never written through: routeOverrides.apply
	// replaces the pointers it changes.
	v := &ingressRoute{id: kongstate.RouteID(b.opts.Workspace, name), name: name, host: host}
	r := &v.FRoute
	r.Route = kong.Route{
		ID:   &v.id,
		Name: &v.name,
		// Protocols are left unset, as KIC leaves them, so that Kong's default (http, https)
		// applies; konghq.com/protocols and force-ssl-redirect set them (routeOverrides).
		StripPath:         &sharedFalse,
		PreserveHost:      &sharedTrue,
		RegexPriority:     &sharedZero,
		RequestBuffering:  &sharedTrue,
		ResponseBuffering: &sharedTrue,
		Tags:              b.entityTags(ing, gvkIngress),
	}
	if host != "" {
		// Its capacity is 1: a host alias appended (routeOverrides.apply) copies it.
		v.hosts[0] = &v.host
		r.Hosts = v.hosts[:]
	}
	ro.apply(r)
	return &routeEntry{FRoute: r, ing: ing, src: ing, srcGVK: gvkIngress}
}

// unsupportedBackend reports a path whose backend is not a Service. KongServiceFacade
// backends need a feature gate that is off by default in KIC and not implemented here.
func (b *builder) unsupportedBackend(ing *netv1.Ingress, field, p string, res *corev1.TypedLocalObjectReference) {
	switch {
	case res == nil:
		b.problem(ing, gvkIngress, field, "failed to get backend for ingress path %q: backend has neither service nor resource", p)
	case res.Kind == "KongServiceFacade" && strOrEmpty(res.APIGroup) == "incubator.ingress-controller.konghq.com":
		b.problem(ing, gvkIngress, field+".resource", "failed to get backend for ingress path %q: KongServiceFacade is not enabled, please set the \"KongServiceFacade\" feature gate to 'true' to enable it", p)
	default:
		b.problem(ing, gvkIngress, field+".resource", "failed to get backend for ingress path %q: unsupported resource type %s/%s", p, strOrEmpty(res.APIGroup), res.Kind)
	}
}

// normalizePath collapses runs of "/" and makes an empty path "/" (translation-rules.md §3.1).
func normalizePath(p string) string {
	if p == "" {
		return "/"
	}
	if strings.Contains(p, "//") {
		p = multiSlash.ReplaceAllString(p, "/")
	}
	return p
}

var multiSlash = regexp.MustCompile(`/{2,}`)

// kongPaths appends to dst the Kong paths of an Ingress path by pathType (translation-rules.md
// §3.4), at most two: a caller's array on the stack holds them. Regex metacharacters in Exact
// and Prefix paths are not escaped, as in KIC.
func kongPaths(dst []string, p string, pt netv1.PathType) []string {
	switch pt {
	case netv1.PathTypeExact:
		return append(dst, "~/"+strings.TrimLeft(p, "/")+"$")
	case netv1.PathTypePrefix:
		base := strings.Trim(p, "/")
		if base == "" {
			return append(dst, "/")
		}
		return append(dst, "/"+base+"/", "~/"+base+"$")
	default:
		// ImplementationSpecific, and any unknown type, as KIC treats them.
		return append(dst, p)
	}
}

var legacyPlainPath = regexp.MustCompile(`^[a-zA-Z0-9\.\-_~/%]*$`)

// applyRegexPrefix turns the regex-prefix convention into Kong's "~" (translation-rules.md §3.5).
func applyRegexPrefix(x, prefix string, legacy bool) string {
	if strings.HasPrefix(x, prefix) {
		return strings.Replace(x, prefix, "~", 1)
	}
	if legacy && !legacyPlainPath.MatchString(x) && !strings.HasPrefix(x, "~") {
		return "~" + x
	}
	return x
}

// defaultBackend adds the one default backend of the cluster: that of the oldest Ingress
// that has one (translation-rules.md §3.7). The others' are ignored, so each depends on it.
func (b *builder) defaultBackend() {
	var holder *netv1.Ingress
	for _, ing := range b.ingresses {
		if ing.Spec.DefaultBackend == nil {
			continue
		}
		if holder != nil {
			b.contend("the default backend", ing, gvkIngress, holder, gvkIngress)
			continue
		}
		holder = ing
		b.defaultBackendOf(ing)
	}
}

// defaultBackendOf adds ing's default backend.
func (b *builder) defaultBackendOf(ing *netv1.Ingress) {
	db := ing.Spec.DefaultBackend
	facade := db.Service == nil && b.opts.KongServiceFacade && isFacade(db.Resource)
	if db.Service == nil && !facade {
		if db.Resource != nil {
			b.problem(ing, gvkIngress, "spec.defaultBackend.resource", "default backend: unsupported resource type %s/%s", strOrEmpty(db.Resource.APIGroup), db.Resource.Kind)
		} else {
			b.problem(ing, gvkIngress, "spec.defaultBackend", "default backend: no service")
		}
		return
	}
	ro, ok := b.routeAnnotations(ing, gvkIngress)
	if !ok {
		return
	}
	field := "spec.defaultBackend.service"
	var ks *kongService
	if facade {
		field = "spec.defaultBackend.resource"
		ks = b.facadeService(ing, field, db.Resource.Name, false)
	} else {
		ks = b.kongServiceFor(ing, field, db.Service.Name, db.Service.Port, false)
	}
	if ks == nil {
		return
	}
	ks.addReferrer(ing, gvkIngress, field)
	key := "\x01default\x00" + ing.Namespace + "\x00" + ing.Name
	re := b.newRoute(ing, ro, "spec.defaultBackend", key, ing.Namespace+"."+ing.Name, "")
	if re == nil {
		return
	}
	re.Paths = []*string{kong.String("/")}
	re.defaultBackend = true
	ks.routes = append(ks.routes, re)
}

func strOrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// tags are TagsFor(obj), with user tags Kong would refuse left out and reported.
func (b *builder) tags(obj client.Object, gvk schema.GroupVersionKind) []string {
	tags := kongstate.RefFor(obj, kongstate.TagGVK(obj, gvk)).Tags()
	for _, t := range kongstate.UserTags(obj.GetAnnotations()) {
		if e := checkTag(t); e != "" {
			b.problem(obj, gvk, "metadata.annotations["+kongstate.UserTagsAnnotation+"]", "%s; the tag is left out", e)
			continue
		}
		tags = append(tags, t)
	}
	return tags
}
