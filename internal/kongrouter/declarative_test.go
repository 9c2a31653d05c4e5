package kongrouter_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongrouter"
)

// A declarative configuration read by ConfigFromDeclarative holds what a DB-less Kong holds
// once sent it: for every translator golden output, the Kong emulator's entities after POST
// /config, kind by kind, with the same references (routes to services, plugins to their
// scope, targets to upstreams, credentials to consumers).
func TestConfigFromDeclarativeIsWhatKongLoads(t *testing.T) {
	outs, err := filepath.Glob("../translator/testdata/*/out_golden.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, outs)
	for _, out := range outs {
		t.Run(filepath.Base(filepath.Dir(out)), func(t *testing.T) {
			raw, err := os.ReadFile(out)
			require.NoError(t, err)
			got, err := kongrouter.ConfigFromDeclarative(kongrouter.TraditionalCompatible, raw)
			require.NoError(t, err)

			// What a Config does not hold, and which a community Kong refuses, is left out.
			var cfg map[string]any
			require.NoError(t, sigsyaml.Unmarshal(raw, &cfg))
			for _, k := range []string{"consumer_groups", "consumer_group_consumers", "degraphql_routes", "licenses", "vaults"} {
				delete(cfg, k)
			}
			js, err := json.Marshal(cfg)
			require.NoError(t, err)
			opts := kongemu.Options{Mode: kongemu.DBLess}
			if strings.Contains(string(raw), "expression:") {
				opts.RouterFlavor = kongemu.RouterExpressions
			}
			emu := kongemu.New(opts)
			rec := httptest.NewRecorder()
			emu.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/config", strings.NewReader(string(js))))
			if rec.Code != http.StatusCreated {
				t.Skipf("Kong refuses this configuration: %s", rec.Body.String())
			}
			want, err := kongrouter.ConfigFromEntities(kongrouter.TraditionalCompatible, emu.Entities)
			require.NoError(t, err)
			require.Equal(t, summary(want), summary(got))
		})
	}
}

// summary names each entity by what identifies it in a configuration, with what it refers to
// by that name (ids given to entities without one differ between loaders).
func summary(c *kongrouter.Config) map[string][]string {
	svc := map[string]string{}
	for _, s := range c.Services {
		svc[*s.ID] = *s.Name
	}
	route := map[string]string{}
	for _, r := range c.Routes {
		route[*r.ID] = *r.Name
	}
	consumer := map[string]string{}
	for _, cs := range c.Consumers {
		consumer[*cs.ID] = deref(cs.Username) + "/" + deref(cs.CustomID)
	}
	upstream := map[string]string{}
	for _, u := range c.Upstreams {
		upstream[*u.ID] = *u.Name
	}
	out := map[string][]string{}
	add := func(kind, s string) { out[kind] = append(out[kind], s) }
	for _, r := range c.Routes {
		ref := ""
		if r.Service != nil {
			ref = svc[*r.Service.ID]
		}
		add("routes", fmt.Sprintf("%s -> %s %v strip %v preserve %v", *r.Name, ref, deref(r.Protocols[0])+","+deref(r.Protocols[len(r.Protocols)-1]),
			*r.StripPath, *r.PreserveHost))
	}
	for _, p := range c.Plugins {
		scope := ""
		if p.Route != nil {
			scope += " route " + route[*p.Route.ID]
		}
		if p.Service != nil {
			scope += " service " + svc[*p.Service.ID]
		}
		if p.Consumer != nil {
			scope += " consumer " + consumer[*p.Consumer.ID]
		}
		add("plugins", *p.Name+scope)
	}
	for _, s := range c.Services {
		add("services", fmt.Sprintf("%s %s:%d", *s.Name, *s.Protocol, *s.Port))
	}
	for _, tg := range c.Targets {
		add("targets", fmt.Sprintf("%s %s %d", upstream[*tg.Upstream.ID], *tg.Target, *tg.Weight))
	}
	for _, k := range c.KeyAuths {
		add("keyauth", consumer[*k.Consumer.ID])
	}
	for _, a := range c.ACLGroups {
		add("acls", consumer[*a.Consumer.ID]+" "+*a.Group)
	}
	add("counts", strings.Repeat("s", len(c.Services))+strings.Repeat("u", len(c.Upstreams))+strings.Repeat("c", len(c.Certificates))+strings.Repeat("n", len(c.SNIs))+strings.Repeat("b", len(c.BasicAuths)))
	for _, l := range out {
		sortStrings(l)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortStrings(l []string) {
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j] < l[j-1]; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
}
