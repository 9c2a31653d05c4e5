package dataplane

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/kongemu"
)

// Issue #44 item 3 with issue #45's limit: a tenant's four plugins of 200 KiB each take a DB-less
// body past the gateway's limit (600 KiB here, 10 MiB by default). The body is not sent; the
// plugins, the largest objects, are named in the refusal and the fallback configuration leaves
// them out with their Ingresses, so every other object still reaches Kong.
func TestOversizedObjectsAreLeftOutSoTheOthersReachKong(t *testing.T) {
	srv, err := kongemu.New(kongemu.Options{AdminMaxBodySize: "600k"}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
	require.NoError(t, err)
	body := strings.Repeat("x", 200<<10)
	var objs []client.Object
	for i := range 20 {
		objs = append(objs, app(fmt.Sprintf("small-%d", i), "")...)
	}
	for i := range 4 {
		name := fmt.Sprintf("heavy-%d", i)
		objs = append(objs, app(name, name+"-page")...)
		objs = append(objs, plugin(name+"-page", "request-termination", fmt.Sprintf(`{"status_code":200,"body":%q}`, body)))
	}
	_, rep, _, l := fallbackLoopOn(t, srv, c, Options{Fallback: true}, objs)
	<-l.FirstSyncDone()

	res := lastFallback(t, rep)
	rej := refusal(res.Err)
	require.NotNil(t, rej)
	require.NotNil(t, rej.TooLarge, "the body was over the gateway's limit")
	require.NoError(t, res.Fallback.Err, "the fallback fits and was taken")
	var broken []string
	for _, e := range rej.Entities {
		broken = append(broken, e.Object.Kind+" "+e.Object.Name)
		require.Contains(t, e.Message, "over the gateway's 614400-byte limit")
	}
	require.NotEmpty(t, broken)
	for _, b := range broken {
		require.True(t, strings.HasPrefix(b, "KongPlugin heavy-"), "only the heavy plugins are named: %v", broken)
	}
	for i := range 20 {
		require.True(t, hasRoute(srv, fmt.Sprintf("small-%d", i)))
	}
	left := 0
	for i := range 4 {
		if !hasRoute(srv, fmt.Sprintf("heavy-%d", i)) {
			left++
		}
	}
	require.Equal(t, len(broken), left, "each plugin left out takes its Ingress")
}

// Many ordinary objects over the limit are the cluster, not a tenant's excess: none is named,
// and the gateway keeps what it holds (issue #45).
func TestOrdinaryObjectsOverTheLimitAreNotLeftOut(t *testing.T) {
	srv, err := kongemu.New(kongemu.Options{AdminMaxBodySize: "8k"}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
	require.NoError(t, err)
	var objs []client.Object
	for i := range 40 {
		objs = append(objs, app(fmt.Sprintf("small-%d", i), "")...)
	}
	_, rep, _, _ := fallbackLoopOn(t, srv, c, Options{Fallback: true}, objs)
	waitRefusalWithoutFallback(t, rep)
	require.False(t, hasRoute(srv, "small-0"), "nothing was sent")
}

// A DB-less gateway's refusal says "rejected the configuration" once, with the gateway's URL
// (it said it twice: the dbless error's own text was the message).
func TestDBLessRefusalSaysItOnce(t *testing.T) {
	rej := fromDBLessRejection("http://kong:8001", &dbless.RejectedError{Message: "declarative config is invalid"}, nil)
	require.Equal(t, "gateway http://kong:8001 rejected the configuration: declarative config is invalid", rej.Error())
}
