package dbless

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongrules"
)

// configOfSize is a valid configuration of an upstream whose tag pads it to about size bytes.
func configOfSize(name string, size int) []byte {
	return []byte(`{"_format_version":"3.0","upstreams":[{"name":"` + name + `","tags":["` + strings.Repeat("x", size) + `"]}]}`)
}

func emulatedGateway(t *testing.T, limit string) (*kongemu.Server, *Gateway) {
	t.Helper()
	srv, err := kongemu.New(kongemu.Options{AdminMaxBodySize: limit}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	client, err := kong.NewClient(kong.String(srv.URL), nil)
	require.NoError(t, err)
	return srv, New(client)
}

// A body over the limit GET / said is not sent: the refusal names its size, the limit and
// the setting to raise; the gateway keeps what it holds, and a restarted one gets it back.
func TestBodyOverTheLimitIsNotSent(t *testing.T) {
	ctx := context.Background()
	srv, g := emulatedGateway(t, "64k")
	g.SetBodyLimit(64 << 10)

	_, err := g.Push(ctx, configOfSize("small", 1000))
	require.NoError(t, err)
	held := srv.ConfigHash()
	posts := srv.RequestCount(http.MethodPost, "/config")

	big := configOfSize("big", 100<<10)
	_, err = g.Push(ctx, big)
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)
	require.NotNil(t, rej.TooLarge)
	size := int64(len(Body(big)))
	assert.Equal(t, BodyTooLarge{Size: size, Limit: 64 << 10}, *rej.TooLarge)
	for _, want := range []string{"65536 bytes", "nginx_admin_client_max_body_size", kongrules.AdminMaxBodySizeEnv, kongrules.AdminBodyBufferSizeEnv} {
		assert.Contains(t, rej.Error(), want)
	}
	assert.Equal(t, posts, srv.RequestCount(http.MethodPost, "/config"), "not sent")
	assert.Equal(t, held, srv.ConfigHash(), "the gateway keeps what it held")

	// Kong restarts while the body is still too large: it gets the last good one back.
	srv.Restart()
	out, err := g.Push(ctx, big)
	require.ErrorAs(t, err, &rej)
	assert.Equal(t, Restored, out)
	assert.Equal(t, held, srv.ConfigHash())
	assert.Equal(t, posts+1, srv.RequestCount(http.MethodPost, "/config"), "only the last good one was sent")
}

// A 413 that comes anyway (a limit GET / did not say, or a Kong whose limit was lowered) is a
// refusal like a 400: not sent again while the body is the same, the gateway keeps what it held.
func TestAnswer413IsARefusal(t *testing.T) {
	ctx := context.Background()
	srv, g := emulatedGateway(t, "64k") // the gateway is not told the limit

	_, err := g.Push(ctx, configOfSize("small", 1000))
	require.NoError(t, err)
	held := srv.ConfigHash()

	big := configOfSize("big", 100<<10)
	_, err = g.Push(ctx, big)
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)
	require.NotNil(t, rej.TooLarge)
	assert.Equal(t, int64(len(Body(big))), rej.TooLarge.Size)
	assert.Zero(t, rej.TooLarge.Limit, "not known")
	assert.Equal(t, kongrules.RequestEntityTooLargeBody, string(rej.Raw))
	assert.Contains(t, rej.Error(), kongrules.AdminMaxBodySizeEnv)
	posts := srv.RequestCount(http.MethodPost, "/config")

	_, err = g.Push(ctx, big)
	require.True(t, errors.As(err, &rej) && rej.TooLarge != nil)
	assert.Equal(t, posts, srv.RequestCount(http.MethodPost, "/config"), "not sent again")
	assert.Equal(t, held, srv.ConfigHash())
}
