package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/konductor/konductor/internal/store"
)

var (
	// env is the shared API server, with Kong's CRDs installed.
	env *envtest.Environment
	// admin is an unrestricted client of env.
	admin client.Client
	// adminConfig is its configuration.
	adminConfig *rest.Config
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// assets finds the envtest binaries: $KUBEBUILDER_ASSETS, or the folder hack/envtest-assets.sh
// reports when they are already built (it returns at once then).
func assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command(filepath.Join(repoRoot(), "hack", "envtest-assets.sh"), "--cached-only").Output()
	if err != nil {
		return "", fmt.Errorf("no envtest binaries: run `make envtest-assets` (or set KUBEBUILDER_ASSETS): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// envtest logs through controller-runtime's root logger; each replica has its own logger.
	ctrllog.SetLogger(logr.Discard())
	dir, err := assets()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	env = &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	// Room for the large handover variant (2,000 Services) and every other test's Services.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/12")
	adminConfig, err = env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: starting kube-apiserver and etcd:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: stopping envtest:", err)
		}
	}()
	admin, err = client.New(adminConfig, client.Options{Scheme: store.NewScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	return m.Run()
}
