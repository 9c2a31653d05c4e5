package benchdata_test

import (
	"testing"

	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// The benchmarks' cluster must be valid input: every Ingress gives a Kong service and nothing
// is reported (its generator once made invalid endpoint addresses, and the benchmarks that
// check this failed without saying why in any test).
func TestSnapshotIsValidInput(t *testing.T) {
	for _, n := range []int{1, 300} {
		state, problems := translator.Translate(benchdata.Snapshot(n), translator.Options{})
		if len(problems) != 0 {
			t.Fatalf("n=%d: problems %v", n, problems)
		}
		if len(state.Services) != n {
			t.Fatalf("n=%d: %d Kong services", n, len(state.Services))
		}
		targets := 0
		for _, u := range state.Upstreams {
			targets += len(u.Targets)
		}
		if targets != 3*n {
			t.Fatalf("n=%d: %d targets, want 3 per Service", n, targets)
		}
	}
}
