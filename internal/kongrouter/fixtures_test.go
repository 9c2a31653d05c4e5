package kongrouter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/yaml"
)

// kongSpecFixture is one test of Kong's spec/01-unit/08-router_spec.lua, restated as data
// (testdata/kong/README.md).
type kongSpecFixture struct {
	Origin struct {
		File string `json:"file"`
		Line int    `json:"line"`
		Test string `json:"test"`
	} `json:"origin"`
	Flavors   []string          `json:"flavors"`
	Subsystem string            `json:"subsystem"`
	Skip      string            `json:"skip"`
	Routes    []*kong.Route     `json:"routes"`
	Generate  []fixtureGenerate `json:"generate"`
	Checks    []fixtureCheck    `json:"checks"`

	path      string
	generated []*kong.Route
}

type fixtureGenerate struct {
	Count int             `json:"count"`
	Route json.RawMessage `json:"route"`
}

type fixtureCheck struct {
	Call    string          `json:"call"`
	It      string          `json:"it"`
	Flavors []string        `json:"flavors"`
	Note    string          `json:"note"`
	Route   string          `json:"route"`
	Routes  []*kong.Route   `json:"routes"`
	Request *fixtureRequest `json:"request"`
	Expect  fixtureExpect   `json:"expect"`
}

type fixtureRequest struct {
	Method  string                     `json:"method"`
	URI     string                     `json:"uri"`
	URIHex  string                     `json:"uri_hex"`
	Host    *string                    `json:"host"`
	Scheme  string                     `json:"scheme"`
	SrcIP   string                     `json:"src_ip"`
	SrcPort int                        `json:"src_port"`
	DstIP   string                     `json:"dst_ip"`
	DstPort int                        `json:"dst_port"`
	SNI     string                     `json:"sni"`
	Headers map[string]fixtureValues   `json:"headers"`
	Queries map[string]fixtureValues   `json:"queries"`
	Vars    map[string]json.RawMessage `json:"vars"`
}

// fixtureValues is a header's or query argument's values: a string, a list of strings, or a
// Lua `true` (an argument without a value, which Kong's router reads as "").
type fixtureValues []string

func (v *fixtureValues) UnmarshalJSON(b []byte) error {
	var one any
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	var out []string
	add := func(x any) error {
		switch x := x.(type) {
		case string:
			out = append(out, x)
		case bool:
			if !x {
				return fmt.Errorf("a value of false has no meaning here")
			}
			out = append(out, "")
		case float64:
			out = append(out, fmt.Sprint(x))
		default:
			return fmt.Errorf("a value must be a string or true, not %T", x)
		}
		return nil
	}
	if list, ok := one.([]any); ok {
		for _, x := range list {
			if err := add(x); err != nil {
				return err
			}
		}
	} else if err := add(one); err != nil {
		return err
	}
	*v = out
	return nil
}

// optional is an expected value that may be absent (not asserted), null (asserted nil) or set.
type optional[T any] struct {
	Set, Null bool
	Value     T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

type fixtureExpect struct {
	Match        *bool                       `json:"match"`
	Route        string                      `json:"route"`
	Serviceless  bool                        `json:"serviceless"`
	Service      string                      `json:"service"`
	UpstreamURI  optional[string]            `json:"upstream_uri"`
	UpstreamHost optional[string]            `json:"upstream_host"`
	UpstreamURL  map[string]json.RawMessage  `json:"upstream_url"`
	Prefix       optional[string]            `json:"prefix"`
	URICaptures  optional[map[string]string] `json:"uri_captures"`
	Error        optional[string]            `json:"error"`
	Expression   optional[string]            `json:"expression"`
}

// loadKongSpecFixtures reads every file of testdata/kong/router_spec strictly: a field this
// schema does not know is an error, so a fixture cannot assert something the runner ignores.
func loadKongSpecFixtures(t testing.TB) []*kongSpecFixture {
	t.Helper()
	paths, err := filepath.Glob("testdata/kong/router_spec/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	var out []*kongSpecFixture
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := &kongSpecFixture{path: path}
		if err := yaml.UnmarshalStrict(raw, f); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if err := f.validate(); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		out = append(out, f)
	}
	return out
}

var knownFlavors = map[string]bool{"traditional_compatible": true, "expressions": true}

var knownCalls = map[string]bool{"select": true, "exec": true, "expression": true, "rebuild": true, "build": true}

func (f *kongSpecFixture) validate() error {
	if f.Origin.File == "" || f.Origin.Line == 0 || f.Origin.Test == "" {
		return fmt.Errorf("origin needs file, line and test")
	}
	if len(f.Flavors) == 0 {
		return fmt.Errorf("no flavors")
	}
	for _, fl := range f.Flavors {
		if !knownFlavors[fl] {
			return fmt.Errorf("unknown flavor %q", fl)
		}
	}
	switch f.Subsystem {
	case "", "http", "stream":
	default:
		return fmt.Errorf("unknown subsystem %q", f.Subsystem)
	}
	if f.Skip != "" {
		return nil
	}
	if len(f.Checks) == 0 {
		return fmt.Errorf("no checks")
	}
	ids := map[string]bool{}
	addIDs := func(routes []*kong.Route) {
		for _, r := range routes {
			if r.ID != nil {
				ids[*r.ID] = true
			}
		}
	}
	addIDs(f.Routes)
	for _, g := range f.Generate {
		if g.Count <= 0 || len(g.Route) == 0 {
			return fmt.Errorf("generate needs a count and a route")
		}
	}
	for i, c := range f.Checks {
		if !knownCalls[c.Call] {
			return fmt.Errorf("check %d: unknown call %q", i, c.Call)
		}
		for _, fl := range c.Flavors {
			if !knownFlavors[fl] {
				return fmt.Errorf("check %d: unknown flavor %q", i, fl)
			}
		}
		addIDs(c.Routes)
		switch c.Call {
		case "select", "exec":
			if c.Request == nil {
				return fmt.Errorf("check %d: %s needs a request", i, c.Call)
			}
			e := c.Expect
			if e.Route == "" && (e.Match == nil || *e.Match) && !e.Error.Set {
				return fmt.Errorf("check %d: expect a route, match: false or an error", i)
			}
			if e.Route != "" && !ids[e.Route] && len(f.Generate) == 0 {
				return fmt.Errorf("check %d: route %s is not in the table", i, e.Route)
			}
		case "expression":
			if c.Route == "" || !c.Expect.Expression.Set {
				return fmt.Errorf("check %d: expression needs a route and an expected expression", i)
			}
		case "rebuild":
			if len(c.Routes) == 0 {
				return fmt.Errorf("check %d: rebuild needs routes", i)
			}
		}
	}
	return nil
}

// generatedRoutes expands a fixture's generate entries (once: the router only reads them).
func (f *kongSpecFixture) generatedRoutes() ([]*kong.Route, error) {
	if f.generated != nil || len(f.Generate) == 0 {
		return f.generated, nil
	}
	var out []*kong.Route
	for _, g := range f.Generate {
		tmpl := string(g.Route)
		for i := 1; i <= g.Count; i++ {
			s := strings.ReplaceAll(strings.ReplaceAll(tmpl, "{i06}", fmt.Sprintf("%06d", i)), "{i}", strconv.Itoa(i))
			r := &kong.Route{}
			if err := json.Unmarshal([]byte(s), r); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	f.generated = out
	return out, nil
}

func TestKongSpecFixturesAreWellFormed(t *testing.T) {
	fixtures := loadKongSpecFixtures(t)
	for _, f := range fixtures {
		if _, err := f.generatedRoutes(); err != nil {
			t.Errorf("%s: generate: %v", f.path, err)
		}
	}
	t.Logf("%d fixtures", len(fixtures))
}
