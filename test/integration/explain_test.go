package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/explain"
)

// `konductor explain --kubeconfig` reads the cluster's objects as the controller does (its
// class and namespace flags), and `kubectl konductor explain` (the binary by the plugin's name)
// takes the current kubeconfig context: two namespaces' Ingresses share a host, the longer path
// of the other namespace wins, and the watched namespaces and the class decide what is seen.
func TestExplainFromCluster(t *testing.T) {
	parallel(t)
	bin, err := konductorBinary()
	require.NoError(t, err)
	nsA, nsB := newNamespace(t), newNamespace(t)
	host := nsA + ".explain.example.com"
	objs := app(nsA, "api", host)
	objs = append(objs, app(nsB, "admin", host)...)
	objs[len(objs)-1].(*netv1.Ingress).Spec.Rules[0].HTTP.Paths[0].Path = "/v1/admin"
	foreign := app(nsA, "foreign", host)
	other := "other"
	foreign[len(foreign)-1].(*netv1.Ingress).Spec.IngressClassName = &other
	foreign[len(foreign)-1].(*netv1.Ingress).Spec.Rules[0].HTTP.Paths[0].Path = "/v1/admin/x"
	createAll(t, append(objs, foreign[len(foreign)-1]))

	user, err := env.AddUser(envtest.User{Name: "explain-test", Groups: []string{"system:masters"}}, adminConfig)
	require.NoError(t, err)
	kcfg, err := user.KubeConfig()
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, kcfg, 0o600))
	plugin := filepath.Join(t.TempDir(), "kubectl-konductor")
	require.NoError(t, os.Symlink(bin, plugin))

	explainJSON := func(cmd *exec.Cmd) explain.Explanation {
		t.Helper()
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%v", cmd.Args)
		var x explain.Explanation
		require.NoError(t, json.Unmarshal(out, &x), "%s", out)
		return x
	}
	url := "http://" + host + "/v1/admin/x"
	both := nsA + "," + nsB
	x := explainJSON(exec.CommandContext(context.Background(), bin, "explain", url, "--kubeconfig", kubeconfig, "--watch-namespace", both, "-o", "json"))
	require.Equal(t, nsB+".admin.admin."+host+".80", x.Route.Name)
	require.Equal(t, "Ingress "+nsB+"/admin spec.rules[0].http.paths[0]", x.Route.Source.String())
	require.Equal(t, "http://10.0.0.1:8080/v1/admin/x", x.Forward.URL)
	require.Len(t, x.Losers, 1)
	require.Equal(t, nsA+".api.api."+host+".80", x.Losers[0].Route.Name)
	require.Contains(t, x.Losers[0].Why, "a shorter path")

	// The plugin, by the current context of $KUBECONFIG.
	cmd := exec.CommandContext(context.Background(), plugin, "explain", url, "--watch-namespace", both, "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	require.Equal(t, x, explainJSON(cmd))

	// One namespace watched: the other's Ingress is not there.
	x = explainJSON(exec.CommandContext(context.Background(), bin, "explain", url, "--kubeconfig", kubeconfig, "--watch-namespace", nsA, "-o", "json"))
	require.Equal(t, nsA+".api.api."+host+".80", x.Route.Name)
	require.Empty(t, x.Losers)

	// The other class: only its Ingress.
	x = explainJSON(exec.CommandContext(context.Background(), bin, "explain", url, "--kubeconfig", kubeconfig, "--watch-namespace", both,
		"--ingress-class", "other", "-o", "json"))
	require.Equal(t, nsA+".foreign.foreign."+host+".80", x.Route.Name)
	require.Empty(t, x.Losers)
}
