package manager

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
)

// --proxy-timeout-seconds bounds every Admin API request (KIC's flag, default 30s).
func TestAdminHTTPClientTimeout(t *testing.T) {
	cfg, err := config.Parse([]string{"--proxy-timeout-seconds=2"}, func(string) string { return "" })
	require.NoError(t, err)
	c, err := AdminHTTPClient(cfg)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.Timeout)

	cfg, err = config.Parse(nil, func(string) string { return "" })
	require.NoError(t, err)
	c, err = AdminHTTPClient(cfg)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, c.Timeout)
}
