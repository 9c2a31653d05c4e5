package translator

import (
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
)

// Kong services that share a host share the upstream of that name: it is kept once, from the
// first service by name, and the next one's takes its place when that service goes (a splice
// that removes it assembles the State again from the remaining parts).
func TestWithServicesKeepsOneUpstreamPerName(t *testing.T) {
	part := func(name, host string) servicePart {
		return servicePart{
			name:     name,
			svc:      &file.FService{Service: kong.Service{Name: kong.String(name), Host: kong.String(host)}},
			upstream: &file.FUpstream{Upstream: kong.Upstream{Name: kong.String(host)}},
		}
	}
	tcp := part("default.dns.53", "dns.default.53.svc")
	udp := part("default.dns.53.udp", "dns.default.53.svc")
	web := part("default.web.80", "web.default.80.svc")

	state := withServices(&kongstate.State{}, []servicePart{tcp, udp, web})
	require.Len(t, state.Services, 3, "every Kong service stays")
	require.Equal(t, []*file.FUpstream{tcp.upstream, web.upstream}, state.Upstreams)

	state = withServices(&kongstate.State{}, []servicePart{udp, web})
	require.Equal(t, []*file.FUpstream{udp.upstream, web.upstream}, state.Upstreams)
}
