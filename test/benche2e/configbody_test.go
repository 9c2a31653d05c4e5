package benche2e

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/konductor/konductor/internal/dataplane/dbless"
)

// The recording Kong's unescaping gives encoding/json's string, or says it cannot: random
// strings of JSON's escapes, characters of every UTF-8 length, surrogates, invalid bytes.
func TestUnescapeJSONStringIsEncodingJSONs(t *testing.T) {
	pieces := []string{`a`, `xyz`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u00e9`, `\u2028`, `\uFFFD`,
		`\ud83d\ude00`, `\ud800`, `\u12`, `\x`, `é`, `€`, "😀", "\xff", `"`, `\`, "\x01", `{"k":1}`}
	rng := rand.New(rand.NewPCG(1, 2))
	decided := 0
	for range 20000 {
		var s []byte
		for range rng.IntN(8) {
			s = append(s, pieces[rng.IntN(len(pieces))]...)
		}
		got, ok := unescapeJSONString([]byte("keep:"), s)
		if !bytes.HasPrefix(got, []byte("keep:")) {
			t.Fatalf("%q: dst's start lost: %q", s, got)
		}
		if !ok {
			continue
		}
		decided++
		var want string
		if err := json.Unmarshal(append(append([]byte{'"'}, s...), '"'), &want); err != nil {
			if bytes.ContainsAny(s, "\x01") {
				continue // raw control bytes are taken as they are (the recording Kong validates nothing)
			}
			t.Fatalf("%q unescaped, but encoding/json refuses it: %v", s, err)
		}
		if string(got[len("keep:"):]) != want {
			t.Fatalf("%q: got %q, encoding/json %q", s, got[len("keep:"):], want)
		}
	}
	if decided < 1000 {
		t.Fatalf("only %d strings unescaped", decided)
	}
}

// The configuration of konductor's body is read without encoding/json, as encoding/json reads
// it; a body of another shape is taken whole.
func TestConfigOfKonductorsBody(t *testing.T) {
	config := []byte("{\"_format_version\":\"3.0\",\"services\":[{\"name\":\"a\\\"b\",\"tags\":[\"\u2028<&>\"],\"x\":\"\\u0001\"}]}")
	got, release := configOf(dbless.Body(config))
	if !bytes.Equal(got, config) {
		t.Errorf("got %q, want %q", got, config)
	}
	release()
	other := []byte(`{"_format_version":"3.0"}`)
	if got, _ := configOf(other); !bytes.Equal(got, other) {
		t.Errorf("a bare configuration read as %q", got)
	}
	spaced := []byte(`{ "config" : "{}" }`)
	if got, _ := configOf(spaced); string(got) != "{}" {
		t.Errorf("a body of another spacing read as %q", got)
	}
}
