// Package sourcecheck holds the checks the project's tests run on its own Go source: how long
// its functions are (internal/translator, internal/manager: a function a newcomer reads
// whole).
package sourcecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// LongFunctions lists the functions of the Go files of dir, tests aside, over max lines
// (closures count in their function), as "file:line name: N lines".
func LongFunctions(dir string, max int) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var long []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > max {
				long = append(long, fmt.Sprintf("%s %s: %d lines", fset.Position(fd.Pos()), fd.Name.Name, n))
			}
		}
	}
	return long, nil
}
