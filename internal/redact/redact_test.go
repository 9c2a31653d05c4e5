package redact

import (
	"errors"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
)

const pemKey = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"

func state() *kongstate.State {
	return &kongstate.State{
		Consumers: []*file.FConsumer{{
			Consumer:    kong.Consumer{Username: kong.String("alice")},
			KeyAuths:    []*kong.KeyAuth{{Key: kong.String("alice-key-123")}},
			BasicAuths:  []*kong.BasicAuth{{Username: kong.String("alice"), Password: kong.String("hunter2hunter2")}},
			HMACAuths:   []*kong.HMACAuth{{Username: kong.String("alice"), Secret: kong.String("hmac-shh")}},
			JWTAuths:    []*kong.JWTAuth{{Key: kong.String("issuer-a"), Secret: kong.String("jwt-shh-456")}},
			Oauth2Creds: []*kong.Oauth2Credential{{ClientID: kong.String("app"), ClientSecret: kong.String("oauth-shh-789")}},
		}},
		Certificates: []*file.FCertificate{{Cert: kong.String("-----BEGIN CERTIFICATE-----"), Key: kong.String("cert-key-body-xyz")}},
		Plugins: []*file.FPlugin{{Plugin: kong.Plugin{Name: kong.String("rate-limiting"), Config: kong.Configuration{
			"minute": 5, "policy": "redis",
			"redis": map[string]any{"host": "redis.default", "password": "redis-pw-000"}, // configFrom's, typically
		}}}},
	}
}

func TestRedact(t *testing.T) {
	r := ForState(state())
	for _, tc := range []struct{ name, in, want string }{
		{"credential echoed by Kong (database mode)", `UNIQUE violation detected on '{key="alice-key-123"}'`, `UNIQUE violation detected on '{key=[redacted]}'`},
		{"unknown key in a UNIQUE violation", `UNIQUE violation detected on '{key="someone-elses"}'`, `UNIQUE violation detected on '{key=[redacted]}'`},
		{"known values anywhere", "could not use hunter2hunter2, hmac-shh, jwt-shh-456 or oauth-shh-789", "could not use [redacted], [redacted], [redacted] or [redacted]"},
		{"certificate key", "invalid key cert-key-body-xyz", "invalid key [redacted]"},
		{"PEM private key", "bad certificate: " + pemKey + " (line 1)", "bad certificate: [redacted] (line 1)"},
		{"PEM private key cut short", "bad: -----BEGIN RSA PRIVATE KEY-----\nMIIE", "bad: [redacted]"},
		{"plugin configuration value under a secret field (configFrom)", "cannot connect to redis with redis-pw-000", "cannot connect to redis with [redacted]"},
		{"JSON echo", `entity {"username":"alice","password":"x1"}`, `entity {"username":"alice","password":[redacted]}`},
		{"client_secret=", "client_secret=abc other", "client_secret=[redacted] other"},
		{"a field and its error stay", "invalid key: expected a string", "invalid key: expected a string"},
		{"ordinary words stay", "key-auth plugin: cache_key=route policy: redis", "key-auth plugin: cache_key=route policy: redis"},
		{"plugin fields that are no secret stay", "redis.default minute 5", "redis.default minute 5"},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, r.String(tc.in)) })
	}
}

func TestRedactWithoutState(t *testing.T) {
	var r *Redactor
	require.Equal(t, `'{key=[redacted]}'`, r.String(`'{key="k-1"}'`))
	require.Equal(t, "nothing secret", ForState(nil).String("nothing secret"))
	require.Equal(t, "ab and abc", New("ab", "abc").String("ab and abc"), "values too short to mask everywhere")
}

func TestRedactError(t *testing.T) {
	base := errors.New("refused alice-key-123")
	err := ForState(state()).Error(base)
	require.Equal(t, "refused [redacted]", err.Error())
	require.ErrorIs(t, err, base)
	require.NoError(t, ForState(nil).Error(nil))
}
