package integration

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
)

// Database mode: a key-auth key that another consumer, not ours, already holds in Kong. Kong
// refuses the credential with a UNIQUE violation that quotes the key; the Events say so
// and the log say so without the key.
func TestKongEchoedSecretsAreNotInEvents(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const key = "alice-secret-9f3a"
	kong := startEmulator(t, kongemu.Postgres)
	post := func(path, body string) {
		resp, err := http.Post(kong.URL+path, "application/json", bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, path)
	}
	post("/consumers", `{"username":"someone-else"}`)
	post("/consumers/someone-else/key-auth", `{"key":"`+key+`"}`)

	createAll(t, []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-key", Labels: map[string]string{"konghq.com/credential": "key-auth"}},
			StringData: map[string]string{"key": key}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice", Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			Username: "alice", Credentials: []string{"alice-key"}},
	})
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: handoverArgs(ns)})

	var messages []string
	require.Eventually(t, func() bool {
		var evs corev1.EventList
		require.NoError(t, admin.List(ctx, &evs, client.InNamespace(ns)))
		messages = messages[:0]
		found := false
		for _, e := range evs.Items {
			messages = append(messages, e.Reason+" "+e.Message)
			found = found || strings.Contains(e.Message, "UNIQUE violation")
		}
		return found
	}, 30*time.Second, 100*time.Millisecond, "Kong's refusal reported")
	for _, m := range messages {
		require.NotContains(t, m, key)
	}
	require.Contains(t, strings.Join(messages, "\n"), "[redacted]")
	require.NotContains(t, r.logs.String(), key, "nor in the log")
}
