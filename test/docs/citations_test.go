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
	citation = regexp.MustCompile(`translation-rules\.md §([0-9]+(?:\.[0-9]+)*)`)
	heading  = regexp.MustCompile(`(?m)^#{2,3} ([0-9]+(?:\.[0-9]+)*)[. ]`)
	// oldRulebook is the file the rulebook was carried in before docs/translation-rules.md
	// (now a page pointing to it): Go code must not cite it any more, nor docs by section.
	oldRulebookFile    = "kic-compat" + ".md" // split, so that this file does not cite it
	oldRulebook        = regexp.MustCompile(regexp.QuoteMeta(oldRulebookFile))
	oldRulebookSection = regexp.MustCompile(regexp.QuoteMeta(oldRulebookFile) + ` §[0-9]`)
)

// Every "translation-rules.md §N" that the code and the docs cite names a section of the
// project's rulebook, docs/translation-rules.md: a reader can follow each one. The Go code
// cites no other rulebook file, and no doc cites the old one by section.
func TestRulebookCitations(t *testing.T) {
	root := repoRoot()
	book, err := os.ReadFile(filepath.Join(root, "docs", "translation-rules.md"))
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
		if !strings.HasSuffix(path, ".go") && !(strings.HasSuffix(path, ".md") && !strings.HasSuffix(path, "translation-rules.md")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range citation.FindAllStringSubmatch(string(b), -1) {
			cited++
			require.True(t, sections[m[1]], "%s cites translation-rules.md §%s, which docs/translation-rules.md does not have", rel, m[1])
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			require.False(t, oldRulebook.Match(b), "%s cites the old rulebook file name; cite translation-rules.md §N (same section numbers)", rel)
		case rel != filepath.Join("docs", oldRulebookFile):
			require.False(t, oldRulebookSection.Match(b), "%s cites a section of the old rulebook file; cite translation-rules.md §N (same section numbers)", rel)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, cited, 50, "the code cites the rulebook")
}
