package kongemu

import (
	"context"
	"net/http"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

func gokongClient(t *testing.T, opts Options) (*Emulator, *kong.Client) {
	t.Helper()
	e := New(opts)
	srv, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	c, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
	require.NoError(t, err)
	return e, c
}

func apiCode(err error) int {
	if e, ok := err.(*kong.APIError); ok {
		return e.Code()
	}
	return 0
}

// TestGoKongEveryEntity drives each entity type through go-kong: create
// (POST and PUT with an id), get by id and endpoint key, update, list with
// tags, the errors go-kong callers rely on, and delete.
func TestGoKongEveryEntity(t *testing.T) {
	ctx := context.Background()
	cert, key := testCert(t, "a.example.com", false, false)
	caCert, _ := testCert(t, "ca.example.com", true, true)
	const fixedID = "5f1c2a8e-8b0e-4c61-9d0a-6f1f1c7d2a10"

	// setup makes a consumer "alice", a service "svc", an upstream "up".
	setup := func(t *testing.T, c *kong.Client) {
		_, err := c.Consumers.Create(ctx, &kong.Consumer{Username: kong.String("alice")})
		require.NoError(t, err)
		_, err = c.Services.Create(ctx, &kong.Service{Name: kong.String("svc"), Host: kong.String("example.com")})
		require.NoError(t, err)
		_, err = c.Upstreams.Create(ctx, &kong.Upstream{Name: kong.String("up")})
		require.NoError(t, err)
	}

	cases := []struct {
		name string
		run  func(t *testing.T, e *Emulator, c *kong.Client)
	}{
		{"services", func(t *testing.T, e *Emulator, c *kong.Client) {
			s, err := c.Services.Create(ctx, &kong.Service{Name: kong.String("s1"), Host: kong.String("h.example.com"),
				Tags: kong.StringSlice("a", "b")})
			require.NoError(t, err)
			require.Equal(t, 80, *s.Port)
			require.Equal(t, 60000, *s.ConnectTimeout)
			require.Equal(t, 5, *s.Retries)
			require.True(t, *s.Enabled)
			_, err = c.Services.Create(ctx, &kong.Service{ID: kong.String(fixedID), Name: kong.String("s2"), Host: kong.String("h2")})
			require.NoError(t, err)
			got, err := c.Services.Get(ctx, kong.String("s2"))
			require.NoError(t, err)
			require.Equal(t, fixedID, *got.ID)
			got.Port = kong.Int(8080)
			upd, err := c.Services.Update(ctx, got)
			require.NoError(t, err)
			require.Equal(t, 8080, *upd.Port)
			_, err = c.Services.Create(ctx, &kong.Service{Name: kong.String("s1"), Host: kong.String("x")})
			require.Equal(t, 409, apiCode(err))
			_, err = c.Services.Create(ctx, &kong.Service{Name: kong.String("s3")})
			require.Equal(t, 400, apiCode(err))
			list, _, err := c.Services.List(ctx, &kong.ListOpt{Tags: kong.StringSlice("a", "b"), MatchAllTags: true})
			require.NoError(t, err)
			require.Len(t, list, 1)
			all, err := c.Services.ListAll(ctx)
			require.NoError(t, err)
			require.Len(t, all, 3)
			require.NoError(t, c.Services.Delete(ctx, kong.String("s1")))
			_, err = c.Services.Get(ctx, kong.String("s1"))
			require.True(t, kong.IsNotFoundErr(err))
		}},
		{"routes", func(t *testing.T, e *Emulator, c *kong.Client) {
			// go-kong puts the argument in service.id: it must be the id (Kong rejects a name there).
			_, err := c.Routes.CreateInService(ctx, kong.String("svc"), &kong.Route{Paths: kong.StringSlice("/z")})
			require.Equal(t, 400, apiCode(err))
			svcID := e.Entity("services", "svc")["id"].(string)
			r, err := c.Routes.CreateInService(ctx, kong.String(svcID), &kong.Route{Name: kong.String("r1"),
				Paths: kong.StringSlice("/a", "~/b/\\d+")})
			require.NoError(t, err)
			require.Equal(t, []*string{kong.String("http"), kong.String("https")}, r.Protocols)
			require.True(t, *r.StripPath)
			require.Equal(t, 426, *r.HTTPSRedirectStatusCode)
			require.Equal(t, "v0", *r.PathHandling)
			r.Hosts = kong.StringSlice("example.com")
			_, err = c.Routes.Update(ctx, r)
			require.NoError(t, err)
			got, err := c.Routes.Get(ctx, kong.String("r1"))
			require.NoError(t, err)
			require.Equal(t, "example.com", *got.Hosts[0])
			list, _, err := c.Routes.ListForService(ctx, kong.String("svc"), nil)
			require.NoError(t, err)
			require.Len(t, list, 1)
			_, err = c.Routes.Create(ctx, &kong.Route{Name: kong.String("bad"), Paths: kong.StringSlice("nope")})
			require.Equal(t, 400, apiCode(err))
			_, err = c.Routes.Create(ctx, &kong.Route{Paths: kong.StringSlice("/x"),
				Service: &kong.Service{ID: kong.String(fixedID)}})
			require.Equal(t, 400, apiCode(err), "foreign key")
			err = c.Services.Delete(ctx, kong.String("svc"))
			require.Equal(t, 400, apiCode(err), "service still has routes")
			require.NoError(t, c.Routes.Delete(ctx, kong.String("r1")))
			require.NoError(t, c.Services.Delete(ctx, kong.String("svc")))
		}},
		{"upstreams and targets", func(t *testing.T, e *Emulator, c *kong.Client) {
			u, err := c.Upstreams.Get(ctx, kong.String("up"))
			require.NoError(t, err)
			require.Equal(t, "round-robin", *u.Algorithm)
			require.Equal(t, 10000, *u.Slots)
			require.Equal(t, 10, *u.Healthchecks.Active.Concurrency)
			tg, err := c.Targets.Create(ctx, kong.String("up"), &kong.Target{Target: kong.String("10.0.0.1")})
			require.NoError(t, err)
			require.Equal(t, "10.0.0.1:8000", *tg.Target)
			require.Equal(t, 100, *tg.Weight)
			// Create with an ID: go-kong tries PUT (update-only, 404), then POST.
			tg2, err := c.Targets.Create(ctx, kong.String("up"), &kong.Target{ID: kong.String(fixedID), Target: kong.String("10.0.0.2:80")})
			require.NoError(t, err)
			require.Equal(t, fixedID, *tg2.ID)
			_, err = c.Targets.Create(ctx, kong.String("up"), &kong.Target{Target: kong.String("10.0.0.2:80")})
			require.Equal(t, 409, apiCode(err))
			list, _, err := c.Targets.List(ctx, kong.String("up"), nil)
			require.NoError(t, err)
			require.Len(t, list, 2)
			require.NoError(t, c.Targets.Delete(ctx, kong.String("up"), tg.ID))
			require.NoError(t, c.Upstreams.Delete(ctx, kong.String("up")))
			require.Empty(t, e.Entities("targets"), "targets cascade with their upstream")
		}},
		{"plugins", func(t *testing.T, e *Emulator, c *kong.Client) {
			svcID := e.Entity("services", "svc")["id"].(string)
			p, err := c.Plugins.Create(ctx, &kong.Plugin{Name: kong.String("rate-limiting"), InstanceName: kong.String("rl"),
				Service: &kong.Service{ID: kong.String(svcID)}, Config: kong.Configuration{"minute": 10}})
			require.NoError(t, err)
			require.Equal(t, "local", p.Config["policy"])
			require.Equal(t, float64(6379), p.Config["redis"].(map[string]any)["port"])
			require.True(t, *p.Enabled)
			_, err = c.Plugins.Create(ctx, &kong.Plugin{Name: kong.String("rate-limiting"),
				Service: &kong.Service{ID: kong.String(svcID)}, Config: kong.Configuration{"hour": 10}})
			require.Equal(t, 409, apiCode(err), "(name, route, service, consumer) is unique")
			_, err = c.Plugins.Create(ctx, &kong.Plugin{Name: kong.String("rate-limiting")})
			require.Equal(t, 400, apiCode(err), "needs a limit")
			_, err = c.Plugins.Create(ctx, &kong.Plugin{Name: kong.String("no-such-plugin")})
			require.Equal(t, 400, apiCode(err))
			got, err := c.Plugins.Get(ctx, kong.String("rl"))
			require.NoError(t, err)
			got.Config["minute"] = 20
			upd, err := c.Plugins.Update(ctx, got)
			require.NoError(t, err)
			require.Equal(t, float64(20), upd.Config["minute"])
			schema, err := c.Plugins.GetFullSchema(ctx, kong.String("rate-limiting"))
			require.NoError(t, err)
			require.Contains(t, schema, "fields")
			_, err = c.Plugins.GetFullSchema(ctx, kong.String("nope"))
			require.True(t, kong.IsNotFoundErr(err))
			list, err := c.Plugins.ListAllForService(ctx, kong.String("svc"))
			require.NoError(t, err)
			require.Len(t, list, 1)
			alice := &kong.Consumer{ID: kong.String(e.Entity("consumers", "alice")["id"].(string))}
			_, err = c.Plugins.Create(ctx, &kong.Plugin{Name: kong.String("key-auth"), Consumer: alice})
			require.Equal(t, 400, apiCode(err), "Kong refuses an authentication plugin on a consumer")
			_, err = c.Plugins.Create(ctx, &kong.Plugin{Name: kong.String("correlation-id"), Consumer: alice})
			require.NoError(t, err)
			require.NoError(t, c.Services.Delete(ctx, kong.String("svc")))
			require.Len(t, e.Entities("plugins"), 1, "plugins cascade with their service")
		}},
		{"consumers", func(t *testing.T, e *Emulator, c *kong.Client) {
			_, err := c.Consumers.Create(ctx, &kong.Consumer{CustomID: kong.String("cid"), Tags: kong.StringSlice("t")})
			require.NoError(t, err)
			_, err = c.Consumers.Create(ctx, &kong.Consumer{Tags: kong.StringSlice("t")})
			require.Equal(t, 400, apiCode(err))
			_, err = c.Consumers.Create(ctx, &kong.Consumer{Username: kong.String("alice")})
			require.Equal(t, 409, apiCode(err))
			got, err := c.Consumers.Get(ctx, kong.String("alice"))
			require.NoError(t, err)
			got.CustomID = kong.String("alice-1")
			_, err = c.Consumers.Update(ctx, got)
			require.NoError(t, err)
			all, err := c.Consumers.ListAll(ctx)
			require.NoError(t, err)
			require.Len(t, all, 2)
			require.NoError(t, c.Consumers.Delete(ctx, kong.String("alice")))
		}},
		{"certificates and snis", func(t *testing.T, e *Emulator, c *kong.Client) {
			ce, err := c.Certificates.Create(ctx, &kong.Certificate{Cert: kong.String(cert), Key: kong.String(key),
				SNIs: kong.StringSlice("a.example.com")})
			require.NoError(t, err)
			require.Equal(t, []*string{kong.String("a.example.com")}, ce.SNIs)
			sni, err := c.SNIs.Create(ctx, &kong.SNI{Name: kong.String("b.example.com"), Certificate: &kong.Certificate{ID: ce.ID}})
			require.NoError(t, err)
			_, err = c.SNIs.Create(ctx, &kong.SNI{Name: kong.String("b.example.com"), Certificate: &kong.Certificate{ID: ce.ID}})
			require.Equal(t, 409, apiCode(err))
			got, err := c.SNIs.Get(ctx, kong.String("b.example.com"))
			require.NoError(t, err)
			require.Equal(t, *sni.ID, *got.ID)
			gc, err := c.Certificates.Get(ctx, kong.String("b.example.com"))
			require.NoError(t, err)
			require.Equal(t, *ce.ID, *gc.ID)
			_, err = c.Certificates.Create(ctx, &kong.Certificate{Cert: kong.String("x"), Key: kong.String(key)})
			require.Equal(t, 400, apiCode(err))
			require.NoError(t, c.Certificates.Delete(ctx, ce.ID))
			require.Empty(t, e.Entities("snis"), "snis cascade with their certificate")
		}},
		{"ca_certificates", func(t *testing.T, e *Emulator, c *kong.Client) {
			ca, err := c.CACertificates.Create(ctx, &kong.CACertificate{Cert: kong.String(caCert)})
			require.NoError(t, err)
			require.NotEmpty(t, *ca.CertDigest)
			_, err = c.CACertificates.Create(ctx, &kong.CACertificate{Cert: kong.String(caCert)})
			require.Equal(t, 409, apiCode(err))
			_, err = c.CACertificates.Create(ctx, &kong.CACertificate{Cert: kong.String(cert)})
			require.Equal(t, 400, apiCode(err), "not a CA")
			list, err := c.CACertificates.ListAll(ctx)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.NoError(t, c.CACertificates.Delete(ctx, ca.ID))
		}},
		{"key-auth", func(t *testing.T, e *Emulator, c *kong.Client) {
			k, err := c.KeyAuths.Create(ctx, kong.String("alice"), &kong.KeyAuth{Key: kong.String("k1")})
			require.NoError(t, err)
			gen, err := c.KeyAuths.Create(ctx, kong.String("alice"), &kong.KeyAuth{})
			require.NoError(t, err)
			require.NotEmpty(t, *gen.Key, "generated when absent")
			_, err = c.KeyAuths.Create(ctx, kong.String("alice"), &kong.KeyAuth{Key: kong.String("k1")})
			require.Equal(t, 409, apiCode(err))
			got, err := c.KeyAuths.Get(ctx, kong.String("alice"), kong.String("k1"))
			require.NoError(t, err)
			require.Equal(t, *k.ID, *got.ID)
			all, err := c.KeyAuths.ListAll(ctx)
			require.NoError(t, err)
			require.Len(t, all, 2)
			require.NoError(t, c.Consumers.Delete(ctx, kong.String("alice")))
			require.Empty(t, e.Entities("keyauth_credentials"), "credentials cascade with their consumer")
		}},
		{"basic-auth", func(t *testing.T, e *Emulator, c *kong.Client) {
			b, err := c.BasicAuths.Create(ctx, kong.String("alice"), &kong.BasicAuth{Username: kong.String("u"), Password: kong.String("p")})
			require.NoError(t, err)
			require.NotEqual(t, "p", *b.Password, "stored hashed")
			_, err = c.BasicAuths.Create(ctx, kong.String("alice"), &kong.BasicAuth{Username: kong.String("u"), Password: kong.String("q")})
			require.Equal(t, 409, apiCode(err))
			_, err = c.BasicAuths.Create(ctx, kong.String("alice"), &kong.BasicAuth{Username: kong.String("v")})
			require.Equal(t, 400, apiCode(err))
			got, err := c.BasicAuths.Get(ctx, kong.String("alice"), kong.String("u"))
			require.NoError(t, err)
			require.Equal(t, *b.ID, *got.ID)
			require.NoError(t, c.BasicAuths.Delete(ctx, kong.String("alice"), b.ID))
		}},
		{"jwt", func(t *testing.T, e *Emulator, c *kong.Client) {
			j, err := c.JWTAuths.Create(ctx, kong.String("alice"), &kong.JWTAuth{Key: kong.String("iss-1")})
			require.NoError(t, err)
			require.Equal(t, "HS256", *j.Algorithm)
			require.NotEmpty(t, *j.Secret)
			_, err = c.JWTAuths.Create(ctx, kong.String("alice"), &kong.JWTAuth{Algorithm: kong.String("RS256")})
			require.Equal(t, 400, apiCode(err), "RS256 needs rsa_public_key")
			got, err := c.JWTAuths.Get(ctx, kong.String("alice"), kong.String("iss-1"))
			require.NoError(t, err)
			require.Equal(t, *j.ID, *got.ID)
			require.NoError(t, c.JWTAuths.Delete(ctx, kong.String("alice"), j.ID))
		}},
		{"hmac-auth", func(t *testing.T, e *Emulator, c *kong.Client) {
			h, err := c.HMACAuths.Create(ctx, kong.String("alice"), &kong.HMACAuth{Username: kong.String("hu")})
			require.NoError(t, err)
			require.NotEmpty(t, *h.Secret)
			got, err := c.HMACAuths.Get(ctx, kong.String("alice"), kong.String("hu"))
			require.NoError(t, err)
			require.Equal(t, *h.ID, *got.ID)
			all, err := c.HMACAuths.ListAll(ctx)
			require.NoError(t, err)
			require.Len(t, all, 1)
			require.NoError(t, c.HMACAuths.Delete(ctx, kong.String("alice"), h.ID))
		}},
		{"acls", func(t *testing.T, e *Emulator, c *kong.Client) {
			a, err := c.ACLs.Create(ctx, kong.String("alice"), &kong.ACLGroup{Group: kong.String("admins")})
			require.NoError(t, err)
			_, err = c.ACLs.Create(ctx, kong.String("alice"), &kong.ACLGroup{Group: kong.String("admins")})
			require.Equal(t, 409, apiCode(err))
			_, err = c.ACLs.Create(ctx, kong.String("alice"), &kong.ACLGroup{})
			require.Equal(t, 400, apiCode(err))
			got, err := c.ACLs.Get(ctx, kong.String("alice"), a.ID)
			require.NoError(t, err)
			require.Equal(t, "admins", *got.Group)
			list, _, err := c.ACLs.ListForConsumer(ctx, kong.String("alice"), nil)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.NoError(t, c.ACLs.Delete(ctx, kong.String("alice"), a.ID))
		}},
		{"oauth2", func(t *testing.T, e *Emulator, c *kong.Client) {
			o, err := c.Oauth2Credentials.Create(ctx, kong.String("alice"), &kong.Oauth2Credential{Name: kong.String("app"),
				RedirectURIs: kong.StringSlice("https://app.example.com/cb")})
			require.NoError(t, err)
			require.NotEmpty(t, *o.ClientID)
			require.NotEmpty(t, *o.ClientSecret)
			got, err := c.Oauth2Credentials.Get(ctx, kong.String("alice"), o.ClientID)
			require.NoError(t, err)
			require.Equal(t, *o.ID, *got.ID)
			require.NoError(t, c.Oauth2Credentials.Delete(ctx, kong.String("alice"), o.ID))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, client := gokongClient(t, Options{Mode: Postgres})
			setup(t, client)
			c.run(t, e, client)
		})
	}
}
