package translator

import (
	"strings"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/store"
)

// A value read from a Secret is never quoted in a problem (docs/security.md, item 3): a
// configFrom Secret that does not parse, in each way YAML parsers quote what they read
// (an unknown anchor, a tag that cannot decode the value, an unclosed flow), and credential
// Secrets whose values cannot be read, report where and what, not the value.
func TestProblemsNeverQuoteSecretValues(t *testing.T) {
	const secret = "s3cretValue42"
	for _, text := range []string{
		"redis_password: *" + secret,
		"minute: !!float " + secret,
		"a: b\nc: {x: 1, y: [2, " + secret,
		"[" + secret,
		secret + ": [",
		"'" + secret,
	} {
		snap := &store.Snapshot{
			Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conf"}, Data: map[string][]byte{"config": []byte(text)}}},
			KongPlugins: []*kongv1.KongPlugin{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, PluginName: "rate-limiting",
				ConfigFrom: &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: "conf", Key: "config"}}}},
		}
		_, problems := PluginEntity(snap, snap.KongPlugins[0])
		require.NotEmpty(t, problems, text)
		for _, p := range problems {
			require.NotContains(t, p.String(), secret, "the problem quotes the Secret: %s", p)
			require.True(t, strings.Contains(p.Message, "not valid YAML or JSON"), p.Message)
		}
	}
}
