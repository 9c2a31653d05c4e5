package dbless

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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
	// Half the configurations are valid UTF-8, which unescapedHash reads (the fast path);
	// the others may hold invalid UTF-8, which sends their bodies to configOf (the slow path).
	valid := []string{"a", "\"", "\\", "/", "\n", "\r", "\t", "\b", "\f", "\x00", "\x07", "\x1f", "\x7f", "é", "日本", "😀", "\u2028", "{", "}"}
	anyBytes := append(slices.Clone(valid), "\xff", "\xc3")
	configs := []string{``, `{"_format_version":"3.0"}`, strings.Repeat(`{"k":"v\"w"},`, 3000)}
	for i := range 300 {
		alphabet := valid
		if i%2 == 1 {
			alphabet = anyBytes
		}
		var b strings.Builder
		for range rng.IntN(200) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		configs = append(configs, b.String())
	}
	fast := 0 // bodies hashed by unescapedHash, whole and in pieces
	for _, config := range configs {
		body := Body([]byte(config))
		want := decoded(body)
		for _, cut := range []struct {
			name string
			// at tells whether a piece may end before body[k]: anywhere, or only between
			// characters, as the Renderer's pieces (whole entities and parts of the skeleton).
			at func(k int) bool
		}{
			{"whole", func(int) bool { return false }},
			{"cut anywhere", func(int) bool { return true }},
			{"cut between characters", func(k int) bool { return utf8.RuneStart(body[k]) }},
		} {
			var pieces [][]byte
			for rest, k := body, 0; len(rest) > 0; {
				end := 1 + rng.IntN(len(rest))
				for end < len(rest) && !cut.at(k+end) {
					end++
				}
				pieces, rest, k = append(pieces, rest[:end]), rest[end:], k+end
			}
			pieced := kongstate.BodyOfPieces(pieces)
			require.Equal(t, want, kongHashOfBody(pieced), "%q %s (%d pieces)", config, cut.name, len(pieces))
			_, ok := unescapedHash(pieced)
			if cut.name != "cut anywhere" {
				require.Equal(t, utf8.ValidString(config), ok, "a body as Body writes it is read without decoding when it is valid UTF-8: %q %s", config, cut.name)
			}
			if ok {
				fast++
			}
		}
	}
	// The fast path is what this test compares with decoding: it must be taken (by about half
	// the bodies), not left for the decoding it is compared with.
	require.GreaterOrEqual(t, fast, len(configs), "bodies hashed without decoding")

	// Escapes Body never writes (\/, \b, \f and \u ones: the fast path reads them), and
	// bodies of another form.
	for _, tc := range []struct {
		body string
		fast bool // unescapedHash reads it
	}{
		{`{"config":"\/ \b \f \u0041 \u001f \u007F \\ \" \n \r \t"}`, true},
		{`{"config":"\/\/\b\b\f\f"}`, true},
		{`{"config":"a"}`, true},
		{`{"config":""}`, true},
		{`{"config":"\u00e9\ud83d\ude00 \/ \b \f \u0041"}`, false}, // beyond ASCII
		{`{"config": "a"}`, false},
		{`{"config":"a\"}`, false},
		{`{"config":"a\x"}`, false},
		{`{"config":"a"b"}`, false},
		{`{"config":"a\u12"}`, false},
		{`{"other":"a"}`, false},
		{`{}`, false},
		{``, false},
	} {
		body := kongstate.BodyOf([]byte(tc.body))
		require.Equal(t, decoded([]byte(tc.body)), kongHashOfBody(body), "%q", tc.body)
		_, ok := unescapedHash(body)
		require.Equal(t, tc.fast, ok, "%q read without decoding", tc.body)
	}
}
