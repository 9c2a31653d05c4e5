package redact

import (
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// What goes to Konnect holds no secret of the configuration, each credential keeps a value
// of its own, and the configuration given is not changed.
func TestSanitizedContent(t *testing.T) {
	c := &file.Content{
		Certificates: []file.FCertificate{{ID: kong.String("c1"), Cert: kong.String("CERT"), Key: kong.String("PRIVATE")}},
		Consumers: []file.FConsumer{{Consumer: kong.Consumer{Username: kong.String("alice")},
			KeyAuths:   []*kong.KeyAuth{{ID: kong.String("k1"), Key: kong.String("alice-key")}, {ID: kong.String("k2"), Key: kong.String("alice-key-2")}},
			BasicAuths: []*kong.BasicAuth{{Username: kong.String("alice"), Password: kong.String("pw")}},
			JWTAuths:   []*kong.JWTAuth{{Key: kong.String("issuer"), Secret: kong.String("jwt-secret")}},
		}},
		Plugins: []file.FPlugin{{Plugin: kong.Plugin{Name: kong.String("rate-limiting"),
			Config: kong.Configuration{"minute": 5, "redis": map[string]any{"host": "redis", "password": "redis-pw"}}}}},
	}
	got := SanitizedContent(c)
	require.Equal(t, Redacted, *got.Certificates[0].Key)
	require.Equal(t, "CERT", *got.Certificates[0].Cert)
	require.Equal(t, "REDACTED-k1", *got.Consumers[0].KeyAuths[0].Key)
	require.Equal(t, "REDACTED-k2", *got.Consumers[0].KeyAuths[1].Key)
	require.Equal(t, Redacted, *got.Consumers[0].BasicAuths[0].Password)
	require.Equal(t, "alice", *got.Consumers[0].BasicAuths[0].Username)
	require.Equal(t, Redacted, *got.Consumers[0].JWTAuths[0].Secret)
	require.Equal(t, "issuer", *got.Consumers[0].JWTAuths[0].Key)
	redis := got.Plugins[0].Config["redis"].(map[string]any)
	require.Equal(t, Redacted, redis["password"])
	require.Equal(t, "redis", redis["host"])
	require.EqualValues(t, 5, got.Plugins[0].Config["minute"])

	require.Equal(t, "PRIVATE", *c.Certificates[0].Key, "the original is left as it was")
	require.Equal(t, "alice-key", *c.Consumers[0].KeyAuths[0].Key)
	require.Equal(t, "redis-pw", c.Plugins[0].Config["redis"].(map[string]any)["password"])
}
