package integration

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server away when the controller starts (KIC #4207, #4618): the controller's own
// binary, started while the API server is stopped, waits for it instead of exiting. Meanwhile
// its log says so, konductor_kubernetes_api_reachable reads 0, /healthz is live, /readyz is
// not, and Kong is sent nothing; once the API server is started, the configuration reaches
// Kong.
func TestAPIServerAwayAtStart(t *testing.T) {
	o := startOwnEnv(t, filepath.Join(repoRoot(), "config", "crd"))
	ns := "away"
	o.createNamespace(t, ns)
	for _, name := range []string{"app-a", "app-b", "app-c"} {
		o.createAll(t, app(ns, name, name+".example.com"))
	}
	user, err := o.env.AddUser(envtest.User{Name: "konductor", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	raw, err := user.KubeConfig()
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, raw, 0o600))
	bin, err := konductorBinary()
	require.NoError(t, err)
	kong := startPushRecorder(t)

	apiServer := o.env.ControlPlane.GetAPIServer()
	o.killAPIServer(t)

	probes, metricsAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--kong-admin-url", kong.srv.URL,
		"--watch-namespace", ns, "--leader-elect=false", "--proxy-sync-seconds", "1",
		"--health-probe-bind-address", probes, "--metrics-bind-address", metricsAddr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("konductor log:\n%s", logs)
		}
	})

	require.Eventually(t, func() bool {
		return strings.Count(logs.String(), "Kubernetes API server unreachable at start: waiting for it") >= 2
	}, time.Minute, 50*time.Millisecond, "the log says, attempt after attempt, that the controller waits for the API server")
	require.Equal(t, http.StatusOK, httpStatus(t, "http://"+probes+"/healthz"), "live while waiting")
	require.Equal(t, http.StatusServiceUnavailable, httpStatus(t, "http://"+probes+"/readyz"), "not ready while waiting")
	require.Equal(t, "0", scrape(t, metricsAddr, "konductor_kubernetes_api_reachable"))
	select {
	case err := <-exited:
		t.Fatalf("the controller exited while the API server was away: %v", err)
	default:
	}
	require.Empty(t, kong.history(), "nothing is sent to Kong before the cache has synced")

	require.NoError(t, apiServer.Start())
	require.Eventually(t, func() bool { return kong.last("routes") == 3 }, 2*time.Minute, 20*time.Millisecond,
		"the configuration reaches Kong once the API server is there")
	require.Contains(t, logs.String(), "Kubernetes API server answers; starting")
	for i, n := range kong.history() {
		require.Equal(t, kong.history()[len(kong.history())-1], n, "push %d: every push held the whole configuration", i)
	}
	require.Eventually(t, func() bool { return httpStatus(t, "http://"+probes+"/readyz") == http.StatusOK },
		time.Minute, 50*time.Millisecond, "ready once synced")
	require.Equal(t, "1", scrape(t, metricsAddr, "konductor_kubernetes_api_reachable"))
}

// httpStatus is the status of a GET of url, 0 when nothing answers.
func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// scrape is the value of the unlabelled metric name on the Prometheus endpoint at addr, ""
// when it is not there.
func scrape(t *testing.T, addr, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}
