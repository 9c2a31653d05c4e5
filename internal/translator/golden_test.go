package translator

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenOptions are per-case settings, read from testdata/<case>/options.yaml when present.
type goldenOptions struct {
	IngressClass string  `json:"ingressClass"`
	Translator   Options `json:"translator"`
	// RouterFlavor "traditional" marks a case for Kong's traditional router flavor (PCRE
	// regexes), which the emulator does not emulate (TestGatewayGoldenAcceptedByKong).
	RouterFlavor string `json:"routerFlavor"`
}

// emulator is the DB-less Kong the case's configuration is for: its router flavor and
// version.
func (o goldenOptions) emulator() kongemu.Options {
	opts := kongemu.Options{Mode: kongemu.DBLess}
	if o.Translator.ExpressionRoutes {
		opts.RouterFlavor = kongemu.RouterExpressions
	}
	if v := o.Translator.KongVersion; v.Major > 0 {
		opts.Version = v.String()
	}
	return opts
}

// readGoldenOptions reads the case's options.yaml, if any.
func readGoldenOptions(t *testing.T, dir string) goldenOptions {
	t.Helper()
	var opts goldenOptions
	if b, err := os.ReadFile(filepath.Join(dir, "options.yaml")); err == nil {
		require.NoError(t, sigsyaml.UnmarshalStrict(b, &opts))
	}
	return opts
}

// renderCase runs a case the way `konductor translate` does: manifest.Load ->
// store.NewForObjects -> Snapshot -> Translate -> DeclarativeConfig, and returns the config
// as YAML with sorted keys and the problems, one a line.
func renderCase(t *testing.T, dir string) (string, string) {
	t.Helper()
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	return renderObjects(t, dir, objs)
}

// translateCaseObjects translates a case's objects (given, maybe changed by the caller) with the
// case's options.
func translateCaseObjects(t *testing.T, dir string, objs []client.Object) (*kongstate.State, []Problem) {
	t.Helper()
	return translateWith(t, objs, readGoldenOptions(t, dir))
}

// translateWith translates objects with the given case options.
func translateWith(t *testing.T, objs []client.Object, opts goldenOptions) (*kongstate.State, []Problem) {
	t.Helper()
	r := buildObjects(t, objs, opts)
	return r.State, r.Problems
}

// renderObjects is renderCase with the case's objects given (changed by the caller).
func renderObjects(t *testing.T, dir string, objs []client.Object) (string, string) {
	t.Helper()
	state, problems := translateCaseObjects(t, dir, objs)
	b, err := state.DeclarativeConfig()
	require.NoError(t, err)
	y, err := sigsyaml.JSONToYAML(b)
	require.NoError(t, err)
	var sb strings.Builder
	for _, p := range problems {
		sb.WriteString(p.String())
		sb.WriteString("\n")
	}
	return string(y), sb.String()
}

// eachGoldenCase runs test as a subtest per case folder of testdata.
func eachGoldenCase(t *testing.T, test func(t *testing.T, dir string)) {
	dirs, err := filepath.Glob("testdata/*/in.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, in := range dirs {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) { test(t, dir) })
	}
}

func TestGolden(t *testing.T) {
	eachGoldenCase(t, func(t *testing.T, dir string) {
		out, problems := renderCase(t, dir)
		outPath := filepath.Join(dir, "out_golden.yaml")
		probPath := filepath.Join(dir, "problems_golden.txt")
		if *update {
			require.NoError(t, os.WriteFile(outPath, []byte(out), 0o644))
			require.NoError(t, os.WriteFile(probPath, []byte(problems), 0o644))
			return
		}
		want, err := os.ReadFile(outPath)
		require.NoError(t, err, "run go test ./internal/translator -update")
		assert.Equal(t, string(want), out)
		wantP, err := os.ReadFile(probPath)
		require.NoError(t, err)
		assert.Equal(t, string(wantP), problems)
	})
}

// goldenConfig loads a case's golden output as generic JSON, for assertions on KIC's [G]
// values that must hold whatever else changes.
func goldenConfig(t *testing.T, name string) map[string]any {
	t.Helper()
	out, _ := renderCase(t, filepath.Join("testdata", name))
	j, err := sigsyaml.YAMLToJSON([]byte(out))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(j, &m))
	return m
}
