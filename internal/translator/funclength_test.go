package translator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFunctionLines is the longest a function of the translator may be (issue #28): a
// function a newcomer can read whole, one job each.
const maxFunctionLines = 150

// No function of the package is longer than maxFunctionLines.
func TestNoFunctionIsTooLong(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var long []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFunctionLines {
					long = append(long, f+": "+fd.Name.Name)
				}
			}
		}
	}
	require.Empty(t, long, "functions over %d lines: split them by job", maxFunctionLines)
}
