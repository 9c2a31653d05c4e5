package redact

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The secrets of a JSON document are masked where text masking fails: a secret JSON escapes
// (quotes, a PEM key's newlines), and a secret equal to one of the document's tokens, which
// text masking would replace outside strings and so break the document.
func TestJSONMasksEscapedSecretsAndKeepsTheDocument(t *testing.T) {
	key := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"
	doc, err := json.Marshal(map[string]any{
		"_format_version": "3.0",
		"services":        []any{map[string]any{"name": "svc", "retries": 5, "enabled": true}},
		"consumers": []any{map[string]any{
			"username":              "alice",
			"basicauth_credentials": []any{map[string]any{"username": "alice", "password": "true"}},
			"keyauth_credentials":   []any{map[string]any{"key": `quo"ted-key`}},
		}},
		"certificates": []any{map[string]any{"cert": "PUBLIC", "pem": key}},
		"plugins": []any{map[string]any{"name": "x", "config": map[string]any{
			"redis_password": "pw", // shorter than minSecretLen: masked by its field name
			"api_keys":       []any{"k1", "k2"},
			"header":         "uses quo\"ted-key inside",
			"pin":            4321, // a configFrom Secret's number
			"client_secret":  77,
		}}},
	})
	require.NoError(t, err)
	r := New("true", `quo"ted-key`, "4321")
	out := r.JSON(doc)

	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "still JSON: %s", out)
	s := string(out)
	require.NotContains(t, s, "MIIEvQIBADANBg")
	require.NotContains(t, s, `quo\"ted-key`)
	require.NotContains(t, s, `"pw"`)
	require.NotContains(t, s, `"k1"`)
	consumer := got["consumers"].([]any)[0].(map[string]any)
	require.Equal(t, Mask, consumer["basicauth_credentials"].([]any)[0].(map[string]any)["password"])
	require.Equal(t, "alice", consumer["username"], "what is no secret stays")
	svc := got["services"].([]any)[0].(map[string]any)
	require.Equal(t, true, svc["enabled"], "the token true outside strings is not the password \"true\"")
	require.Contains(t, s, `"retries":5`, "numbers keep their text")
	require.Equal(t, "PUBLIC", got["certificates"].([]any)[0].(map[string]any)["cert"])
	config := got["plugins"].([]any)[0].(map[string]any)["config"].(map[string]any)
	require.Equal(t, "uses "+Mask+" inside", config["header"])
	require.Equal(t, Mask, config["pin"])
	require.Equal(t, Mask, config["client_secret"])
}

// Keys and their order are kept: the dump reads as what was sent.
func TestJSONKeepsOrder(t *testing.T) {
	r := New()
	in := `{"z":1,"a":[true,null,"x"],"m":{"b":2.50,"a":"y"}}`
	require.Equal(t, in, string(r.JSON([]byte(in))))
}

// What is not JSON is masked as text.
func TestJSONOfTextMasksText(t *testing.T) {
	r := New("hunter22")
	require.Equal(t, "bad gateway: hunter2 "+Mask, string(r.JSON([]byte("bad gateway: hunter2 hunter22"))))
}
