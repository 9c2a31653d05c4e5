package kongstate

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
)

// This file renders services (with their routes and plugins) and upstreams (with their
// targets) to JSON by hand: byte for byte what encoding/json gives for renderServiceShallow's
// and renderUpstream's results (FService.MarshalJSON, FPlugin.MarshalJSON), without their
// reflection, intermediate copies and the second pass that escapes a body as a JSON string.
// encoding/json over these types was ~90 ms of the 490 ms of CPU a start at 3,000 Ingresses
// took (issue #13), and every changed entity of a round goes through it too.
//
// The field order, omitempty rules and string escaping (<, >, & and U+2028/2029 escaped,
// invalid UTF-8 replaced by U+FFFD) are encoding/json's; TestEncoderMatchesEncodingJSON fills
// every exported field of every type rendered here at random and compares with encoding/json,
// so a field that a go-kong or go-database-reconciler upgrade adds fails it until it is
// encoded here. Values that a translated State holds rarely (health checks, client
// certificates, filter chains, plugin ordering and partials, a route's nested service, a
// target's nested upstream, plugin configuration values of types other than JSON's) are
// handed to encoding/json, which gives the bytes it would give in place.

// jsonAppender appends JSON to b, or, when quote is set, that JSON escaped as the content of
// a JSON string (what AppendJSONStringContent would make of it): the body of a DB-less
// POST /config carries the configuration as a string, and writing the escaped form directly
// spares a pass over every byte. The first error (a NaN or infinite number, or one from
// encoding/json for a value handed to it) stops the encoding (fail).
type jsonAppender struct {
	b     []byte
	quote bool
	// withoutKongDefaults is set for the body a DB-less Kong is sent (the quoted form): the
	// entity is given without the fields Kong fills with the value they hold
	// (kongdefaults.go), and the rendering's own defaults are not filled in.
	withoutKongDefaults bool
	err                 error
}

// quoteMark appends the quotation mark that starts or ends a JSON string.
func (w *jsonAppender) quoteMark() {
	if w.quote {
		w.b = append(w.b, '\\', '"')
	} else {
		w.b = append(w.b, '"')
	}
}

// safeASCII marks the ASCII bytes that encoding/json writes as they are in a string (with
// HTML escaping, its default): printable, not a quote, backslash, <, > or &.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// str appends s as a JSON string, as encoding/json writes it.
func (w *jsonAppender) str(s string) {
	const hex = "0123456789abcdef"
	// esc is the escape's backslash, doubled in the quoted form; a quote or backslash the
	// escape is made of gets its own backslash there too.
	esc := "\\"
	if w.quote {
		esc = "\\\\"
	}
	w.quoteMark()
	b := w.b
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, esc...)
			switch c {
			case '"', '\\':
				if w.quote {
					b = append(b, '\\')
				}
				b = append(b, c)
			case '\b':
				b = append(b, 'b')
			case '\f':
				b = append(b, 'f')
			case '\n':
				b = append(b, 'n')
			case '\r':
				b = append(b, 'r')
			case '\t':
				b = append(b, 't')
			default:
				b = append(b, 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, esc...)
			b = append(b, "ufffd"...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, esc...)
			b = append(b, 'u', '2', '0', '2', hex[r&0xf])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	w.b = append(b, s[start:]...)
	w.quoteMark()
}

func (w *jsonAppender) int(v int64)   { w.b = strconv.AppendInt(w.b, v, 10) }
func (w *jsonAppender) uint(v uint64) { w.b = strconv.AppendUint(w.b, v, 10) }
func (w *jsonAppender) bool(v bool)   { w.b = strconv.AppendBool(w.b, v) }

// float appends f as encoding/json does: like ES6, 'f' format but for very small or large
// magnitudes, with exponents unpadded. NaN and infinities are an error, as there.
func (w *jsonAppender) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		w.fail(&json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)})
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(w.b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	w.b = b
}

// fail stops the encoding with err, as encoding/json stops at its first error (rather than
// going on to what may panic further on: FPlugin.MarshalJSON on a foreign key without an ID).
func (w *jsonAppender) fail(err error) {
	w.err = err
	panic(stopEncoding{})
}

// stopEncoding is fail's panic, recovered by stopped.
type stopEncoding struct{}

// stopped, deferred, recovers fail's panic and sets *err to its error.
func (w *jsonAppender) stopped(err *error) {
	if r := recover(); r != nil {
		if _, ok := r.(stopEncoding); !ok {
			panic(r)
		}
		*err = w.err
	}
}

// marshal appends encoding/json's bytes for v: for the values this file leaves to it.
// encoding/json writes a nested value's bytes as json.Marshal of that value alone (a
// json.Marshaler's output is compacted and HTML-escaped either way).
func (w *jsonAppender) marshal(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.fail(err)
	}
	if w.quote {
		w.b = AppendJSONStringContent(w.b, b)
	} else {
		w.b = append(w.b, b...)
	}
}

// value appends v, a plugin configuration's value: JSON's types (what the configuration holds
// after renderPlugins' copy through encoding/json) by hand, anything else by encoding/json.
func (w *jsonAppender) value(v any) {
	switch v := v.(type) {
	case nil:
		w.b = append(w.b, "null"...)
	case string:
		w.str(v)
	case float64:
		w.float(v)
	case bool:
		w.bool(v)
	case map[string]any:
		w.object(v)
	case kong.Configuration:
		w.object(v)
	case []any:
		if v == nil {
			w.b = append(w.b, "null"...)
			return
		}
		w.array(len(v), func(i int) { w.value(v[i]) })
	default:
		w.marshal(v)
	}
}

// object appends m with its keys sorted, as encoding/json does; nil is null.
func (w *jsonAppender) object(m map[string]any) {
	if m == nil {
		w.b = append(w.b, "null"...)
		return
	}
	members(w, m, w.value)
}

// members appends m as a JSON object, its keys sorted as encoding/json sorts them, each value
// by value.
func members[V any](w *jsonAppender, m map[string]V, value func(V)) {
	w.b = append(w.b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(k)
		w.b = append(w.b, ':')
		value(m[k])
	}
	w.b = append(w.b, '}')
}

// array appends a JSON array of n elements, the i-th by elem(i).
func (w *jsonAppender) array(n int, elem func(i int)) {
	w.b = append(w.b, '[')
	for i := range n {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		elem(i)
	}
	w.b = append(w.b, ']')
}

// fields appends the members of one JSON object: each method appends its member only when
// encoding/json's omitempty keeps it (a nil pointer, an empty slice or map, or an empty
// string field is left out).
type fields struct {
	w    *jsonAppender
	some bool
}

func (w *jsonAppender) open() fields {
	w.b = append(w.b, '{')
	return fields{w: w}
}

func (f *fields) close() { f.w.b = append(f.w.b, '}') }

// key appends the member's name (names are plain ASCII: no escaping).
func (f *fields) key(k string) {
	if f.some {
		f.w.b = append(f.w.b, ',')
	}
	f.some = true
	f.w.quoteMark()
	f.w.b = append(f.w.b, k...)
	f.w.quoteMark()
	f.w.b = append(f.w.b, ':')
}

// member appends member k with value(*p) unless p is nil.
func member[T any](f *fields, k string, p *T, value func(T)) {
	if p != nil {
		f.key(k)
		value(*p)
	}
}

func (f *fields) str(k string, p *string)    { member(f, k, p, f.w.str) }
func (f *fields) int64(k string, p *int64)   { member(f, k, p, f.w.int) }
func (f *fields) uint64(k string, p *uint64) { member(f, k, p, f.w.uint) }
func (f *fields) bool(k string, p *bool)     { member(f, k, p, f.w.bool) }
func (f *fields) float(k string, p *float64) { member(f, k, p, f.w.float) }
func (f *fields) int(k string, p *int)       { member(f, k, p, func(v int) { f.w.int(int64(v)) }) }

func (f *fields) nonEmpty(k, s string) {
	if s != "" {
		f.key(k)
		f.w.str(s)
	}
}

// strs appends a []*string member: a nil element is null.
func (f *fields) strs(k string, s []*string) {
	if len(s) == 0 {
		return
	}
	f.key(k)
	f.w.array(len(s), func(i int) {
		if s[i] == nil {
			f.w.b = append(f.w.b, "null"...)
		} else {
			f.w.str(*s[i])
		}
	})
}

// marshal appends member k with encoding/json's bytes for v; the caller decides whether
// omitempty keeps it.
func (f *fields) marshal(k string, v any) {
	f.key(k)
	f.w.marshal(v)
}

// service appends svc as renderServiceShallow renders it, encoded as
// FService.MarshalJSON does (its copy into go-database-reconciler's service type: the client
// certificate by ID, empty SANs and the url sugar left out).
func (w *jsonAppender) service(svc *file.FService) {
	f := w.open()
	if c := svc.ClientCertificate; c != nil && c.ID != nil && *c.ID != "" {
		f.str("client_certificate", c.ID)
	}
	f.int("connect_timeout", svc.ConnectTimeout)
	f.int("created_at", svc.CreatedAt)
	f.str("host", svc.Host)
	f.str("id", svc.ID)
	f.str("name", svc.Name)
	f.str("path", svc.Path)
	f.int("port", svc.Port)
	f.str("protocol", svc.Protocol)
	f.int("read_timeout", svc.ReadTimeout)
	f.int("retries", svc.Retries)
	f.int("updated_at", svc.UpdatedAt)
	f.int("write_timeout", svc.WriteTimeout)
	f.strs("tags", svc.Tags)
	// copyToService keeps SANs that are not reflect.DeepEqual to kong.SANs{}: those with a
	// slice, even an empty one.
	if s := svc.TLSSANs; s != nil && (s.DNSNames != nil || s.Uris != nil) {
		f.key("tls_sans")
		sans := w.open()
		sans.strs("dnsnames", s.DNSNames)
		sans.strs("uris", s.Uris)
		sans.close()
	}
	f.bool("tls_verify", svc.TLSVerify)
	f.int("tls_verify_depth", svc.TLSVerifyDepth)
	f.strs("ca_certificates", svc.CACertificates)
	f.bool("enabled", svc.Enabled)
	if len(svc.Routes) > 0 {
		f.key("routes")
		order := orderDesc(len(svc.Routes), func(i int) string { return str(svc.Routes[i].Name) })
		w.array(len(svc.Routes), func(i int) { w.route(svc.Routes[at(order, i)]) })
	}
	w.plugins(&f, svc.Plugins)
	if len(svc.FilterChains) > 0 {
		f.marshal("filter_chains", svc.FilterChains)
	}
	f.close()
}

// route appends r with fillRouteDefaults' defaults.
func (w *jsonAppender) route(r *file.FRoute) {
	f := w.open()
	f.int("created_at", r.CreatedAt)
	f.str("expression", r.Expression)
	f.strs("hosts", r.Hosts)
	if len(r.Headers) > 0 {
		f.key("headers")
		w.headers(r.Headers)
	}
	f.str("id", r.ID)
	f.str("name", r.Name)
	f.strs("methods", r.Methods)
	f.strs("paths", r.Paths)
	if r.PathHandling == nil && r.Expression == nil {
		if !w.withoutKongDefaults {
			f.str("path_handling", &defaultPathHandling)
		}
	} else {
		f.str("path_handling", r.PathHandling)
	}
	f.bool("preserve_host", r.PreserveHost)
	f.uint64("priority", r.Priority)
	f.strs("protocols", r.Protocols)
	f.int("regex_priority", r.RegexPriority)
	if r.Service != nil {
		f.marshal("service", r.Service)
	}
	f.bool("strip_path", r.StripPath)
	f.int("updated_at", r.UpdatedAt)
	f.strs("snis", r.SNIs)
	if len(r.Sources) > 0 {
		f.marshal("sources", r.Sources)
	}
	if len(r.Destinations) > 0 {
		f.marshal("destinations", r.Destinations)
	}
	f.strs("tags", r.Tags)
	if r.HTTPSRedirectStatusCode == nil {
		if !w.withoutKongDefaults {
			f.int("https_redirect_status_code", &defaultHTTPSRedirectStatusCode)
		}
	} else {
		f.int("https_redirect_status_code", r.HTTPSRedirectStatusCode)
	}
	f.bool("request_buffering", r.RequestBuffering)
	f.bool("response_buffering", r.ResponseBuffering)
	w.plugins(&f, r.Plugins)
	if len(r.FilterChains) > 0 {
		f.marshal("filter_chains", r.FilterChains)
	}
	f.close()
}

// The defaults of fillRouteDefaults, as values to point to.
var (
	defaultHTTPSRedirectStatusCode = 426
	defaultPathHandling            = "v0"
)

// headers appends a route's headers: keys sorted, a nil list null.
func (w *jsonAppender) headers(h map[string][]string) {
	members(w, h, func(vs []string) {
		if vs == nil {
			w.b = append(w.b, "null"...)
			return
		}
		w.array(len(vs), func(i int) { w.str(vs[i]) })
	})
}

// plugins appends the plugins member of a service or route as renderPlugins renders them:
// its defaults, its order, and their configurations as its copy through encoding/json leaves
// them.
func (w *jsonAppender) plugins(f *fields, ps []*file.FPlugin) {
	if len(ps) == 0 {
		return
	}
	f.key("plugins")
	order := orderDesc(len(ps), func(i int) string { return str(ps[i].Name) })
	w.array(len(ps), func(i int) { w.plugin(ps[at(order, i)]) })
}

// plugin appends p as renderPlugins renders it (fillPluginDefaults' defaults, its deep copy's
// configuration), encoded as FPlugin.MarshalJSON does (its copy into go-database-reconciler's
// foo type: foreign keys by ID, which it reads without a nil check; no created_at, condition or
// model, which it does not copy).
func (w *jsonAppender) plugin(p *file.FPlugin) {
	f := w.open()
	f.str("id", p.ID)
	f.str("name", p.Name)
	f.str("instance_name", p.InstanceName)
	if config := copiedConfig(p.Config); len(config) > 0 {
		f.key("config")
		w.object(config)
	}
	if p.Service != nil {
		f.nonEmpty("service", *p.Service.ID)
	}
	if p.Consumer != nil {
		f.nonEmpty("consumer", *p.Consumer.ID)
	}
	if p.ConsumerGroup != nil {
		f.nonEmpty("consumer_group", *p.ConsumerGroup.ID)
	}
	if p.Route != nil {
		f.nonEmpty("route", *p.Route.ID)
	}
	f.bool("enabled", p.Enabled) // unset: left to Kong's default (fillPluginDefaults)
	// run_on: fillPluginDefaults drops it.
	if p.Ordering != nil {
		f.marshal("ordering", p.Ordering)
	}
	f.strs("protocols", p.Protocols) // unset: the plugin schema's default, filled by Kong
	f.strs("tags", p.Tags)
	if len(p.Partials) > 0 {
		// A partial's configuration is copied through encoding/json too.
		f.marshal("partials", p.DeepCopy().Partials)
	}
	f.str("_config", p.ConfigSource)
	f.close()
}

// copiedConfig is config as kong.Configuration's DeepCopy (a round trip through
// encoding/json) leaves it, for encoding: config itself when that round trip cannot change its
// bytes, which is so for what a KongPlugin's JSON decodes to (jsonNative), and saves a
// marshal and an unmarshal per plugin.
func copiedConfig(config kong.Configuration) kong.Configuration {
	if len(config) == 0 || jsonNative(map[string]any(config)) {
		return config
	}
	return config.DeepCopy()
}

// jsonNative reports whether v is made of what encoding/json decodes into an any (maps of
// string keys, lists, strings, float64s, booleans, nil), with valid UTF-8 strings and finite
// numbers: a value that encodes to the same bytes after a round trip through encoding/json.
// (Invalid UTF-8 comes back as U+FFFD characters, written as they are rather than as the
// \ufffd escape; other types come back as these, possibly encoded otherwise; an integer
// comes back as a float64, possibly rounded; a NaN makes the round trip fail.)
func jsonNative(v any) bool {
	switch v := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(v)
	case float64:
		return !math.IsInf(v, 0) && !math.IsNaN(v)
	case []any:
		for _, e := range v {
			if !jsonNative(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if !utf8.ValidString(k) || !jsonNative(e) {
				return false
			}
		}
		return true
	}
	return false
}

// upstream appends u as renderUpstream renders it: the default algorithm, targets by
// descending target.
func (w *jsonAppender) upstream(u *file.FUpstream) {
	f := w.open()
	f.str("id", u.ID)
	f.str("name", u.Name)
	f.str("host_header", u.HostHeader)
	if u.ClientCertificate != nil {
		f.marshal("client_certificate", u.ClientCertificate)
	}
	if u.Algorithm == nil {
		if !w.withoutKongDefaults {
			f.str("algorithm", &defaultAlgorithm)
		}
	} else {
		f.str("algorithm", u.Algorithm)
	}
	f.int("slots", u.Slots)
	if u.Healthchecks != nil {
		f.marshal("healthchecks", u.Healthchecks)
	}
	f.int64("created_at", u.CreatedAt)
	f.str("hash_on", u.HashOn)
	f.str("hash_fallback", u.HashFallback)
	f.str("hash_on_header", u.HashOnHeader)
	f.str("hash_fallback_header", u.HashFallbackHeader)
	f.str("hash_on_cookie", u.HashOnCookie)
	f.str("hash_on_cookie_path", u.HashOnCookiePath)
	f.str("hash_on_query_arg", u.HashOnQueryArg)
	f.str("hash_fallback_query_arg", u.HashFallbackQueryArg)
	f.str("hash_on_uri_capture", u.HashOnURICapture)
	f.str("hash_fallback_uri_capture", u.HashFallbackURICapture)
	f.bool("use_srv_name", u.UseSrvName)
	f.str("sticky_sessions_cookie", u.StickySessionsCookie)
	f.str("sticky_sessions_cookie_path", u.StickySessionsCookiePath)
	f.strs("tags", u.Tags)
	if len(u.Targets) > 0 {
		f.key("targets")
		order := orderDesc(len(u.Targets), func(i int) string { return str(u.Targets[i].Target.Target) })
		w.array(len(u.Targets), func(i int) { w.target(u.Targets[at(order, i)]) })
	}
	f.close()
}

// defaultAlgorithm is renderUpstream's default, as a value to point to.
var defaultAlgorithm = "round-robin"

func (w *jsonAppender) target(t *file.FTarget) {
	f := w.open()
	f.float("created_at", t.CreatedAt)
	f.str("id", t.ID)
	f.str("target", t.Target.Target)
	if t.Upstream != nil {
		f.marshal("upstream", t.Upstream)
	}
	f.int("weight", t.Weight)
	f.strs("tags", t.Tags)
	f.bool("failover", t.Failover)
	f.close()
}

// orderDesc is the indexes 0..n-1 ordered by key, descending, stable: sort.SliceStable's
// order in renderServiceShallow and renderUpstream; nil when that is the list's own order
// (one route, or a translated service's routes), which then costs neither a sort nor a slice.
func orderDesc(n int, key func(int) string) []int {
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = key(i-1) >= key(i)
	}
	if sorted {
		return nil
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(key(b), key(a)) })
	return order
}

// at is the index of the i-th element in order (orderDesc's result).
func at(order []int, i int) int {
	if order == nil {
		return i
	}
	return order[i]
}

// appendService appends svc's rendering (as json.Marshal(renderServiceShallow(svc)) gives
// it), escaped as the content of a JSON string when quote is set, and then without what Kong
// fills the same (the DB-less body, as State.DBLessConfig renders it).
func appendService(dst []byte, svc *file.FService, quote bool) (_ []byte, err error) {
	w := jsonAppender{b: dst, quote: quote, withoutKongDefaults: quote}
	defer w.stopped(&err)
	if quote {
		svc = withoutServiceDefaults(svc)
	}
	w.service(svc)
	return w.b, nil
}

// appendUpstream appends u's rendering (as json.Marshal(renderUpstream(u)) gives it),
// escaped as the content of a JSON string when quote is set, and then without what Kong fills
// the same.
func appendUpstream(dst []byte, u *file.FUpstream, quote bool) (_ []byte, err error) {
	w := jsonAppender{b: dst, quote: quote, withoutKongDefaults: quote}
	defer w.stopped(&err)
	if quote {
		u = withoutUpstreamDefaults(u)
	}
	w.upstream(u)
	return w.b, nil
}

// appendPlugin appends p's rendering as a top-level plugin (as json.Marshal of Content's copy
// with fillPluginDefaults' defaults gives it), escaped as the content of a JSON string when
// quote is set, and then without what Kong fills the same.
func appendPlugin(dst []byte, p *file.FPlugin, quote bool) (_ []byte, err error) {
	w := jsonAppender{b: dst, quote: quote, withoutKongDefaults: quote}
	defer w.stopped(&err)
	if quote {
		p = withoutPluginDefaults(p)
	}
	w.plugin(p)
	return w.b, nil
}

// RepairUTF8 is s as the rendering sends it to Kong: each byte that is not part of valid
// UTF-8 becomes U+FFFD, as encoding/json (and encodeString) write it. Two values that differ
// only in such bytes are one value in Kong.
func RepairUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
