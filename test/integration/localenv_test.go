package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/kongemu"
)

// The routes examples/ produce (translation-rules.md §3.3 names).
var exampleRoutes = []string{
	"konductor-demo.echo.echo.echo.example.com.80",
	"konductor-demo.secure.secure.secure.example.com.http",
}

var firstSyncLine = regexp.MustCompile(`first sync completed [0-9.]+(ns|µs|ms|s|m[0-9.]+s) after the sync loop started`)

// konductorBinary builds the binary once for the local-environment tests.
var konductorBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "konductor-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "konductor")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/konductor")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// syncBuffer is an io.Writer safe to read while the script writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// localRun is one run of hack/run-local.sh, marked with a unique run id that every process it
// starts inherits.
type localRun struct {
	cmd *exec.Cmd
	out *syncBuffer
	id  string
}

func startLocalRun(t *testing.T, env map[string]string) *localRun {
	t.Helper()
	bin, err := konductorBinary()
	require.NoError(t, err)
	id := fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "run-local.sh"))
	cmd.Dir = repoRoot()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	vars := map[string]string{"KONDUCTOR_BIN": bin, "KONDUCTOR_LOCAL_RUN_ID": id, "KUBECONFIG": "", "KONG_ADMIN_URL": ""}
	for k, v := range env {
		vars[k] = v
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := vars[k]; !set {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range vars {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	r := &localRun{cmd: cmd, out: &syncBuffer{}, id: id}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		// Whatever happened, leave nothing behind.
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
		for _, pid := range r.leftovers() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("run-local.sh output:\n%s", r.out)
		}
	})
	return r
}

// wait waits for the script to exit and returns its exit code.
func (r *localRun) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("run-local.sh did not finish within %s", within)
		return -1
	}
}

// leftovers are the live processes that carry the run id in their environment.
func (r *localRun) leftovers() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == "KONDUCTOR_LOCAL_RUN_ID="+r.id {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func (r *localRun) requireNothingLeft(t *testing.T) {
	t.Helper()
	// The script verified it; check from outside too, giving zombies a moment to be reaped.
	require.Eventually(t, func() bool { return len(r.leftovers()) == 0 }, 5*time.Second, 100*time.Millisecond,
		"processes left running: %v", r.leftovers())
	require.Contains(t, r.out.String(), "nothing left running")
}

func (r *localRun) requireExamplesSynced(t *testing.T) {
	t.Helper()
	out := r.out.String()
	for _, route := range exampleRoutes {
		require.Contains(t, out, route)
	}
	require.Contains(t, out, "rate-limiting")
	require.Regexp(t, firstSyncLine, out)
}

// `RUN_ONCE=1 hack/run-local.sh` (what `make run` runs, stopping after it printed) starts
// kube-apiserver, etcd, the emulator and konductor, shows the example routes and the
// first-sync time in each Kong mode, and leaves nothing running.
func TestLocalEnvRunOnce(t *testing.T) {
	withOwnAPIServer(t)
	if testing.Short() {
		t.Skip("starts its own kube-apiserver and etcd")
	}
	for _, mode := range []string{"dbless", "postgres"} {
		t.Run(mode, func(t *testing.T) {
			r := startLocalRun(t, map[string]string{"RUN_ONCE": "1", "KONG_MODE": mode, "KUBEBUILDER_ASSETS": env.BinaryAssetsDirectory})
			require.Equal(t, 0, r.wait(t, 4*time.Minute), r.out.String())
			r.requireExamplesSynced(t)
			require.Contains(t, r.out.String(), "("+mode+")")
			// A request through the emulator's proxy reaches one of the echo Service's endpoints,
			// with the Ingress's strip-path applied.
			require.Regexp(t, `GET http://echo.example.com/echo/hello -> 200, answered by 10\.0\.0\.1[12]:8080 with path /hello`, r.out.String())
			r.requireNothingLeft(t)
		})
	}
}

// Ctrl-C stops everything.
func TestLocalEnvInterrupt(t *testing.T) {
	withOwnAPIServer(t)
	if testing.Short() {
		t.Skip("starts its own kube-apiserver and etcd")
	}
	r := startLocalRun(t, map[string]string{"KUBEBUILDER_ASSETS": env.BinaryAssetsDirectory})
	require.Eventually(t, func() bool { return strings.Contains(r.out.String(), "Ctrl-C stops everything") },
		4*time.Minute, 100*time.Millisecond, "the local environment did not come up")
	r.requireExamplesSynced(t)
	require.NotEmpty(t, r.leftovers(), "the environment runs")
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 130, r.wait(t, time.Minute))
	r.requireNothingLeft(t)
}

// With KUBECONFIG and KONG_ADMIN_URL set, the script starts neither an API server nor an
// emulator and runs konductor against them.
func TestLocalEnvExternalClusterAndKong(t *testing.T) {
	withOwnAPIServer(t)
	kong := startEmulator(t, kongemu.DBLess)
	user, err := env.AddUser(envtest.User{Name: "local-env-test", Groups: []string{"system:masters"}}, adminConfig)
	require.NoError(t, err)
	kcfg, err := user.KubeConfig()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, kcfg, 0o600))

	r := startLocalRun(t, map[string]string{"RUN_ONCE": "1", "KUBECONFIG": path, "KONG_ADMIN_URL": kong.URL,
		"APPLY_EXAMPLES": "1", "KONDUCTOR_ARGS": "--watch-namespace=konductor-demo"})
	require.Equal(t, 0, r.wait(t, 3*time.Minute), r.out.String())
	out := r.out.String()
	require.Contains(t, out, "KUBECONFIG and KONG_ADMIN_URL are set")
	require.NotContains(t, out, "started kube-apiserver")
	require.NotContains(t, out, "started kong-emulator")
	r.requireExamplesSynced(t)
	r.requireNothingLeft(t)

	names := map[string]bool{}
	for _, rt := range kong.Entities("routes") {
		names[fmt.Sprint(rt["name"])] = true
	}
	for _, route := range exampleRoutes {
		require.True(t, names[route], "Kong holds %s: %v", route, names)
	}
}
