package dbless

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
