package translator

import (
	"fmt"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/store"
)

// TestIncrementalMatchesBuildWithConsumers is TestIncrementalMatchesBuild on clusters of
// KongConsumers (the golden cases that have some, and consumerCluster), with edits mostly of
// KongConsumers and their credential Secrets: credentials changed, appearing, disappearing
// and taken by another consumer (a conflict), consumers added, deleted, renamed, moved to
// other groups and given plugins. It fails when those changes are not spliced (the property
// would then hold trivially).
func TestIncrementalMatchesBuildWithConsumers(t *testing.T) {
	var starts []translationStart
	for _, s := range goldenStarts(t) {
		if len(s.snap.KongConsumers) > 0 {
			starts = append(starts, s)
		}
	}
	starts = append(starts, translationStart{"consumers cluster", consumerCluster(20, 120), Options{}})
	steps := 150
	if testing.Short() {
		steps = 50
	}
	stats, reasons := matchBuildRounds(t, starts, steps, 31, func(ed *editor) { ed.consumersMostly = true })
	t.Logf("full because: %v", reasons)
	// Most edits of the cluster are of consumers without plugins or conflicts (the golden
	// cases have those throughout).
	cluster := stats["consumers cluster"]
	require.Greater(t, cluster.PartialConsumers, 2*cluster.Full, "consumer changes were hardly spliced")
}

// editConsumers makes one random change of the KongConsumers of s and their credential
// Secrets.
func (e *editor) editConsumers(s *store.Snapshot) string {
	consumer := func() (*kongv1.KongConsumer, func(*kongv1.KongConsumer), bool) {
		i, ok := pick(e, s.KongConsumers)
		if !ok {
			return nil, nil, false
		}
		c := s.KongConsumers[i].DeepCopy()
		c.ResourceVersion = e.version()
		c.Generation++
		return c, func(n *kongv1.KongConsumer) { s.KongConsumers[i] = n }, true
	}
	// credential is a key-auth Secret: its key is one of few, so that two consumers
	// sometimes hold the same (a conflict).
	credential := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: e.version(), UID: types.UID("uid-secret-" + ns + "-" + name),
			Labels: map[string]string{CredentialLabel: []string{"key-auth", "key-auth", "key-auth", "acl", "basic-auth"}[e.rng.IntN(5)]}},
			Data: map[string][]byte{"key": fmt.Appendf(nil, "key-%d", e.rng.IntN(1000)), "group": []byte("g"), "username": fmt.Appendf(nil, "u-%d", e.rng.IntN(1000))}}
	}
	// credentialOf is one of c's credentials, and its index in s.Secrets (-1: missing).
	credentialOf := func(c *kongv1.KongConsumer) (string, int, bool) {
		if len(c.Credentials) == 0 {
			return "", 0, false
		}
		name := c.Credentials[e.rng.IntN(len(c.Credentials))]
		for i, sec := range s.Secrets {
			if sec.Namespace == c.Namespace && sec.Name == name {
				return name, i, true
			}
		}
		return name, -1, true
	}
	switch e.rng.IntN(10) {
	case 0, 1, 2:
		// A credential changed, appearing or disappearing.
		c, _, ok := consumer()
		if !ok {
			break
		}
		name, i, ok := credentialOf(c)
		switch {
		case !ok:
		case i < 0:
			s.Secrets = append(s.Secrets, credential(c.Namespace, name))
			return "credential Secret appeared"
		case e.rng.IntN(4) == 0:
			s.Secrets = append(s.Secrets[:i], s.Secrets[i+1:]...)
			return "credential Secret deleted"
		default:
			n := credential(s.Secrets[i].Namespace, s.Secrets[i].Name)
			n.UID = s.Secrets[i].UID
			s.Secrets[i] = n
			return "credential Secret changed"
		}
	case 3:
		// A consumer added, with a new credential or one that does not exist yet.
		name := fmt.Sprintf("added-%d", e.rv)
		ns := []string{"default", "ns-0"}[e.rng.IntN(2)]
		kc := &kongv1.KongConsumer{ObjectMeta: objectMeta(ns, name, e.version()), Username: name, Credentials: []string{name + "-key"}}
		kc.Annotations = map[string]string{"kubernetes.io/ingress.class": "kong"}
		kc.CreationTimestamp = metav1.Unix(int64(e.rng.IntN(3)), 0)
		s.KongConsumers = append(s.KongConsumers, kc)
		if e.rng.IntN(3) > 0 {
			s.Secrets = append(s.Secrets, credential(ns, name+"-key"))
		}
		return "consumer added"
	case 4:
		if i, ok := pick(e, s.KongConsumers); ok {
			s.KongConsumers = append(s.KongConsumers[:i], s.KongConsumers[i+1:]...)
			return "consumer deleted"
		}
	case 5:
		if c, put, ok := consumer(); ok {
			c.Username = []string{"", c.Name, c.Name + "-renamed", "same"}[e.rng.IntN(4)]
			c.CustomID = []string{"", "custom"}[e.rng.IntN(2)]
			put(c)
			return "consumer username"
		}
	case 6:
		if c, put, ok := consumer(); ok {
			var groups []string
			for _, g := range s.KongConsumerGroups {
				if g.Namespace == c.Namespace && e.rng.IntN(2) == 0 {
					groups = append(groups, g.Name)
				}
			}
			c.ConsumerGroups = append(groups, []string{"missing"}[:e.rng.IntN(2)]...)
			put(c)
			return "consumer groups"
		}
	case 7:
		if c, put, ok := consumer(); ok {
			if _, has := c.Annotations[annPlugins]; has {
				delete(c.Annotations, annPlugins)
			} else {
				c.Annotations = map[string]string{annPlugins: "limit", "kubernetes.io/ingress.class": "kong"}
			}
			put(c)
			return "consumer plugins"
		}
	case 8:
		// Credentials named: another consumer's Secret, a new name, or none.
		if c, put, ok := consumer(); ok {
			if j, ok := pick(e, s.KongConsumers); ok && e.rng.IntN(30) == 0 && s.KongConsumers[j].Namespace == c.Namespace {
				c.Credentials = append(c.Credentials, s.KongConsumers[j].Credentials...)
			} else {
				c.Credentials = []string{c.Name + "-" + e.version()}[:e.rng.IntN(2)]
			}
			put(c)
			return "consumer credentials"
		}
	default:
		// A status write, or a label: nothing translation reads.
		if c, put, ok := consumer(); ok {
			c.Labels = map[string]string{"touched": e.version()}
			c.Generation--
			put(c)
			return "consumer label"
		}
	}
	return "nothing to edit"
}

// objectNames are the namespace/name of objs, in their order.
func objectNames[T client.Object](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetNamespace() + "/" + o.GetName()
	}
	return out
}
