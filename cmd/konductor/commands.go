package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/konductor/konductor/internal/config"
)

// Build facts, set with -ldflags "-X main.version=... -X main.commit=... -X main.buildDate=..."
// (Makefile's build). Only version is set by the image build, and `konductor version` then
// prints the one line it always printed.
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

// command is one of konductor's commands, as `konductor --help` lists it.
type command struct {
	name    string
	args    string // the usage line after the name
	summary string
	// controllerFlags: the command takes the controller's flags (pflag, config.FlagUsages);
	// moreFlags are its own beside them, as help lists them.
	controllerFlags bool
	moreFlags       string
	// noFlags: the command takes arguments only; its help is its usage line.
	noFlags bool
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are konductor's commands in the order `konductor --help` lists them. A function,
// not a variable: the commands' own help reads it (a variable would be an initialization cycle).
func commands() []command {
	return []command{
		{name: "run", args: "[flags]", summary: "run the controller (the default when the first argument is a flag)", controllerFlags: true,
			run: func(ctx context.Context, args []string, _, stderr io.Writer) error {
				return runController(ctx, args, stderr)
			}},
		{name: "translate", args: "-f FILE|DIR [flags]", summary: "print the Kong configuration that manifests produce",
			run: func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				return runTranslate(ctx, args, stdout)
			}},
		{name: "diff", args: "[controller flags] [-f FILE|DIR ...]", summary: "print what a sync would change on a database-backed Kong", controllerFlags: true,
			moreFlags: "  -f, --filename FILE|DIR   manifests to translate instead of reading the cluster (*.yaml, *.yml, *.json); repeatable\n",
			run:       func(ctx context.Context, args []string, stdout, _ io.Writer) error { return runDiff(ctx, args, stdout) }},
		{name: "explain", args: "URL|--all-conflicts [-X METHOD] [-H 'Name: value'] (-f FILE|DIR | --kubeconfig FILE | --from-controller URL) [flags]",
			summary: "explain which route takes a request, why, and which Kubernetes objects it came from",
			run: func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				return runExplain(ctx, args, stdout)
			}},
		{name: "kongemu", args: "[flags]", summary: "run the Kong Admin API emulator and its proxy (local environment, tests)",
			run: func(ctx context.Context, args []string, stdout, _ io.Writer) error {
				return kongemuCommand(ctx, args, stdout)
			}},
		{name: "version", summary: "print the version, commit and build date", noFlags: true,
			run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
				if len(args) > 0 {
					return fmt.Errorf("version: unexpected arguments: %v", args)
				}
				return printVersion(stdout)
			}},
		{name: "completion", args: "bash|zsh", summary: "print a shell completion script (source <(konductor completion bash))", noFlags: true,
			run: runCompletion},
		{name: "help", args: "[command]", summary: "list the commands, or print a command's help", noFlags: true,
			run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) == 0 {
					return printCommands(stdout)
				}
				if len(args) > 1 {
					return fmt.Errorf("help: one command at a time, not %v", args)
				}
				if _, ok := lookupCommand(args[0]); !ok {
					return unknownCommand(args[0])
				}
				return dispatch(ctx, []string{args[0], "--help"}, stdout, stderr)
			}},
	}
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func unknownCommand(name string) error {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return fmt.Errorf("unknown command %q (commands: %s; konductor --help)", name, strings.Join(names, ", "))
}

// dispatch runs the command args name. `konductor` alone, or with a flag first, is `run`, as
// it always was (the Deployment's arguments are run's flags); --help and --version first are
// konductor's own.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			return printCommands(stdout)
		case "--version", "-version":
			return printVersion(stdout)
		}
	}
	if len(args) > 0 && args[0] == "__complete" {
		// Not a command of its own: the completion protocol kubectl asks plugins with.
		return complete(args[1:], stdout)
	}
	name := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	c, ok := lookupCommand(name)
	if !ok {
		return unknownCommand(name)
	}
	if (c.controllerFlags || c.noFlags) && wantsHelp(args) {
		if err := printUsageHeader(stdout, c); err != nil || c.noFlags {
			return err
		}
		// The controller's flags are pflag's, parsed by internal/config: its own list.
		_, err := fmt.Fprint(stdout, c.moreFlags+config.FlagUsages())
		return err
	}
	err := c.run(ctx, args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, pflag.ErrHelp) {
		// Help was asked for and printed: not a failure.
		return nil
	}
	return err
}

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// helpOutput is where a command's flag set writes: stdout when help was asked for (help is
// the answer, and `konductor translate --help | less` should page it), else stderr (a flag
// error is not output).
func helpOutput(args []string, stdout, stderr io.Writer) io.Writer {
	if wantsHelp(args) {
		return stdout
	}
	return stderr
}

// commandFlagSet is a standard flag set for command name whose usage is the command's line,
// summary and flags, written to the flag set's output.
func commandFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		if c, ok := lookupCommand(name); ok {
			_ = printUsageHeader(fs.Output(), c)
		}
		fs.PrintDefaults()
	}
	return fs
}

func printUsageHeader(w io.Writer, c command) error {
	line := "konductor " + c.name
	if c.args != "" {
		line += " " + c.args
	}
	flags := "\nFlags:\n"
	if c.noFlags {
		flags = ""
	}
	_, err := fmt.Fprintf(w, "Usage: %s\n\n%s.\n%s", line, capitalize(c.summary), flags)
	return err
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// printCommands is `konductor --help`: the commands, one a line.
func printCommands(w io.Writer) error {
	var b strings.Builder
	b.WriteString("konductor: a Kubernetes ingress controller for Kong Gateway.\n\nUsage:\n  konductor [command] [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	b.WriteString("\nWithout a command, konductor runs the controller with the flags given.\n" +
		"Use \"konductor help COMMAND\" or \"konductor COMMAND --help\" for a command's flags, \"konductor --version\" for the version.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// printVersion prints the version; the commit and build date when the build set them.
func printVersion(w io.Writer) error {
	out := "konductor " + version + "\n"
	if commit != "" {
		out += "commit: " + commit + "\n"
	}
	if buildDate != "" {
		out += "built: " + buildDate + "\n"
	}
	_, err := io.WriteString(w, out)
	return err
}

// flagName finds the flags a help text lists: "  -name value" (flag) and "  -x, --name type"
// (pflag).
var flagName = regexp.MustCompile(`(?m)(?:^\s+|, )(--?[a-zA-Z0-9][a-zA-Z0-9-]*)`)

// commandFlags are the flags of command name, read off its own --help: completion offers what
// the parser takes, with no second list to keep.
func commandFlags(name string) []string {
	var help strings.Builder
	_ = dispatch(context.Background(), []string{name, "--help"}, &help, io.Discard)
	seen := map[string]bool{}
	var out []string
	for _, m := range flagName.FindAllStringSubmatch(help.String(), -1) {
		f := m[1]
		if !strings.HasPrefix(f, "--") {
			// The standard flag package takes -name and --name alike: offer the long form for
			// names longer than a letter.
			if len(f) > 2 {
				f = "-" + f
			}
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// runCompletion prints a bash or zsh completion script. The script asks the binary itself
// (`konductor __complete`, the protocol kubectl speaks to plugins), so the shell, kubectl and
// the command line agree, and a newer binary completes its own flags.
func runCompletion(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		return errors.New("completion: give the shell: konductor completion bash|zsh")
	}
	script := `# bash completion for konductor: source <(konductor completion bash)
_konductor() {
  local cur="${COMP_WORDS[COMP_CWORD]}" out line directive=0
  out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  COMPREPLY=()
  while IFS= read -r line; do
    case "$line" in
      :*) directive="${line#:}" ;;
      *) COMPREPLY+=("$line") ;;
    esac
  done <<< "$out"
  if [[ "$directive" == 0 ]]; then
    COMPREPLY+=($(compgen -f -- "$cur"))
  fi
}
complete -F _konductor konductor kubectl-konductor
`
	if args[0] == "zsh" {
		// zsh runs bash completion functions through bashcompinit.
		script = "#compdef konductor kubectl-konductor\n# zsh completion for konductor: source <(konductor completion zsh)\n" +
			"autoload -U +X bashcompinit && bashcompinit\n" + script
	}
	_, err := io.WriteString(stdout, script)
	return err
}

// Completion directives of the protocol kubectl (and cobra) speak: after the candidates, a
// line ":<directive>"; 4 is "no file completion", 0 lets the shell complete file names.
const (
	completeFiles   = 0
	completeNoFiles = 4
)

// complete answers `konductor __complete WORDS... CURRENT`, the protocol kubectl uses for a
// plugin's arguments (it runs kubectl_complete-konductor, which make install links here): the
// commands, a command's flags, completion's shells; file names otherwise.
func complete(words []string, stdout io.Writer) error {
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	cmd := ""
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			cmd = w
			break
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	var candidates []string
	directive := completeNoFiles
	switch {
	case strings.HasPrefix(cur, "-"):
		if cmd == "" {
			cmd = "run"
		}
		candidates = commandFlags(cmd)
	case cmd == "" || cmd == "help":
		candidates = names
	case cmd == "completion":
		candidates = []string{"bash", "zsh"}
	default:
		directive = completeFiles
	}
	var b strings.Builder
	for _, c := range candidates {
		if strings.HasPrefix(c, cur) {
			b.WriteString(c + "\n")
		}
	}
	fmt.Fprintf(&b, ":%d\n", directive)
	_, err := io.WriteString(stdout, b.String())
	return err
}
