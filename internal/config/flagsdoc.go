package config

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// FlagsMarkdown is the table of docs/flags.md: every flag `konductor run` takes and lists (the
// hidden ones aside), in the order defined, with its type, default and meaning, read from
// the definitions the parser uses, so that the reference cannot fall behind them
// (TestFlagsDocIsGenerated).
func FlagsMarkdown() string {
	fs := pflag.NewFlagSet("konductor", pflag.ContinueOnError)
	fs.SortFlags = false
	(&Config{}).defineFlags(fs, &flagValues{enabled: map[string]*bool{}})
	var b strings.Builder
	b.WriteString("| flag | type | default | meaning |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		typ, usage := pflag.UnquoteUsage(f)
		if typ == "" {
			typ = f.Value.Type()
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "[]" {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, typ, def, cell(usage))
	})
	return b.String()
}

// cell is s made safe for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
