package kongstate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// randomFiller fills values of any type by reflection: every exported field of every struct,
// at any depth, gets a random value (nil, zero, empty or not), so that a field the hand
// encoder of encode.go does not know about (one a go-kong or go-database-reconciler upgrade
// adds, or one it forgets) shows up in encoding/json's bytes and not in the encoder's, and
// TestEncoderMatchesEncodingJSON fails. A kind it cannot fill fails the test too, so that a
// new field is never silently left zero.
type randomFiller struct {
	t *testing.T
	r *rand.Rand
}

// neverNil are the element types of the lists a State never holds nil in (the renderers
// dereference them, as State.Content does).
var neverNil = map[reflect.Type]bool{
	reflect.TypeFor[*file.FRoute]():  true,
	reflect.TypeFor[*file.FPlugin](): true,
	reflect.TypeFor[*file.FTarget](): true,
	reflect.TypeFor[*kong.Filter]():  true,
}

// foreignKeys are the types a plugin or filter chain refers to by ID, which
// go-database-reconciler's MarshalJSON reads without a nil check: both encoders panic on one
// without an ID (which TestEncoderMatchesEncodingJSON checks too), so they rarely lack it.
var foreignKeys = map[reflect.Type]bool{
	reflect.TypeFor[kong.Service]():       true,
	reflect.TypeFor[kong.Route]():         true,
	reflect.TypeFor[kong.Consumer]():      true,
	reflect.TypeFor[kong.ConsumerGroup](): true,
}

func (f randomFiller) fill(v reflect.Value, depth int) {
	r := f.r
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 8 || r.IntN(5) == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		if v.Type() == reflect.TypeFor[*json.RawMessage]() { // valid JSON, or encoding/json fails
			b, _ := json.Marshal(f.any(depth))
			v.Elem().SetBytes(b)
			return
		}
		if r.IntN(10) > 0 { // else a pointer to a zero value: an empty struct, "", 0, false
			f.fill(v.Elem(), depth+1)
		}
		if foreignKeys[v.Type().Elem()] {
			if id := v.Elem().FieldByName("ID"); id.IsNil() && r.IntN(1000) > 0 {
				id.Set(reflect.ValueOf(kong.String(f.string())))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		switch r.IntN(6) {
		case 0:
			return // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, r.IntN(2)))
			return
		}
		n := 1 + r.IntN(3)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			e := v.Index(i)
			f.fill(e, depth+1)
			if e.Kind() == reflect.Pointer && e.IsNil() && (neverNil[e.Type()] || r.IntN(3) > 0) {
				e.Set(reflect.New(e.Type().Elem()))
				f.fill(e.Elem(), depth+1)
			}
		}
	case reflect.Map:
		switch r.IntN(5) {
		case 0:
			return
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		for range 1 + r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			f.fill(k, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(e, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		if x := f.any(depth); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.String:
		v.SetString(f.string())
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.int(v.Type().Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.int(v.Type().Bits())) >> (64 - v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(f.float())
	default:
		f.t.Fatalf("randomFiller cannot fill a %s (%s): teach it, and the encoder, this kind", v.Kind(), v.Type())
	}
}

// stringPieces are what random strings are made of: what JSON or encoding/json escapes
// (quotes, backslashes, control bytes, <, >, &, U+2028/2029), invalid UTF-8 (lone bytes,
// truncated sequences, an encoded surrogate), multi-byte characters and plain text.
var stringPieces = []string{
	"", "a", "Z", "9", "-", "/", "<", ">", "&", "\"", "\\", "'", "{", "}", ":", ",",
	"\x00", "\x01", "\x1f", "\b", "\f", "\n", "\r", "\t", "\x7f",
	"\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\u2028", "\u2029", "\u2027", "\u202a",
	"é", "日本", "\U0001F600", "\ufffd", "example.com", "k8s-name:foo", "v0",
}

func (f randomFiller) string() string {
	var b strings.Builder
	for range f.r.IntN(7) {
		b.WriteString(stringPieces[f.r.IntN(len(stringPieces))])
	}
	return b.String()
}

func (f randomFiller) int(bits int) int64 {
	switch f.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return int64(f.r.IntN(1000)) - 500
	case 2:
		return math.MaxInt64 >> (64 - bits)
	case 3:
		return math.MinInt64 >> (64 - bits)
	}
	return f.r.Int64() >> (64 - bits)
}

func (f randomFiller) float() float64 {
	switch f.r.IntN(14) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return math.NaN()
	case 3:
		return math.Inf(1 - 2*f.r.IntN(2))
	case 4:
		return 1e21
	case 5:
		return 1e-6
	case 6:
		return math.Nextafter(1e21, 0)
	case 7:
		return math.Nextafter(1e-6, 0)
	case 8:
		return float64(f.r.IntN(100000))
	case 9:
		return math.MaxFloat64
	case 10:
		return math.SmallestNonzeroFloat64
	}
	// Any magnitude, fractional or not, either sign.
	return (f.r.Float64() - 0.5) * math.Pow(10, float64(f.r.IntN(60)-30))
}

// any is a random plugin configuration value: JSON's types, nested, and some others a
// configuration built in Go may hold.
func (f randomFiller) any(depth int) any {
	if depth > 10 {
		return f.string()
	}
	switch f.r.IntN(13) {
	case 0:
		return nil
	case 1:
		return f.r.IntN(2) == 0
	case 2:
		return f.float()
	case 3, 4:
		return f.string()
	case 5:
		return int(f.int(64))
	case 6:
		return []string{f.string(), f.string()}
	case 7:
		return map[string]string{f.string(): f.string()}
	case 8:
		return json.Number("12.5e3")
	case 9, 10:
		var l []any
		if f.r.IntN(4) > 0 {
			l = make([]any, f.r.IntN(4))
			for i := range l {
				l[i] = f.any(depth + 1)
			}
		}
		return l
	}
	var m map[string]any
	if f.r.IntN(5) > 0 {
		m = map[string]any{}
		for range f.r.IntN(5) {
			m[f.string()] = f.any(depth + 1)
		}
	}
	if f.r.IntN(3) == 0 {
		return kong.Configuration(m)
	}
	return m
}

// outcome is what rendering gave: the bytes, or that it failed or panicked.
func outcome(render func() ([]byte, error)) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = "panic"
		}
	}()
	b, err := render()
	if err != nil {
		return "error"
	}
	return string(b)
}

// renderedService is renderServiceShallow's copy of svc, without Kong's defaults for the
// DB-less body (as State.DBLessConfig renders it).
func renderedService(svc *file.FService, dbless bool) file.FService {
	r := renderServiceShallow(svc)
	if dbless {
		return *withoutServiceDefaults(&r)
	}
	return r
}

// renderedUpstream is renderUpstream's copy of u, without Kong's defaults for the DB-less body.
func renderedUpstream(u *file.FUpstream, dbless bool) file.FUpstream {
	r := renderUpstream(u)
	if dbless {
		return *withoutUpstreamDefaults(&r)
	}
	return r
}

// renderEncodingJSON is how the Renderer rendered an entity before encode.go: encoding/json
// over renderServiceShallow's or renderUpstream's copy, escaped for the quoted form.
func renderEncodingJSON(v any, quote bool) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || !quote {
		return b, err
	}
	return AppendJSONStringContent(nil, b), nil
}

// TestEncoderMatchesEncodingJSON compares the hand encoder with encoding/json on thousands of
// services (with routes and plugins) and upstreams (with targets) whose every exported field,
// at every depth, is filled at random (randomFiller), in both forms (plain, and escaped as a
// JSON string's content): the same bytes, or both failing. A field added to one of these
// types by a go-kong or go-database-reconciler upgrade fails this test until encode.go
// encodes it.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	cases := 1000
	if testing.Short() {
		cases = 300
	}
	f := randomFiller{t: t, r: rand.New(rand.NewPCG(13, 2026))}
	outcomes := map[string]int{}
	// encodingJSON renders without Kong's defaults for the quoted form, the DB-less body.
	check := func(i int, what string, encodingJSON func(withoutKongDefaults bool) ([]byte, error), encoder func([]byte, bool) ([]byte, error)) {
		for _, quote := range []bool{false, true} {
			plain := outcome(func() ([]byte, error) { return encodingJSON(quote) })
			if !quote {
				outcomes[plain]++
			}
			want := plain
			if quote && plain != "error" && plain != "panic" {
				want = string(AppendJSONStringContent(nil, []byte(plain)))
			}
			// Appended to bytes already there, as the Renderer does.
			got := outcome(func() ([]byte, error) { return encoder([]byte(","), quote) })
			if got != "error" && got != "panic" {
				got = strings.TrimPrefix(got, ",")
			}
			if got != want {
				t.Fatalf("case %d, quoted %v: %s\n got %s\nwant %s", i, quote, what, got, want)
			}
		}
	}
	for i := range cases {
		var svc file.FService
		f.fill(reflect.ValueOf(&svc).Elem(), 0)
		check(i, "service", func(dbless bool) ([]byte, error) { return json.Marshal(renderedService(&svc, dbless)) },
			func(dst []byte, quote bool) ([]byte, error) { return appendService(dst, &svc, quote) })
		var u file.FUpstream
		f.fill(reflect.ValueOf(&u).Elem(), 0)
		check(i, "upstream", func(dbless bool) ([]byte, error) { return json.Marshal(renderedUpstream(&u, dbless)) },
			func(dst []byte, quote bool) ([]byte, error) { return appendUpstream(dst, &u, quote) })
	}
	t.Logf("%d cases; renderings that failed (a NaN or infinity) %d, panicked %d", cases, outcomes["error"], outcomes["panic"])
}

// TestEncoderEdgeCases: the cases the encoder decides on explicitly, each against
// encoding/json (the random cases cover them too, but not by name).
func TestEncoderEdgeCases(t *testing.T) {
	empty := []*string{}
	services := map[string]*file.FService{
		"zero":                                 {},
		"url sugar dropped":                    {URL: kong.String("http://a:1/b"), Service: kong.Service{URL: kong.String("http://c")}},
		"client certificate by ID":             {Service: kong.Service{ClientCertificate: &kong.Certificate{ID: kong.String("c1"), Cert: kong.String("x")}}},
		"client certificate without ID":        {Service: kong.Service{ClientCertificate: &kong.Certificate{ID: kong.String("")}}},
		"empty SANs dropped":                   {Service: kong.Service{TLSSANs: &kong.SANs{}}},
		"SANs with an empty list kept":         {Service: kong.Service{TLSSANs: &kong.SANs{DNSNames: empty}}},
		"empty lists omitted":                  {Service: kong.Service{Tags: empty}, Routes: []*file.FRoute{}, Plugins: []*file.FPlugin{}},
		"route defaults":                       {Routes: []*file.FRoute{{}, {Route: kong.Route{Expression: kong.String("true")}}}},
		"routes by name, descending, stable":   {Routes: []*file.FRoute{{Route: kong.Route{Name: kong.String("a"), ID: kong.String("1")}}, {Route: kong.Route{Name: kong.String("b")}}, {Route: kong.Route{Name: kong.String("a"), ID: kong.String("2")}}}},
		"headers sorted, nil and empty values": {Routes: []*file.FRoute{{Route: kong.Route{Headers: map[string][]string{"b": nil, "a": {}, "<": {"&", "\u2028"}}}}}},
		"route's nested empty service":         {Routes: []*file.FRoute{{Route: kong.Route{Service: &kong.Service{}}}}},
		"plugin defaults and order": {Plugins: []*file.FPlugin{
			{Plugin: kong.Plugin{Name: kong.String("a"), RunOn: kong.String("first"), Config: kong.Configuration{}}},
			{Plugin: kong.Plugin{Name: kong.String("b"), Enabled: kong.Bool(false), Protocols: empty, CreatedAt: kong.Int(1), Condition: kong.String("c")}},
			{Plugin: kong.Plugin{Name: kong.String("a"), Service: &kong.Service{ID: kong.String("")}, Config: kong.Configuration{"x": "\xff", "n": 1e21, "i": 3}}},
		}},
	}
	for name, svc := range services {
		for _, quote := range []bool{false, true} {
			want, err := renderEncodingJSON(renderedService(svc, quote), quote)
			require.NoError(t, err, name)
			got, err := appendService(nil, svc, quote)
			require.NoError(t, err, name)
			require.Equal(t, string(want), string(got), "%s, quoted %v", name, quote)
		}
	}
	upstreams := map[string]*file.FUpstream{
		"zero":                                {},
		"empty health checks and certificate": {Upstream: kong.Upstream{Healthchecks: &kong.Healthcheck{}, ClientCertificate: &kong.Certificate{}}},
		"targets by target, descending, stable": {Targets: []*file.FTarget{
			{Target: kong.Target{Target: kong.String("a"), ID: kong.String("1")}}, {}, {Target: kong.Target{Target: kong.String("b")}},
			{Target: kong.Target{Target: kong.String("a"), ID: kong.String("2"), CreatedAt: kong.Float64(1e-7)}},
		}},
	}
	for name, u := range upstreams {
		for _, quote := range []bool{false, true} {
			want, err := renderEncodingJSON(renderedUpstream(u, quote), quote)
			require.NoError(t, err, name)
			got, err := appendUpstream(nil, u, quote)
			require.NoError(t, err, name)
			require.Equal(t, string(want), string(got), "%s, quoted %v", name, quote)
		}
	}
	_, err := appendUpstream(nil, &file.FUpstream{Targets: []*file.FTarget{{Target: kong.Target{CreatedAt: kong.Float64(math.NaN())}}}}, true)
	require.Error(t, err, "a NaN, as encoding/json")
}

// TestEncoderValuesMatchEncodingJSON compares the encoding of plugin configuration values
// (any type, nested) and of strings with encoding/json's, in both forms.
func TestEncoderValuesMatchEncodingJSON(t *testing.T) {
	f := randomFiller{t: t, r: rand.New(rand.NewPCG(7, 13))}
	for i := range 10000 {
		v := f.any(0)
		if i%2 == 0 {
			v = f.string()
		}
		for _, quote := range []bool{false, true} {
			want := outcome(func() ([]byte, error) { return renderEncodingJSON(v, quote) })
			got := outcome(func() (_ []byte, err error) {
				w := jsonAppender{quote: quote}
				defer w.stopped(&err)
				w.value(v)
				return w.b, nil
			})
			require.Equal(t, want, got, "case %d, quoted %v: %#v", i, quote, v)
		}
	}
}

// TestCopiedConfigEncodesAsItsDeepCopy: a plugin configuration that the encoder does not copy
// (jsonNative) encodes to the bytes of its copy through encoding/json, which renderPlugins
// encodes; random configurations and ones decoded from JSON, as a KongPlugin's are.
func TestCopiedConfigEncodesAsItsDeepCopy(t *testing.T) {
	f := randomFiller{t: t, r: rand.New(rand.NewPCG(11, 17))}
	native := 0
	for i := range 10000 {
		config := kong.Configuration{f.string(): f.any(0), f.string(): f.any(0)}
		if i%2 == 0 {
			b, err := json.Marshal(config)
			if err != nil {
				continue
			}
			config = nil
			require.NoError(t, json.Unmarshal(b, &config))
		}
		if jsonNative(map[string]any(config)) {
			native++
		}
		want, wantErr := json.Marshal(config.DeepCopy())
		got, gotErr := json.Marshal(copiedConfig(config))
		require.Equal(t, wantErr == nil, gotErr == nil, "case %d: %#v", i, config)
		require.Equal(t, string(want), string(got), "case %d: %#v", i, config)
	}
	require.Greater(t, native, 2500, "too few configurations are encoded without a copy to check it")
}

// TestRendererMatchesDeclarativeConfigOnRandomStates renders whole States of random services,
// upstreams, consumers, consumer groups, plugins, certificates and vaults with a Renderer (the hand encoder) and with State.DeclarativeConfig
// (encoding/json throughout): the same bytes, in both forms.
func TestRendererMatchesDeclarativeConfigOnRandomStates(t *testing.T) {
	f := randomFiller{t: t, r: rand.New(rand.NewPCG(3, 5))}
	for i := range 200 {
		s := &State{}
		for range 1 + f.r.IntN(4) {
			var svc file.FService
			f.fill(reflect.ValueOf(&svc).Elem(), 0)
			// Foreign keys without IDs and filter chains without filters' configurations panic
			// in go-database-reconciler's MarshalJSON (TestEncoderMatchesEncodingJSON checks
			// that the hand encoder panics too).
			svc.Plugins, svc.FilterChains = nil, nil
			for _, r := range svc.Routes {
				r.Plugins, r.FilterChains = nil, nil
			}
			s.Services = append(s.Services, &svc)
			var u file.FUpstream
			f.fill(reflect.ValueOf(&u).Elem(), 0)
			s.Upstreams = append(s.Upstreams, &u)
			// The other lists the Renderer keeps the bytes of, encoded by encoding/json
			// (but plugins, by the hand encoder).
			var c file.FConsumer
			f.fill(reflect.ValueOf(&c).Elem(), 0)
			c.Plugins = nil
			c.Groups = slices.DeleteFunc(c.Groups, func(g *kong.ConsumerGroup) bool { return g == nil }) // as translated
			s.Consumers = append(s.Consumers, &c)
			var g file.FConsumerGroupObject
			f.fill(reflect.ValueOf(&g).Elem(), 0)
			s.ConsumerGroups = append(s.ConsumerGroups, &g)
			var p file.FPlugin
			f.fill(reflect.ValueOf(&p).Elem(), 0)
			p.Service, p.Route, p.Consumer, p.ConsumerGroup = nil, nil, nil, nil
			switch f.r.IntN(3) {
			case 0:
				p.Consumer = &kong.Consumer{ID: kong.String("c<&>")}
			case 1:
				p.Service, p.Route = &kong.Service{ID: kong.String("s")}, &kong.Route{ID: kong.String("r")}
			}
			s.Plugins = append(s.Plugins, &p)
			var cert file.FCertificate
			f.fill(reflect.ValueOf(&cert).Elem(), 0)
			s.Certificates = append(s.Certificates, &cert)
			var ca file.FCACertificate
			f.fill(reflect.ValueOf(&ca).Elem(), 0)
			s.CACertificates = append(s.CACertificates, &ca)
			var v file.FVault
			f.fill(reflect.ValueOf(&v).Elem(), 0)
			s.Vaults = append(s.Vaults, &v)
		}
		want, err := s.DeclarativeConfig()
		r := &Renderer{}
		got, gotErr := r.DeclarativeConfig(s)
		if err != nil { // a NaN or an infinity
			require.Error(t, gotErr, "state %d", i)
			continue
		}
		require.NoError(t, gotErr)
		require.Equal(t, string(want), string(got), "state %d", i)
		quoted, err := r.QuotedDeclarativeConfig(s, `{"config":"`, `"}`)
		require.NoError(t, err)
		wantDBLess, err := s.DBLessConfig()
		require.NoError(t, err)
		require.Equal(t, string(QuotedBody(wantDBLess, `{"config":"`, `"}`)), quoted.String(), "state %d", i)
	}
}

// FuzzEncodeString checks the string encoder against encoding/json on any bytes, in both
// forms.
func FuzzEncodeString(f *testing.F) {
	for _, s := range stringPieces {
		f.Add(s + "x" + s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, quote := range []bool{false, true} {
			want, _ := renderEncodingJSON(s, quote)
			w := jsonAppender{quote: quote}
			w.str(s)
			if string(w.b) != string(want) {
				t.Fatalf("quoted %v: %q\n got %s\nwant %s", quote, s, w.b, want)
			}
		}
	})
}

// BenchmarkAppendServiceWithPlugins encodes a service with two routes, each with a plugin
// (a configuration as a KongPlugin's JSON decodes), as a round does for each changed one.
func BenchmarkAppendServiceWithPlugins(b *testing.B) {
	plugin := func(name string) *file.FPlugin {
		var config kong.Configuration
		if err := json.Unmarshal([]byte(`{"minute":10,"policy":"local","limit_by":"header","header_name":"x-user","hide_client_headers":false,"error_message":"API rate limit exceeded"}`), &config); err != nil {
			b.Fatal(err)
		}
		return &file.FPlugin{Plugin: kong.Plugin{Name: kong.String(name), Config: config, Tags: kong.StringSlice("k8s-name:limit", "k8s-namespace:default")}}
	}
	svc := &file.FService{Service: kong.Service{Name: kong.String("default.echo.80"), Host: kong.String("echo.default.80.svc"), Port: kong.Int(80)}}
	for _, name := range []string{"default.echo.echo.example.com.80", "default.echo.echo.example.com.443"} {
		svc.Routes = append(svc.Routes, &file.FRoute{
			Route:   kong.Route{Name: kong.String(name), Paths: kong.StringSlice("/"), Hosts: kong.StringSlice("echo.example.com")},
			Plugins: []*file.FPlugin{plugin("rate-limiting"), plugin("key-auth")},
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := appendService(nil, svc, true); err != nil {
			b.Fatal(err)
		}
	}
}

// RepairUTF8 is what the rendering makes of a string: each invalid byte a U+FFFD, as
// encoding/json writes it.
func TestRepairUTF8MatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"plain", "caf\xe9", "\xff\xfe", "a\xc3", "ok\u00e9\xffend", "\xed\xa0\x80"} {
		encoded, err := json.Marshal(s)
		require.NoError(t, err)
		var kong string // what Kong reads
		require.NoError(t, json.Unmarshal(encoded, &kong))
		require.Equal(t, kong, RepairUTF8(s), "%q", s)
		require.True(t, utf8.ValidString(RepairUTF8(s)))
	}
}
