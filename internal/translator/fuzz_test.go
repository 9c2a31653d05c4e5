package translator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// FuzzTranslate runs any manifest the fuzzer makes of the golden cases (every kind the
// translator reads, with their annotations) through the store, Build, and both renderings
// (DB-less /config and database mode's decK content): no input may panic (invariant 5: bad
// input is contained, never a crash). opts switches the translator's options.
//
// `make fuzz` runs it for a while; `make test` for a few seconds (make fuzz-short).
func FuzzTranslate(f *testing.F) {
	ins, err := filepath.Glob("testdata/*/in.yaml")
	if err != nil || len(ins) == 0 {
		f.Fatalf("no golden cases: %v", err)
	}
	for i, in := range ins {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
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
// runs thousands of inputs a second. Build and both renderings must not panic or hang, and
// Incremental, given the snapshot and then an edit of its Ingresses, Services and
// EndpointSlices, must give what a full Build of the edit gives.
func FuzzTranslateObjects(f *testing.F) {
	cert, err := newTestCertPEM()
	if err != nil {
		f.Fatal(err)
	}
	// Seeds: nothing, every kind in turn, and a few dense inputs.
	f.Add([]byte{})
	for kind := byte(0); kind < 26; kind++ {
		seed := []byte{0xff, 0xff, 0, 0, 0, 20}
		for i := 0; i < 20; i++ {
			seed = append(seed, kind, byte(i), byte(3*i+1), byte(7*i+2), 1, 0, 2, 1)
		}
		f.Add(seed)
	}
	for i := 0; i < 4; i++ {
		seed := make([]byte, 512)
		for j := range seed {
			seed[j] = byte((j*(31+i*2) + i*7) % 251)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog := time.AfterFunc(fuzzHang, func() { panic(fmt.Sprintf("translation hangs on input %q", data)) })
		defer watchdog.Stop()
		g := &objectGen{data: data, cert: cert}
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
	})
}
