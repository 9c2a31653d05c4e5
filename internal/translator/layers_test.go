package translator

import (
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// aboveTranslation says whether a file of the package belongs to the layers above
// translation: the incremental translator and its splice, the parallel first translation,
// event relevance (doc.go's map).
func aboveTranslation(file string) bool {
	b := filepath.Base(file)
	return strings.HasPrefix(b, "incremental") || strings.HasPrefix(b, "splice_") || b == "parallel.go" || b == "relevance.go"
}

// TestTranslationKnowsNothingAbove: no file of the translation (the builder, the model, the
// sources, the result) uses a declaration of the files above it. Incremental and the
// parallel translation read what translation records (the graph, result.go's parts) and
// call it; translation never calls, reads or names them, so a source is changed without
// knowing they exist.
func TestTranslationKnowsNothingAbove(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := packages.Load(&packages.Config{Fset: fset, Mode: packages.NeedName | packages.NeedFiles |
		packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}, ".")
	require.NoError(t, err)
	require.Len(t, pkgs, 1)
	pkg := pkgs[0]
	require.Empty(t, pkg.Errors)
	var uses []string
	for id, obj := range pkg.TypesInfo.Uses {
		if obj.Pkg() != pkg.Types || !obj.Pos().IsValid() {
			continue
		}
		at, decl := fset.Position(id.Pos()), fset.Position(obj.Pos())
		if !aboveTranslation(at.Filename) && aboveTranslation(decl.Filename) {
			uses = append(uses, filepath.Base(at.Filename)+": "+id.Name+", declared in "+filepath.Base(decl.Filename))
		}
	}
	sort.Strings(uses)
	require.Empty(t, uses, "translation uses what is above it")
	require.NotEmpty(t, pkg.TypesInfo.Uses)
}
