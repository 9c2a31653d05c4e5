package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// run dispatches args as the binary does, and returns its stdout and stderr.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := dispatch(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// `konductor --help`, `-h` and `konductor help` list every command with its line, to stdout.
func TestHelpListsTheCommands(t *testing.T) {
	want, _, err := run(t, "--help")
	require.NoError(t, err)
	for _, c := range commands() {
		require.Contains(t, want, "\n  "+c.name+strings.Repeat(" ", 12-len(c.name))+c.summary+"\n")
	}
	for _, args := range [][]string{{"-h"}, {"help"}} {
		got, stderr, err := run(t, args...)
		require.NoError(t, err)
		require.Empty(t, stderr)
		require.Equal(t, want, got, "%v", args)
	}
}

// Every command has its own --help, on stdout with no error (exit 0), the same as
// `konductor help COMMAND`, naming its usage and flags the command's parser takes.
func TestEveryCommandHasItsHelp(t *testing.T) {
	someFlag := map[string]string{
		"run": "--kong-admin-url", "diff": "--filename", "translate": "-router-flavor", "kongemu": "-proxy-listen",
	}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			got, stderr, err := run(t, c.name, "--help")
			require.NoError(t, err)
			require.Empty(t, stderr)
			require.True(t, strings.HasPrefix(got, "Usage: konductor "+c.name), got)
			if f := someFlag[c.name]; f != "" {
				require.Contains(t, got, f)
			}
			viaHelp, _, err := run(t, "help", c.name)
			require.NoError(t, err)
			require.Equal(t, got, viaHelp)
			short, _, err := run(t, c.name, "-h")
			require.NoError(t, err)
			require.Equal(t, got, short)
		})
	}
	_, _, err := run(t, "help", "nope")
	require.ErrorContains(t, err, `unknown command "nope"`)
}

// Flags first are run's, as they always were: the Deployment's arguments are run's flags.
func TestFlagsFirstAreRunsFlags(t *testing.T) {
	runHelp, _, err := run(t, "run", "--help")
	require.NoError(t, err)
	got, _, err := run(t, "--kong-admin-url", "http://kong:8001", "--help")
	require.NoError(t, err)
	require.Equal(t, runHelp, got)
	_, _, err = run(t, "run", "--no-such-flag")
	require.ErrorContains(t, err, "no-such-flag")
	_, _, err = run(t, "--no-such-flag")
	require.ErrorContains(t, err, "no-such-flag")
}

// --version and `version` print the version, then the commit and build date when the build
// set them; without them the one line the image build checks (hack/image).
func TestVersion(t *testing.T) {
	got, _, err := run(t, "--version")
	require.NoError(t, err)
	require.Equal(t, "konductor "+version+"\n", got)
	defer func(v, c, d string) { version, commit, buildDate = v, c, d }(version, commit, buildDate)
	version, commit, buildDate = "v1.2.3", "abc123", "2026-12-06T20:00:00Z"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		got, _, err := run(t, args...)
		require.NoError(t, err)
		require.Equal(t, "konductor v1.2.3\ncommit: abc123\nbuilt: 2026-12-06T20:00:00Z\n", got)
	}
}

// The completion scripts: bash's completes commands, each command's flags as its help lists
// them, and completion's shells, by asking the binary (on PATH, as the shell finds it).
func TestCompletion(t *testing.T) {
	bash, _, err := run(t, "completion", "bash")
	require.NoError(t, err)
	zsh, _, err := run(t, "completion", "zsh")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(zsh, "#compdef konductor"))
	require.True(t, strings.HasSuffix(zsh, bash))
	_, _, err = run(t, "completion", "fish")
	require.ErrorContains(t, err, "bash|zsh")
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := buildKonductor(t)
	script := filepath.Join(t.TempDir(), "konductor.bash")
	require.NoError(t, os.WriteFile(script, []byte(bash), 0o644))
	complete := func(words ...string) string {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		cmd := exec.Command("bash", "-c", `source "$0"; COMP_WORDS=(`+strings.Join(quoted, " ")+`); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _konductor; echo "${COMPREPLY[*]}"`, script)
		cmd.Dir = t.TempDir() // no files to complete
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}
	require.Equal(t, "translate", complete("konductor", "tra"))
	require.Equal(t, "--router-flavor", complete("konductor", "translate", "--router-f"))
	require.Equal(t, "--kong-admin-url", complete("konductor", "--kong-admin-u"))
	require.Equal(t, "bash", complete("konductor", "completion", "ba"))
	require.Equal(t, "diff", complete("konductor", "help", "dif"))
	require.Equal(t, "--all-conflicts --allow-local-targets", complete("konductor", "explain", "http://a/", "--all"))
}

var built struct {
	once sync.Once
	bin  string
	err  error
}

// buildKonductor builds the command once per test binary as `make build` does, with its
// ldflags, for the tests that run the binary itself.
func buildKonductor(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "konductor-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "konductor")
		out, err := exec.Command("go", "build", "-ldflags",
			"-X main.version=v9.9.9 -X main.commit=feedface -X main.buildDate=2026-12-06T00:00:00Z", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = &buildError{out: string(out), err: err}
		}
	})
	require.NoError(t, built.err)
	return built.bin
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// The built binary: --version carries what the ldflags set, and help exits 0.
func TestBinaryVersionAndHelp(t *testing.T) {
	bin := buildKonductor(t)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Equal(t, "konductor v9.9.9\ncommit: feedface\nbuilt: 2026-12-06T00:00:00Z\n", string(out))
	out, err = exec.Command(bin, "translate", "--help").Output()
	require.NoError(t, err, "help exits 0")
	require.True(t, strings.HasPrefix(string(out), "Usage: konductor translate"))
}

// `make install` puts konductor and the kubectl plugin kubectl-konductor in BINDIR; run by the
// plugin's name (as kubectl runs `kubectl konductor ...`) it is the same command, and alone it
// lists the commands rather than start a controller.
func TestKubectlPluginInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	out, err := exec.Command("make", "-C", root, "install", "BINDIR="+dir, "BIN="+filepath.Join(dir, "built", "konductor")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	plugin := filepath.Join(dir, "kubectl-konductor")
	target, err := os.Readlink(plugin)
	require.NoError(t, err)
	require.Equal(t, "konductor", target)

	got, err := exec.Command(plugin).Output()
	require.NoError(t, err)
	want, _, err := run(t, "--help")
	require.NoError(t, err)
	require.Equal(t, want, string(got))

	got, err = exec.Command(plugin, "explain", "http://a.example.com/wild/x", "-f", hostsCase).Output()
	require.NoError(t, err)
	want, err = explainCmd(t, "http://a.example.com/wild/x", "-f", hostsCase)
	require.NoError(t, err)
	require.Equal(t, want, string(got))

	// kubectl's completion of the plugin's arguments (the script runs konductor from PATH, as
	// kubectl finds the plugin).
	cmd := exec.Command(filepath.Join(dir, "kubectl_complete-konductor"), "expl")
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	got, err = cmd.Output()
	require.NoError(t, err)
	require.Equal(t, "explain\n:4\n", string(got))

	got, err = exec.Command(plugin, "--version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^konductor \S+\ncommit: [0-9a-f]{40}\nbuilt: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`, string(got), "make build's ldflags")
}
