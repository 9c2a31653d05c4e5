package translator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// FuzzTranslate runs any manifest the fuzzer makes of the golden cases (every kind the
// translator reads, with their annotations) through the store, Build, and both renderings
// (DB-less /config and database mode's decK content): no input may panic (invariant 5: bad
// input is contained, never a crash). opts switches the translator's options. It is slow (a
// few inputs a second: YAML and the store) but is the only fuzz target that goes through the
// manifest parser and the store's class filtering; FuzzTranslateObjects explores translation.
//
// `make fuzz` runs it for 10 minutes; `make test` for 15 s (make test-fuzz).
func FuzzTranslate(f *testing.F) {
	ins, err := filepath.Glob("testdata/*/in.yaml")
	if err != nil || len(ins) == 0 {
		f.Fatalf("no golden cases: %v", err)
	}
	var golden [][]byte
	for i, in := range ins {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
		golden = append(golden, b)
	}
	// generatedSeeds mutants of the golden inputs (bytes flipped, inserted, deleted, lines
	// duplicated), which `go test` runs without the fuzzer's instrumented build.
	rng := rand.New(rand.NewPCG(5, 3))
	for range generatedSeeds(500) {
		f.Add(uint8(rng.IntN(256)), mutate(rng, golden[rng.IntN(len(golden))]))
	}
	f.Fuzz(func(t *testing.T, opts uint8, data []byte) {
		// A hang is a failure too (one object must not stop every sync): an input that
		// takes longer than this crashes the worker, and the fuzzer keeps it.
		watchdog := time.AfterFunc(fuzzHang, func() { panic(fmt.Sprintf("translation hangs on opts %d, input %q", opts, data)) })
		defer watchdog.Stop()
		loaded, err := manifest.Parse(data)
		if err != nil {
			return // not a manifest: the API server would not have stored it either
		}
		translate(t, loaded, opts)
	})
}

// fuzzHang is how long one fuzz input may take: far more than the slowest golden case needs,
// on a loaded machine.
const fuzzHang = 5 * time.Second

// translate is one fuzz input through the controller's path, with the options opts's bits
// switch on.
func translate(t *testing.T, loaded *manifest.Loaded, opts uint8) {
	t.Helper()
	classes := []string{"", "kong", "other"}
	st, err := store.NewForObjects(loaded.Objects, store.Options{IngressClass: classes[int(opts>>6)%len(classes)]})
	if err != nil {
		return
	}
	snap, err := st.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := Build(snap, Options{
		ExpressionRoutes:           opts&1 != 0,
		EnableLegacyRegexDetection: opts&2 != 0,
		ServiceUpstream:            opts&4 != 0,
		KongServiceFacade:          opts&8 != 0,
		RewriteURIs:                opts&16 != 0,
		EnableDrainSupport:         opts&32 != 0,
	})
	if _, err := res.State.DeclarativeConfig(); err != nil {
		t.Logf("rendering: %v", err)
	}
	_ = res.State.Content()
	for _, p := range res.Problems {
		_ = p.String()
	}
}

// FuzzTranslateObjects builds objects of every kind the translator reads out of the fuzz
// input (objectGen: references between them from small pools of names, random values and
// annotations, good and bad) and translates them directly, without YAML or a store, so it
// runs a few hundred inputs a second. Build and both renderings must not panic or hang, and
// Incremental, given the snapshot and then an edit of its Ingresses, Services,
// EndpointSlices, Gateway API routes, KongConsumers and Secrets (TLS Secrets rotated among
// them), must give what a full Build of the edit gives.
func FuzzTranslateObjects(f *testing.F) {
	cert, err := newTestCertPEM()
	if err != nil {
		f.Fatal(err)
	}
	// Seeds: nothing, and inputs of random bytes (a fixed sequence), short and long: random
	// choices make snapshots of many kinds that refer to each other.
	f.Add([]byte{})
	rng := rand.New(rand.NewPCG(11, 7))
	for i := range 24 {
		seed := make([]byte, 16+i*40)
		for j := range seed {
			seed[j] = byte(rng.IntN(256))
		}
		f.Add(seed)
	}
	// And 5,000 more (generatedSeeds), of every length up to 1 KB: `go test` (make test) runs them
	// all, a fixed sample of the search `make fuzz` does with coverage guidance, without the
	// instrumented build (minutes on two cores) that guidance needs.
	for range generatedSeeds(5000) {
		seed := make([]byte, 1+rng.IntN(1024))
		for j := range seed {
			seed[j] = byte(rng.IntN(256))
		}
		f.Add(seed)
	}
	rotated, err := newTestCertPEM()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) { translateObjects(t, cert, rotated, data) })
}

// translateObjects is one input of FuzzTranslateObjects.
func translateObjects(t *testing.T, cert, rotated testCertPEM, data []byte) {
	watchdog := time.AfterFunc(fuzzHang, func() { panic(fmt.Sprintf("translation hangs on input %q", data)) })
	defer watchdog.Stop()
	g := &objectGen{data: data, cert: cert, rotated: rotated}
	opts := g.options()
	snap := g.snapshot()
	res := Build(snap, opts)
	if _, err := res.State.DeclarativeConfig(); err != nil {
		t.Logf("rendering: %v", err)
	}
	_ = res.State.Content()
	for _, p := range res.Problems {
		_ = p.String()
	}

	if _, err := res.State.DeclarativeConfig(); err == nil {
		spread, _ := buildSpread(snap, opts, 3, 0, nil)
		requireSameResult(t, "spread over 3 goroutines: "+describe(snap), &kongstate.Renderer{}, spread, res)
	}

	next := g.edit(snap)
	inc := &Incremental{noSizeLimit: true}
	renderer := &kongstate.Renderer{}
	first := inc.Build(snap, opts)
	if _, err := renderer.DeclarativeConfig(first.State); err != nil {
		return // nothing to compare the next rendering with
	}
	got, want := inc.Build(next, opts), Build(next, opts)
	if _, err := want.State.DeclarativeConfig(); err != nil {
		return
	}
	requireSameResult(t, "edit of "+describe(snap), renderer, got, want)
}

// generatedSeeds is how many generated inputs a fuzz target adds to its corpus: n, or
// $KONDUCTOR_FUZZ_SEEDS when set (0 for none).
func generatedSeeds(n int) int {
	if v, err := strconv.Atoi(os.Getenv("KONDUCTOR_FUZZ_SEEDS")); err == nil {
		return v
	}
	return n
}

// mutate is b with a few random edits, as a fuzzer's mutator makes them.
func mutate(rng *rand.Rand, b []byte) []byte {
	out := append([]byte(nil), b...)
	for range 1 + rng.IntN(8) {
		if len(out) == 0 {
			out = append(out, byte(rng.IntN(256)))
			continue
		}
		i := rng.IntN(len(out))
		switch rng.IntN(4) {
		case 0: // flip a byte
			out[i] = byte(rng.IntN(256))
		case 1: // insert one
			out = append(out[:i], append([]byte{byte(rng.IntN(256))}, out[i:]...)...)
		case 2: // delete a run
			j := min(len(out), i+1+rng.IntN(16))
			out = append(out[:i], out[j:]...)
		default: // repeat a run
			j := min(len(out), i+1+rng.IntN(64))
			out = append(out[:j], append(append([]byte(nil), out[i:j]...), out[j:]...)...)
		}
	}
	return out
}
