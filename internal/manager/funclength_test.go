package manager

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/sourcecheck"
)

// maxFuncLines bounds every function of this package (issue #42: New was 329 lines with 12
// closures, the project's longest): the controller's assembly reads as named steps
// (assemble.go).
const maxFuncLines = 100

// No function of internal/manager, closures included in their function, is over
// maxFuncLines lines (tests aside).
func TestNoFunctionOverAHundredLines(t *testing.T) {
	long, err := sourcecheck.LongFunctions(".", maxFuncLines)
	require.NoError(t, err)
	require.Empty(t, long, "functions over %d lines: split them into named steps", maxFuncLines)
}
