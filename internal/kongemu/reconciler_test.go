package kongemu

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

const managedTag = "managed-by-ingress-controller"

// syncTo runs what decK and KIC run: dump -> file.Get -> diff.NewSyncer -> Solve.
func syncTo(t *testing.T, client *kong.Client, content *file.Content, dry bool) diff.Stats {
	t.Helper()
	ctx := context.Background()
	dumpConfig := dump.Config{SelectorTags: []string{managedTag}}
	currentRaw, err := dump.Get(ctx, client, dumpConfig)
	require.NoError(t, err)
	currentState, err := state.Get(currentRaw)
	require.NoError(t, err)
	root, err := client.Root(ctx)
	require.NoError(t, err)
	version, err := utils.ParseKongVersion(root["version"].(string))
	require.NoError(t, err)
	targetRaw, err := file.Get(ctx, content, file.RenderConfig{CurrentState: currentState, KongVersion: version}, dumpConfig, client)
	require.NoError(t, err)
	targetState, err := state.Get(targetRaw)
	require.NoError(t, err)
	syncer, err := diff.NewSyncer(diff.SyncerOpts{CurrentState: currentState, TargetState: targetState, KongClient: client, SilenceWarnings: true})
	require.NoError(t, err)
	stats, errs, _ := syncer.Solve(ctx, 2, dry, false)
	require.Empty(t, errs)
	return stats
}

func ops(s diff.Stats) [3]int32 {
	return [3]int32{s.CreateOps.Count(), s.UpdateOps.Count(), s.DeleteOps.Count()}
}

func content(t *testing.T, js string) *file.Content {
	t.Helper()
	var c file.Content
	require.NoError(t, json.Unmarshal([]byte(js), &c))
	return &c
}

func TestReconcilerRoundTrip(t *testing.T) {
	e := New(Options{Mode: Postgres})
	srv, err := e.Start()
	require.NoError(t, err)
	defer srv.Close()
	client, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
	require.NoError(t, err)

	// A hand-made entity without our tag: never touched.
	st, _, _ := call(t, e, "PUT", "/services/handmade", map[string]any{"host": "hand.example.com"})
	require.Equal(t, 200, st)

	cert, key := testCert(t, "secure.example.com", false, false)
	caCert, _ := testCert(t, "ca", true, true)
	certJS, _ := json.Marshal(cert)
	keyJS, _ := json.Marshal(key)
	caJS, _ := json.Marshal(caCert)

	first := `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]},
	 "services":[
	   {"name":"default.echo.80","host":"echo.default.80.svc","port":80,"protocol":"http","path":"/",
	    "routes":[
	      {"name":"default.echo.echo.example.com.00","hosts":["echo.example.com"],"paths":["/echo","~/v\\d+/echo$"],
	       "strip_path":false,"protocols":["http","https"],
	       "plugins":[{"name":"cors","config":{"origins":["*"]}}]},
	      {"name":"default.echo.doomed","paths":["/doomed"]}
	    ],
	    "plugins":[{"name":"rate-limiting","config":{"minute":100,"policy":"local"}}]},
	   {"name":"default.other.80","host":"other.default.80.svc"}
	 ],
	 "upstreams":[{"name":"echo.default.80.svc","algorithm":"round-robin",
	    "targets":[{"target":"10.0.0.1:8080","weight":100},{"target":"10.0.0.2:8080"}]}],
	 "consumers":[{"username":"alice","custom_id":"a-1",
	    "keyauth_credentials":[{"key":"alice-key"}],
	    "acls":[{"group":"admins"}],
	    "plugins":[{"name":"request-termination","config":{"status_code":403}}]}],
	 "certificates":[{"cert":` + string(certJS) + `,"key":` + string(keyJS) + `,"snis":[{"name":"secure.example.com"}]}],
	 "ca_certificates":[{"cert":` + string(caJS) + `}],
	 "plugins":[{"name":"correlation-id","config":{"header_name":"X-Req"}},{"name":"prometheus"}]
	}`
	stats := syncTo(t, client, content(t, first), false)
	require.Positive(t, stats.CreateOps.Count())
	require.Len(t, e.Entities("services"), 3)
	require.Len(t, e.Entities("routes"), 2)
	require.Len(t, e.Entities("targets"), 2)
	require.Len(t, e.Entities("plugins"), 5)
	require.Len(t, e.Entities("snis"), 1)
	require.Len(t, e.Entities("keyauth_credentials"), 1)
	require.Len(t, e.Entities("acls"), 1)
	require.Len(t, e.Entities("ca_certificates"), 1)

	// dump equals target: a dry run finds nothing to do, and so does a real one.
	mark := e.AuditMark()
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, first), true)))
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, first), false)))
	require.Empty(t, e.AuditSince(mark), "an in-sync state causes no writes")

	// Change: drop a route and a target, update a service and a plugin, add a route.
	second := `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]},
	 "services":[
	   {"name":"default.echo.80","host":"echo.default.80.svc","port":8080,"protocol":"http","path":"/",
	    "routes":[
	      {"name":"default.echo.echo.example.com.00","hosts":["echo.example.com"],"paths":["/echo","~/v\\d+/echo$"],
	       "strip_path":false,"protocols":["http","https"],
	       "plugins":[{"name":"cors","config":{"origins":["https://a.example.com"]}}]},
	      {"name":"default.echo.new","paths":["/new"],"methods":["GET"]}
	    ],
	    "plugins":[{"name":"rate-limiting","config":{"minute":100,"policy":"local"}}]},
	   {"name":"default.other.80","host":"other.default.80.svc"}
	 ],
	 "upstreams":[{"name":"echo.default.80.svc","algorithm":"round-robin",
	    "targets":[{"target":"10.0.0.1:8080","weight":100}]}],
	 "consumers":[{"username":"alice","custom_id":"a-1",
	    "keyauth_credentials":[{"key":"alice-key"}],
	    "acls":[{"group":"admins"}],
	    "plugins":[{"name":"request-termination","config":{"status_code":403}}]}],
	 "certificates":[{"cert":` + string(certJS) + `,"key":` + string(keyJS) + `,"snis":[{"name":"secure.example.com"}]}],
	 "ca_certificates":[{"cert":` + string(caJS) + `}],
	 "plugins":[{"name":"correlation-id","config":{"header_name":"X-Req"}},{"name":"prometheus"}]
	}`
	mark = e.AuditMark()
	stats = syncTo(t, client, content(t, second), false)
	require.Equal(t, [3]int32{1, 2, 2}, ops(stats))
	var deleted []string
	for _, a := range e.AuditSince(mark) {
		if a.Method == "DELETE" {
			deleted = append(deleted, a.Entity+":"+a.Name)
		}
	}
	require.ElementsMatch(t, []string{"routes:default.echo.doomed", "targets:10.0.0.2:8080"}, deleted)
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, second), true)))
	require.Equal(t, float64(8080), obj(jsonOf(t, e.Entity("services", "default.echo.80")))["port"])

	// An empty target deletes everything we own and nothing else.
	empty := `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]}}`
	syncTo(t, client, content(t, empty), false)
	require.Len(t, e.Entities("services"), 1)
	require.Equal(t, "handmade", e.Entities("services")[0]["name"])
	require.Empty(t, e.Entities("routes"))
	require.Empty(t, e.Entities("plugins"))
	require.Empty(t, e.Entities("upstreams"))
	require.Empty(t, e.Entities("consumers"))
	require.Empty(t, e.Entities("certificates"))
	require.Empty(t, e.Entities("snis"))
}

// TestReconcilerConsumerEntities syncs consumers with every credential, consumer groups with
// memberships and scoped plugins, and vaults through go-database-reconciler against an
// Enterprise emulator: a second pass finds nothing to do, and a change is applied.
func TestReconcilerConsumerEntities(t *testing.T) {
	e := New(Options{Mode: Postgres, Edition: Enterprise})
	srv, err := e.Start()
	require.NoError(t, err)
	defer srv.Close()
	client, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
	require.NoError(t, err)

	cfg := func(group, password string) string {
		return `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]},
		 "vaults":[{"name":"env","prefix":"k8s-env","config":{"prefix":"KONG_","base64_decode":false,
		    "ttl":null,"neg_ttl":null,"resurrect_ttl":null}}],
		 "consumer_groups":[{"name":"` + group + `","plugins":[{"name":"rate-limiting","config":{"minute":5}}]}],
		 "consumers":[{"username":"alice","groups":[{"name":"` + group + `"}],
		    "keyauth_credentials":[{"key":"alice-key"}],
		    "basicauth_credentials":[{"username":"alice-basic","password":"` + password + `"}],
		    "hmacauth_credentials":[{"username":"alice-hmac","secret":"s"}],
		    "jwt_secrets":[{"key":"alice-iss","secret":"s","algorithm":"HS256"}],
		    "acls":[{"group":"admins"}],
		    "oauth2_credentials":[{"name":"app","client_id":"cid","client_secret":"cs","redirect_uris":["https://app.example.com/cb"],
		       "client_type":"confidential","hash_secret":false}],
		    "plugins":[{"name":"correlation-id"}]}]
		}`
	}
	first := cfg("gold", "pw")
	stats := syncTo(t, client, content(t, first), false)
	require.Positive(t, stats.CreateOps.Count())
	for kind, n := range map[string]int{"consumers": 1, "consumer_groups": 1, "consumer_group_consumers": 1, "vaults": 1,
		"keyauth_credentials": 1, "basicauth_credentials": 1, "hmacauth_credentials": 1, "jwt_secrets": 1, "acls": 1,
		"oauth2_credentials": 1, "plugins": 2} {
		require.Len(t, e.Entities(kind), n, kind)
	}
	require.NotEqual(t, "pw", e.Entities("basicauth_credentials")[0]["password"], "Kong stores a hash of the password")

	mark := e.AuditMark()
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, first), true)))
	// decK compares vault configs and oauth2 credentials as Kong returns them, defaults
	// included, and fills no defaults into the target: without them every pass updates.
	noDefaults := strings.NewReplacer(`,"base64_decode":false,
		    "ttl":null,"neg_ttl":null,"resurrect_ttl":null`, "", `,
		       "client_type":"confidential","hash_secret":false`, "").Replace(first)
	require.Equal(t, [3]int32{0, 2, 0}, ops(syncTo(t, client, content(t, noDefaults), true)))
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, cfg("gold", "other")), true)),
		"decK does not compare basic-auth passwords (Kong hashes them)")
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, first), false)))
	require.Empty(t, e.AuditSince(mark), "an in-sync state causes no writes")

	// Move alice to another group: the old group, its plugin and the membership go.
	syncTo(t, client, content(t, cfg("silver", "pw")), false)
	groups := e.Entities("consumer_groups")
	require.Len(t, groups, 1)
	require.Equal(t, "silver", groups[0]["name"])
	require.Len(t, e.Entities("consumer_group_consumers"), 1)
	require.Equal(t, [3]int32{0, 0, 0}, ops(syncTo(t, client, content(t, cfg("silver", "pw")), true)))

	empty := `{"_format_version":"3.0","_info":{"select_tags":["` + managedTag + `"]}}`
	syncTo(t, client, content(t, empty), false)
	for _, kind := range []string{"consumers", "consumer_groups", "consumer_group_consumers", "vaults", "plugins", "acls"} {
		require.Empty(t, e.Entities(kind), kind)
	}
}
