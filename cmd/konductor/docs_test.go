package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Layout of docs/architecture.md names every Go package under internal/, and only those
// (issue #42: it had listed 13 of 22), so that a newcomer's map is the code's.
func TestArchitectureLayoutListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	require.NoError(t, err)
	_, layout, found := strings.Cut(string(doc), "\n## Layout\n")
	require.True(t, found, "docs/architecture.md has no Layout section")
	layout, _, _ = strings.Cut(layout, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^(internal/\S+)/\s`).FindAllStringSubmatch(layout, -1) {
		listed = append(listed, m[1])
	}

	packages := map[string]bool{}
	root := filepath.Join("..", "..")
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			packages[filepath.ToSlash(rel)] = true
		}
		return nil
	}))
	var want []string
	for p := range packages {
		want = append(want, p)
	}
	require.ElementsMatch(t, want, listed, "docs/architecture.md's Layout against the packages under internal/")
}

// docs/performance.md is a reference (issue #42): at most 300 lines, every scenario one row
// with its command, current figure, commit, machine and target; the dated entries live in
// docs/performance/journal.md.
func TestPerformanceReferenceIsAReference(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance.md"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(string(doc), "\n"), "\n")
	require.LessOrEqual(t, len(lines), 300, "docs/performance.md: a reference of at most 300 lines; dated entries go to docs/performance/journal.md")
	header := "| scenario | command | current figure | commit | machine | target |"
	rows := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "| ") || l == header {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(l, `\|`, ""), " | ")
		require.Len(t, cells, 6, "a row of six cells: %s", l)
		for i, c := range cells {
			require.NotEmpty(t, strings.Trim(c, "| "), "column %d of %s", i+1, l)
		}
		rows++
	}
	require.Positive(t, rows)
	_, err = os.Stat(filepath.Join("..", "..", "docs", "performance", "journal.md"))
	require.NoError(t, err)
}
