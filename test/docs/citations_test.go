package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	citation = regexp.MustCompile(`kic-compat\.md §([0-9]+(?:\.[0-9]+)*)`)
	heading  = regexp.MustCompile(`(?m)^#{2,3} ([0-9]+(?:\.[0-9]+)*)[. ]`)
)

// Every "kic-compat.md §N" that the code and the docs cite names a section of the project's
// copy of the rulebook, docs/kic-compat.md: a reader can follow each one.
func TestRulebookCitations(t *testing.T) {
	root := repoRoot()
	book, err := os.ReadFile(filepath.Join(root, "docs", "kic-compat.md"))
	require.NoError(t, err)
	sections := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(book), -1) {
		sections[m[1]] = true
	}
	require.True(t, sections["11.3"] && sections["1"], "the rulebook's sections are read: %v", sections)

	cited := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !(strings.HasSuffix(path, ".md") && !strings.HasSuffix(path, "kic-compat.md")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range citation.FindAllStringSubmatch(string(b), -1) {
			cited++
			rel, _ := filepath.Rel(root, path)
			require.True(t, sections[m[1]], "%s cites kic-compat.md §%s, which docs/kic-compat.md does not have", rel, m[1])
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, cited, 50, "the code cites the rulebook")
}
