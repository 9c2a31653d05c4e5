package kongemu

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

var enterprise = Options{Edition: Enterprise}

// TestDeclarativeConsumerEntities checks credentials, consumer groups, their memberships and
// scoped plugins, and vaults in DB-less configurations: the fields tree and, for the first
// error, the flattened entry a controller maps back to its objects.
func TestDeclarativeConsumerEntities(t *testing.T) {
	const alice = `"consumers":[{"username":"alice","tags":["k8s:alice"]}]`
	cases := []struct {
		name   string
		opts   Options
		config string
		fields string // exact JSON of "fields"; "" for a valid config
		flat   string // exact JSON of flattened_errors[0], when set
	}{
		{"all credentials", Options{}, `{"_format_version":"3.0","consumers":[{"username":"alice",
			"keyauth_credentials":[{"key":"k1"}],"basicauth_credentials":[{"username":"a","password":"p"}],
			"hmacauth_credentials":[{"username":"h"}],"jwt_secrets":[{"key":"iss"}],"acls":[{"group":"g"}],
			"oauth2_credentials":[{"name":"app","redirect_uris":["https://app.example.com/cb"]}]}]}`, "", ""},
		{"key-auth key unique", Options{}, `{"_format_version":"3.0","consumers":[
			{"username":"a","keyauth_credentials":[{"key":"k"}]},{"username":"b","keyauth_credentials":[{"key":"k","tags":["t"]}]}]}`,
			`{"consumers":[null,{"keyauth_credentials":["uniqueness violation: 'keyauth_credentials' entity with key set to 'k' already declared"]}]}`,
			`{"entity_type":"keyauth_credential","entity":{"key":"k","tags":["t"],"consumer":{"id":"@id"}},"entity_tags":["t"],
			  "errors":[{"type":"entity","message":"uniqueness violation: 'keyauth_credentials' entity with key set to 'k' already declared"}]}`},
		{"basic-auth username unique and password required", Options{}, `{"_format_version":"3.0","consumers":[{"username":"a",
			"basicauth_credentials":[{"username":"u","password":"p"},{"username":"u","password":"q"},{"username":"v"}]}]}`,
			`{"consumers":[{"basicauth_credentials":[null,"uniqueness violation: 'basicauth_credentials' entity with username set to 'u' already declared",{"password":"required field missing"}]}]}`, ""},
		{"hmac-auth username required", Options{}, `{"_format_version":"3.0","consumers":[{"username":"a","hmacauth_credentials":[{}]}]}`,
			`{"consumers":[{"hmacauth_credentials":[{"username":"required field missing"}]}]}`, ""},
		{"jwt RS256 needs a public key", Options{}, `{"_format_version":"3.0","consumers":[{"username":"a","jwt_secrets":[{"algorithm":"RS256"}]}]}`,
			`{"consumers":[{"jwt_secrets":[{"rsa_public_key":"required field missing"}]}]}`, ""},
		{"oauth2 credential", Options{}, `{"_format_version":"3.0","consumers":[{"username":"a","oauth2_credentials":[{"redirect_uris":["nope"],"client_type":"x"}]}]}`,
			`{"consumers":[{"oauth2_credentials":[{"name":"required field missing","redirect_uris":["cannot parse 'nope'"],"client_type":"expected one of: confidential, public"}]}]}`, ""},
		{"mtls-auth credentials are Enterprise", Options{}, `{"_format_version":"3.0","consumers":[{"username":"a","mtls_auth_credentials":[{"subject_name":"a"}]}]}`,
			`{"consumers":[{"mtls_auth_credentials":"unknown field"}]}`, ""},
		{"mtls-auth credentials", enterprise, `{"_format_version":"3.0","consumers":[{"username":"a","mtls_auth_credentials":[{"subject_name":"a"},{}]}]}`,
			`{"consumers":[{"mtls_auth_credentials":[null,{"subject_name":"required field missing"}]}]}`, ""},
		{"authentication plugin on a consumer", Options{}, `{"_format_version":"3.0","consumers":[{"username":"a","plugins":[{"name":"key-auth"}]}]}`,
			`{"consumers":[{"plugins":[{"consumer":"value must be null"}]}]}`, ""},
		{"consumer groups are Enterprise", Options{}, `{"_format_version":"3.0","consumer_groups":[{"name":"gold"}]}`,
			`{"consumer_groups":"unknown field"}`, ""},
		{"consumer group memberships are Enterprise", Options{}, `{"_format_version":"3.0","consumer_group_consumers":[]}`,
			`{"consumer_group_consumers":"unknown field"}`, ""},
		{"plugin consumer_group is Enterprise", Options{}, `{"_format_version":"3.0","plugins":[{"name":"cors","consumer_group":"gold"}]}`,
			`{"plugins":[{"consumer_group":"unknown field"}]}`, ""},
		{"consumer groups", enterprise, `{"_format_version":"3.0",` + alice + `,
			"consumer_groups":[{"name":"gold","tags":["k8s:gold"],"plugins":[{"name":"rate-limiting","config":{"minute":5}}]}],
			"consumer_group_consumers":[{"consumer":"alice","consumer_group":"gold"}],
			"plugins":[{"name":"request-termination","consumer_group":"gold","config":{"status_code":403}}]}`, "", ""},
		{"consumer group name unique and required", enterprise, `{"_format_version":"3.0","consumer_groups":[{"name":"gold"},{"name":"gold"},{"tags":["t"]}]}`,
			`{"consumer_groups":[null,"uniqueness violation: 'consumer_groups' entity with name set to 'gold' already declared",{"name":"required field missing"}]}`,
			`{"entity_type":"consumer_group","entity":{"name":"gold"},"entity_name":"gold",
			  "errors":[{"type":"entity","message":"uniqueness violation: 'consumer_groups' entity with name set to 'gold' already declared"}]}`},
		{"membership references", enterprise, `{"_format_version":"3.0",` + alice + `,"consumer_groups":[{"name":"gold"}],
			"consumer_group_consumers":[{"consumer":"alice","consumer_group":"silver"},{"consumer":"bob","consumer_group":"gold"}]}`,
			`{"consumer_group_consumers":[{"consumer_group":"invalid reference 'consumer_group: silver' (no such entry in 'consumer_groups')"},
			  {"consumer":"invalid reference 'consumer: bob' (no such entry in 'consumers')"}]}`, ""},
		{"duplicate membership", enterprise, `{"_format_version":"3.0",` + alice + `,"consumer_groups":[{"name":"gold"}],
			"consumer_group_consumers":[{"consumer":"alice","consumer_group":"gold"},{"consumer":"alice","consumer_group":"gold"}]}`,
			`{"consumer_group_consumers":[null,"@dup"]}`, ""},
		{"plugin on a consumer and a consumer group", enterprise, `{"_format_version":"3.0",` + alice + `,"consumer_groups":[{"name":"gold"}],
			"plugins":[{"name":"correlation-id","consumer":"alice","consumer_group":"gold"}]}`,
			`{"plugins":[{"@entity":["only one or none of these fields must be set: 'consumer', 'consumer_group'"]}]}`, ""},
		{"plugin twice on a consumer group", enterprise, `{"_format_version":"3.0","consumer_groups":[{"name":"gold",
			"plugins":[{"name":"rate-limiting","config":{"minute":5}},{"name":"rate-limiting","config":{"hour":5}}]}]}`,
			`{"consumer_groups":[{"plugins":[null,"@dup"]}]}`, ""},
		{"mtls-auth plugin is Enterprise", Options{}, `{"_format_version":"3.0","plugins":[{"name":"mtls-auth","config":{"ca_certificates":[]}}]}`,
			`{"plugins":[{"name":"plugin 'mtls-auth' not enabled; add it to the 'plugins' configuration property"}]}`, ""},
		{"vaults", Options{}, `{"_format_version":"3.0","vaults":[{"name":"env","prefix":"my-env","description":"d","config":{"prefix":"SECRET_"},"tags":["t"]}]}`, "", ""},
		{"vault rules", Options{}, `{"_format_version":"3.0","vaults":[{"name":"env","prefix":"env"},{"name":"env","prefix":"Bad_1"},
			{"name":"aws","prefix":"aws-1"},{"name":"env","prefix":"e2","config":{"prefix":"a b"}},{"prefix":"x1"}]}`,
			`{"vaults":[{"prefix":"must not be one of: env"},{"prefix":"invalid value: Bad_1"},{"name":"vault 'aws' is not installed"},
			  {"config":{"prefix":"invalid value: a b"}},{"name":"required field missing"}]}`,
			`{"entity_type":"vault","entity":{"name":"env","prefix":"env"},"entity_name":"env",
			  "errors":[{"type":"field","field":"prefix","message":"must not be one of: env"}]}`},
		{"vault prefix unique", Options{}, `{"_format_version":"3.0","vaults":[{"name":"env","prefix":"v1"},{"name":"env","prefix":"v1"}]}`,
			`{"vaults":[null,"uniqueness violation: 'vaults' entity with prefix set to 'v1' already declared"]}`, ""},
		{"Enterprise vaults", enterprise, `{"_format_version":"3.0","vaults":[{"name":"aws","prefix":"aws-1","config":{"region":"us-east-1"}},
			{"name":"env","prefix":"aws"}]}`,
			`{"vaults":[null,{"prefix":"must not be one of: env, aws, gcp, hcv, azure, conjur"}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, body, raw := post(t, New(c.opts), "/config?flatten_errors=1", "application/json", c.config)
			if !requireRefused(t, st, 201, c.fields, body["fields"], raw) {
				return
			}
			if c.flat != "" {
				got := body["flattened_errors"].([]any)[0].(map[string]any)
				if ent, ok := got["entity"].(map[string]any); ok && ent["consumer"] != nil {
					ent["consumer"] = map[string]any{"id": "@id"}
				}
				require.Equal(t, jsonOf(t, c.flat), got, raw)
			}
		})
	}
}

// requireRefused checks an answer: okStatus when fields is "", else 400 with that error
// tree. It reports whether the answer was a refusal.
func requireRefused(t *testing.T, st, okStatus int, fields string, got any, raw any) bool {
	t.Helper()
	if fields == "" {
		require.Equal(t, okStatus, st, raw)
		return false
	}
	require.Equal(t, 400, st, raw)
	requireFields(t, fields, got)
	return true
}

// requireFields compares an error tree, with "@dup" standing for a uniqueness violation on
// a generated primary key.
func requireFields(t *testing.T, want string, got any) {
	t.Helper()
	raw := string(mustJSON(t, got))
	raw = dupRe.ReplaceAllString(raw, `"@dup"`)
	require.JSONEq(t, want, raw)
}

// TestConsumerGroupsDBLessLoad: what a loaded configuration answers on the consumer group
// endpoints.
func TestConsumerGroupsDBLessLoad(t *testing.T) {
	e := New(enterprise)
	st, _, raw := post(t, e, "/config", "application/json", `{"_format_version":"3.0",
		"consumers":[{"username":"alice"},{"username":"bob"}],
		"consumer_groups":[{"name":"gold"}],
		"consumer_group_consumers":[{"consumer":"alice","consumer_group":"gold"}]}`)
	require.Equal(t, 201, st, raw)
	st, b, _ := call(t, e, "GET", "/consumer_groups/gold/consumers", nil)
	require.Equal(t, 200, st)
	data := obj(b)["data"].([]any)
	require.Len(t, data, 1)
	require.Equal(t, "alice", obj(data[0])["username"])
	st, b, _ = call(t, e, "GET", "/consumer_groups/gold", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "gold", obj(obj(b)["consumer_group"])["name"])
	require.Len(t, obj(b)["consumers"], 1)
	st, _, _ = call(t, e, "GET", "/consumer_groups/gold/consumers/alice", nil)
	require.Equal(t, 200, st)
	st, _, _ = call(t, e, "GET", "/consumer_groups/gold/consumers/bob", nil)
	require.Equal(t, 404, st)
	st, _, _ = call(t, e, "POST", "/consumer_groups/gold/consumers", map[string]any{"consumer": "bob"})
	require.Equal(t, 405, st)
}

var dupRe = regexp.MustCompile(`"uniqueness violation: '[a-z_]+' entity with primary key set to '[0-9a-f-]{36}' already declared"`)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestGoKongConsumerGroupsAndVaults drives consumer groups, memberships, scoped plugins,
// mtls-auth credentials and vaults through go-kong in database mode.
func TestGoKongConsumerGroupsAndVaults(t *testing.T) {
	ctx := context.Background()
	e, c := gokongClient(t, Options{Mode: Postgres, Edition: Enterprise})
	alice, err := c.Consumers.Create(ctx, &kong.Consumer{Username: kong.String("alice")})
	require.NoError(t, err)

	gold, err := c.ConsumerGroups.Create(ctx, &kong.ConsumerGroup{Name: kong.String("gold"), Tags: kong.StringSlice("t")})
	require.NoError(t, err)
	_, err = c.ConsumerGroups.Create(ctx, &kong.ConsumerGroup{Name: kong.String("gold")})
	require.Equal(t, 409, apiCode(err))
	_, err = c.ConsumerGroups.Create(ctx, &kong.ConsumerGroup{})
	require.Equal(t, 400, apiCode(err), "name is required")

	_, err = c.ConsumerGroupConsumers.Create(ctx, kong.String("gold"), kong.String("alice"))
	require.NoError(t, err)
	_, err = c.ConsumerGroupConsumers.Create(ctx, gold.ID, alice.ID)
	require.Equal(t, 409, apiCode(err), "already a member")
	_, err = c.ConsumerGroupConsumers.Create(ctx, gold.ID, kong.String("bob"))
	require.Equal(t, 404, apiCode(err))
	members, err := c.ConsumerGroupConsumers.ListAll(ctx, gold.ID)
	require.NoError(t, err)
	require.Len(t, members, 1)
	cgo, err := c.ConsumerGroups.Get(ctx, kong.String("gold"))
	require.NoError(t, err)
	require.Equal(t, "gold", *cgo.ConsumerGroup.Name)
	require.Len(t, cgo.Consumers, 1)

	scoped := &kong.Plugin{Name: kong.String("rate-limiting"), ConsumerGroup: &kong.ConsumerGroup{ID: gold.ID},
		Config: kong.Configuration{"minute": 5}}
	_, err = c.Plugins.Create(ctx, scoped)
	require.NoError(t, err)
	_, err = c.Plugins.Create(ctx, scoped)
	require.Equal(t, 409, apiCode(err), "(name, route, service, consumer, consumer_group) is unique")
	st, b, _ := call(t, e, "GET", "/consumer_groups/gold/plugins", nil)
	require.Equal(t, 200, st)
	require.Len(t, obj(b)["data"], 1)

	require.NoError(t, c.ConsumerGroupConsumers.Delete(ctx, gold.ID, kong.String("alice")))
	members, err = c.ConsumerGroupConsumers.ListAll(ctx, gold.ID)
	require.NoError(t, err)
	require.Empty(t, members)
	_, err = c.ConsumerGroupConsumers.Create(ctx, gold.ID, alice.ID)
	require.NoError(t, err)
	require.NoError(t, c.Consumers.Delete(ctx, alice.ID))
	require.Empty(t, e.Entities("consumer_group_consumers"), "memberships cascade with their consumer")
	require.NoError(t, c.ConsumerGroups.Delete(ctx, kong.String("gold")))
	require.Empty(t, e.Entities("plugins"), "scoped plugins cascade with their group")

	// mtls-auth credentials.
	_, err = c.Consumers.Create(ctx, &kong.Consumer{Username: kong.String("carol")})
	require.NoError(t, err)
	st, _, _ = call(t, e, "POST", "/consumers/carol/mtls-auth", map[string]any{"subject_name": "carol@example.com"})
	require.Equal(t, 201, st)
	st, _, _ = call(t, e, "POST", "/consumers/carol/mtls-auth", map[string]any{})
	require.Equal(t, 400, st)
	require.Len(t, e.Entities("mtls-auths"), 1)

	// Vaults: endpoint key prefix.
	v, err := c.Vaults.Create(ctx, &kong.Vault{Name: kong.String("env"), Prefix: kong.String("my-env"),
		Config: kong.Configuration{"prefix": "SECRET_"}})
	require.NoError(t, err)
	got, err := c.Vaults.Get(ctx, kong.String("my-env"))
	require.NoError(t, err)
	require.Equal(t, *v.ID, *got.ID)
	_, err = c.Vaults.Create(ctx, &kong.Vault{Name: kong.String("env"), Prefix: kong.String("my-env")})
	require.Equal(t, 409, apiCode(err))
	_, err = c.Vaults.Create(ctx, &kong.Vault{Name: kong.String("nope"), Prefix: kong.String("other")})
	require.Equal(t, 400, apiCode(err))
}

// TestCommunityHasNoConsumerGroups: Kong OSS answers 404 where Enterprise serves consumer groups.
func TestCommunityHasNoConsumerGroups(t *testing.T) {
	ctx := context.Background()
	e, c := gokongClient(t, Options{Mode: Postgres})
	_, _, err := c.ConsumerGroups.List(ctx, nil)
	require.True(t, kong.IsNotFoundErr(err))
	_, err = c.Consumers.Create(ctx, &kong.Consumer{Username: kong.String("alice")})
	require.NoError(t, err)
	for _, p := range []string{"/consumer_groups/gold/consumers", "/consumers/alice/mtls-auth", "/mtls-auths", "/consumer_group_consumers"} {
		st, _, _ := call(t, e, "GET", p, nil)
		require.Equal(t, 404, st, p)
	}
	st, _, _ := call(t, e, "GET", "/schemas/consumer_groups", nil)
	require.Equal(t, 404, st)
	st, b, _ := call(t, e, "GET", "/", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "community", obj(b)["edition"])
	require.NotContains(t, obj(obj(b)["plugins"])["available_on_server"], "mtls-auth")
}

// TestBasicAuthPasswordHash: Kong stores sha1(password .. consumer id) and hashes every
// password it is given, also one that is a stored hash read back.
func TestBasicAuthPasswordHash(t *testing.T) {
	e := New(Options{Mode: Postgres})
	st, c, _ := call(t, e, "POST", "/consumers", map[string]any{"username": "alice"})
	require.Equal(t, 201, st)
	cid := obj(c)["id"].(string)
	st, b, _ := call(t, e, "POST", "/consumers/alice/basic-auth", map[string]any{"username": "u", "password": "p"})
	require.Equal(t, 201, st)
	sum := sha1.Sum([]byte("p" + cid))
	want := hex.EncodeToString(sum[:])
	require.Equal(t, want, obj(b)["password"])
	id := obj(b)["id"].(string)
	st, b, _ = call(t, e, "PATCH", "/basic-auths/"+id, map[string]any{"tags": []any{"t"}})
	require.Equal(t, 200, st)
	require.Equal(t, want, obj(b)["password"], "a PATCH without a password keeps the hash")
	st, b, _ = call(t, e, "PUT", "/basic-auths/"+id, map[string]any{"username": "u", "password": want,
		"consumer": map[string]any{"id": cid}})
	require.Equal(t, 200, st)
	again := sha1.Sum([]byte(want + cid))
	require.Equal(t, hex.EncodeToString(again[:]), obj(b)["password"], "the hash written back is hashed again")
}
