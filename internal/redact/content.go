package redact

import (
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
)

// Redacted is the value that stands for a secret in a configuration sent where secrets do
// not belong (a Konnect control plane; KIC's SanitizedCopy writes the same word).
const Redacted = "REDACTED"

// SanitizedContent is a copy of c without its secrets, for a Konnect control plane (KIC's
// KongState.SanitizedCopy, on by default with its SanitizeKonnectConfigDumps gate):
// certificates' keys, credentials' secrets (a key-auth key becomes REDACTED-<its ID>: keys are
// unique in Kong, and the same credential must give the same value at every upload) and the
// string values under secret-named plugin configuration fields (the fields ForState masks in
// messages). What identifies an entity (names, IDs, usernames, a JWT's key and RSA public key)
// stays.
func SanitizedContent(c *file.Content) *file.Content {
	out := c.DeepCopy()
	for i := range out.Certificates {
		if out.Certificates[i].Key != nil {
			out.Certificates[i].Key = kong.String(Redacted)
		}
	}
	for i := range out.Consumers {
		cons := &out.Consumers[i]
		for _, k := range cons.KeyAuths {
			if k.ID != nil {
				k.Key = kong.String(Redacted + "-" + *k.ID)
			} else {
				k.Key = kong.String(Redacted)
			}
		}
		for _, b := range cons.BasicAuths {
			b.Password = kong.String(Redacted)
		}
		for _, h := range cons.HMACAuths {
			h.Secret = kong.String(Redacted)
		}
		for _, j := range cons.JWTAuths {
			if j.Secret != nil {
				j.Secret = kong.String(Redacted)
			}
		}
		for _, o := range cons.Oauth2Creds {
			o.ClientSecret = kong.String(Redacted)
		}
		for _, p := range cons.Plugins {
			p.Config = sanitizedConfig(p.Config)
		}
	}
	for i := range out.Plugins {
		out.Plugins[i].Config = sanitizedConfig(out.Plugins[i].Config)
	}
	for i := range out.Services {
		for _, p := range out.Services[i].Plugins {
			p.Config = sanitizedConfig(p.Config)
		}
		for _, r := range out.Services[i].Routes {
			for _, p := range r.Plugins {
				p.Config = sanitizedConfig(p.Config)
			}
		}
	}
	for i := range out.Routes {
		for _, p := range out.Routes[i].Plugins {
			p.Config = sanitizedConfig(p.Config)
		}
	}
	return out
}

// sanitizedConfig replaces every string under a secret-named field (at any depth) with
// Redacted.
func sanitizedConfig(cfg kong.Configuration) kong.Configuration {
	if cfg == nil {
		return nil
	}
	var walk func(v any, secret bool) any
	walk = func(v any, secret bool) any {
		switch t := v.(type) {
		case map[string]any:
			for k, sub := range t {
				t[k] = walk(sub, secret || secretField.MatchString(k))
			}
			return t
		case []any:
			for i, sub := range t {
				t[i] = walk(sub, secret)
			}
			return t
		case string:
			if secret {
				return Redacted
			}
		}
		return v
	}
	walk(map[string]any(cfg), false)
	return cfg
}
