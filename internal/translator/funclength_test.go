package translator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/sourcecheck"
)

// maxFunctionLines is the longest a function of the translator may be (issue #28): a
// function a newcomer can read whole, one job each.
const maxFunctionLines = 150

// No function of the package is longer than maxFunctionLines.
func TestNoFunctionIsTooLong(t *testing.T) {
	long, err := sourcecheck.LongFunctions(".", maxFunctionLines)
	require.NoError(t, err)
	require.Empty(t, long, "functions over %d lines: split them by job", maxFunctionLines)
}
