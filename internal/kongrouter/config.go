package kongrouter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kong/go-kong/kong"
)

// Config is what a Kong gateway holds that decides where a request goes and what runs on it:
// its flat entities, each reference to another entity by id, as a database-backed Kong stores
// them and a DB-less Kong holds a loaded declarative configuration.
type Config struct {
	Flavor    Flavor
	Services  []*kong.Service
	Routes    []*kong.Route
	Upstreams []*kong.Upstream
	Targets   []*kong.Target
	Plugins   []*kong.Plugin
	Consumers []*kong.Consumer
	// Credentials of the authentication plugins konductor emits, and ACL groups.
	KeyAuths   []*kong.KeyAuth
	BasicAuths []*kong.BasicAuth
	ACLGroups  []*kong.ACLGroup
	// Certificates and SNIs serve TLS by SNI.
	Certificates []*kong.Certificate
	SNIs         []*kong.SNI
	// CACertificates verify upstream certificates (a service's ca_certificates).
	CACertificates []*kong.CACertificate
}

// entityKinds names each Config list by Kong's schema name.
func (c *Config) entityKinds() map[string]any {
	return map[string]any{
		"services": &c.Services, "routes": &c.Routes, "upstreams": &c.Upstreams, "targets": &c.Targets,
		"plugins": &c.Plugins, "consumers": &c.Consumers, "keyauth_credentials": &c.KeyAuths,
		"basicauth_credentials": &c.BasicAuths, "acls": &c.ACLGroups, "certificates": &c.Certificates,
		"snis": &c.SNIs, "ca_certificates": &c.CACertificates,
	}
}

// ConfigFromEntities reads a Config from entities in the Admin API's response form (foreign
// keys as {"id": ...}), by Kong schema name: what the Kong emulator holds, or what a Kong lists.
func ConfigFromEntities(flavor Flavor, entities func(kind string) []map[string]any) (*Config, error) {
	return ConfigFromEntityJSON(flavor, func(kind string) ([]json.RawMessage, error) {
		var out []json.RawMessage
		for _, e := range entities(kind) {
			raw, err := json.Marshal(e)
			if err != nil {
				return nil, err
			}
			out = append(out, raw)
		}
		return out, nil
	})
}

// ConfigFromEntityJSON is ConfigFromEntities over entities already encoded as JSON objects.
func ConfigFromEntityJSON(flavor Flavor, entities func(kind string) ([]json.RawMessage, error)) (*Config, error) {
	c := &Config{Flavor: flavor}
	for kind, into := range c.entityKinds() {
		list, err := entities(kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		if len(list) == 0 {
			continue
		}
		var raw bytes.Buffer
		raw.WriteByte('[')
		for i, e := range list {
			if i > 0 {
				raw.WriteByte(',')
			}
			raw.Write(e)
		}
		raw.WriteByte(']')
		if err := json.Unmarshal(raw.Bytes(), into); err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
	}
	return c, nil
}
