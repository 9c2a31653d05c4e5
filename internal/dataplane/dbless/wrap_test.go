package dbless

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
)

// The body decodes to exactly the configuration, whatever bytes it holds, as json.Marshal's
// does.
func TestBodyDecodesToTheConfiguration(t *testing.T) {
	for _, config := range []string{
		``,
		`{"_format_version":"3.0","services":[{"name":"a","host":"x"}]}`,
		"quote \" backslash \\ slash / newline \n tab \t cr \r nul \x00 bell \x07 unit \x1f del \x7f",
		`<script>&amp;</script> é ü 日本 😀 \u2028 ` + "\u2028\u2029",
		strings.Repeat(`{"k":"v\"w"},`, 1000),
	} {
		var got struct {
			Config *string `json:"config"`
		}
		require.NoError(t, json.Unmarshal(Body([]byte(config)), &got), "%q", config)
		require.NotNil(t, got.Config)
		require.Equal(t, config, *got.Config)

		want, err := json.Marshal(struct {
			Config string `json:"config"`
		}{config})
		require.NoError(t, err)
		var fromMarshal struct{ Config string }
		require.NoError(t, json.Unmarshal(want, &fromMarshal))
		require.Equal(t, fromMarshal.Config, *got.Config)

		back, err := configOf(Body([]byte(config)))
		require.NoError(t, err)
		require.Equal(t, config, string(back))
	}
}

func FuzzBody(f *testing.F) {
	f.Add([]byte(`{"a":"b\"c\\d"}`))
	f.Fuzz(func(t *testing.T, config []byte) {
		var got struct{ Config string }
		require.NoError(t, json.Unmarshal(Body(config), &got))
		want, err := json.Marshal(struct{ Config string }{string(config)})
		require.NoError(t, err)
		var fromMarshal struct{ Config string }
		require.NoError(t, json.Unmarshal(want, &fromMarshal))
		require.Equal(t, fromMarshal.Config, got.Config)
	})
}

func BenchmarkBody(b *testing.B) {
	config := []byte(strings.Repeat(`{"name":"ns.svc.80","host":"svc.ns.80.svc","routes":[{"paths":["/api"]}]},`, 50000))
	b.Run("Body", func(b *testing.B) {
		b.SetBytes(int64(len(config)))
		for b.Loop() {
			_ = Body(config)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(config)))
		for b.Loop() {
			_, _ = json.Marshal(struct {
				Config string `json:"config"`
			}{string(config)})
		}
	})
}

// kongHashOfBody reads the hash of a body's configuration piece by piece (unescapedHash), and
// gives what decoding the body and hashing the configuration gives, whatever it holds; a
// body it cannot read so is decoded.
func TestKongHashOfBodyIsTheDecodedConfigurationsHash(t *testing.T) {
	decoded := func(body []byte) string {
		config, err := configOf(body)
		if err != nil {
			return ""
		}
		return kongHash(config)
	}
	rng := rand.New(rand.NewPCG(3, 9))
	alphabet := []string{"a", "\"", "\\", "/", "\n", "\r", "\t", "\x00", "\x07", "\x1f", "\x7f", "é", "日本", "😀", "\u2028", "\xff", "\xc3", "{", "}"}
	configs := []string{``, `{"_format_version":"3.0"}`, strings.Repeat(`{"k":"v\"w"},`, 3000)}
	for range 300 {
		var b strings.Builder
		for range rng.IntN(200) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		configs = append(configs, b.String())
	}
	for _, config := range configs {
		body := Body([]byte(config))
		want := decoded(body)
		require.Equal(t, want, kongHashOfBody(kongstate.BodyOf(body)), "%q", config)
		// The same bytes in pieces cut anywhere.
		var pieces [][]byte
		for rest := body; len(rest) > 0; {
			k := 1 + rng.IntN(len(rest))
			pieces = append(pieces, rest[:k])
			rest = rest[k:]
		}
		require.Equal(t, want, kongHashOfBody(kongstate.BodyOfPieces(pieces)), "%q in %d pieces", config, len(pieces))
	}
	// Escapes Body never writes, and bodies of another form.
	for _, body := range []string{
		`{"config":"\u00e9\ud83d\ude00 \/ \b \f \u0041"}`, `{"config":"a"}`, `{"config":""}`, `{"config": "a"}`,
		`{"config":"a\"}`, `{"config":"a\x"}`, `{"config":"a"b"}`, `{"config":"a\u12"}`, `{"other":"a"}`, `{}`, ``,
	} {
		require.Equal(t, decoded([]byte(body)), kongHashOfBody(kongstate.BodyOf([]byte(body))), "%q", body)
	}
	_, ok := unescapedHash(kongstate.BodyOf(Body([]byte(`{"services":[{"name":"a\"b"}]}`))))
	require.True(t, ok, "a body as Body writes it is read without decoding")
}
