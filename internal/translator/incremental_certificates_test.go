package translator

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// tlsCluster is benchdata.Snapshot(ingresses) where each of the first withTLS Ingresses
// terminates TLS for its host with a Secret of its own (kubernetes.io/tls, certs[i]), as
// cert-manager leaves them.
func tlsCluster(t testing.TB, ingresses, withTLS int, certs []testCertPEM) *store.Snapshot {
	snap := benchdata.Snapshot(ingresses)
	for i := range withTLS {
		ing := snap.Ingresses[i].DeepCopy()
		ing.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{ing.Spec.Rules[0].Host}, SecretName: fmt.Sprintf("tls-%d", i)}}
		snap.Ingresses[i] = ing
		snap.Secrets = append(snap.Secrets, tlsSecretObject(ing.Namespace, fmt.Sprintf("tls-%d", i),
			types.UID(fmt.Sprintf("eeeeeeee-0000-4000-8000-%012x", i)), "1", certs[i]))
	}
	return snap
}

// tlsSecretObject is a kubernetes.io/tls Secret holding c.
func tlsSecretObject(ns, name string, uid types.UID, rv string, c testCertPEM) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, ResourceVersion: rv},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte(c.cert), corev1.TLSPrivateKeyKey: []byte(c.key)},
	}
}

// testCerts makes n certificates (each its own key).
func testCerts(t testing.TB, n int) []testCertPEM {
	out := make([]testCertPEM, n)
	for i := range out {
		c, err := newTestCertPEM()
		require.NoError(t, err)
		out[i] = c
	}
	return out
}

// BenchmarkIncrementalCertificateRotated measures a round (Incremental.Build and the body of
// POST /config by a kongstate.Renderer, as benchIncrementalRounds) at 3,000 Ingresses of which
// 1,000 terminate TLS with a Secret each, after cert-manager rotated one of those Secrets
// ("rotated": its certificate and key replaced, the same Secret), or after one was deleted
// and created again in turn ("deleted-created"). full-builds/op is the share of rounds that
// were a full translation.
func BenchmarkIncrementalCertificateRotated(b *testing.B) {
	const ingresses, withTLS = 3000, 1000
	certs := testCerts(b, withTLS+1)
	base := tlsCluster(b, ingresses, withTLS, certs)
	spare := certs[withTLS]
	at := len(base.Secrets) - withTLS // the first TLS Secret
	first := base.Secrets[at]
	edits := []struct {
		name string
		edit func(next *store.Snapshot, i int)
	}{
		{"rotated", func(next *store.Snapshot, i int) {
			c := certs[0]
			if i%2 == 0 {
				c = spare
			}
			old := next.Secrets[at]
			next.Secrets[at] = tlsSecretObject(old.Namespace, old.Name, old.UID, fmt.Sprint(i+2), c)
		}},
		{"deleted-created", func(next *store.Snapshot, i int) {
			if i%2 == 0 {
				for j, sec := range next.Secrets {
					if sec.Namespace == first.Namespace && sec.Name == first.Name {
						next.Secrets = append(next.Secrets[:j:j], next.Secrets[j+1:]...)
						return
					}
				}
				b.Fatal("no Secret to delete")
			}
			next.Secrets = append(next.Secrets, tlsSecretObject(first.Namespace, first.Name, types.UID(fmt.Sprintf("ffffffff-0000-4000-8000-%012x", i)), fmt.Sprint(i+2), certs[0]))
		}},
	}
	for _, e := range edits {
		for _, mode := range []string{"incremental", "full"} {
			b.Run(e.name+"/"+mode, func(b *testing.B) {
				full := benchRounds(b, mode, Options{}, base, func(snap *store.Snapshot, i int) *store.Snapshot {
					next := *snap
					next.Secrets = append(snap.Secrets[:0:0], snap.Secrets...)
					if i >= 0 {
						e.edit(&next, i)
					}
					return &next
				}, func(res Result) {
					if len(res.State.Certificates) < withTLS-1 || len(res.Problems) > 1 {
						b.Fatalf("unexpected result: %d certificates, problems %v", len(res.State.Certificates), res.Problems)
					}
				})
				b.ReportMetric(float64(full)/float64(b.N), "full-builds/op")
			})
		}
	}
}

// TestIncrementalMatchesBuildWithCertificates is TestIncrementalMatchesBuild with most edits
// of TLS Secrets (editCertificates: rotated to a new pair, to another Secret's pair, to an
// invalid one, tagged, created, deleted, made again with a new UID) and of Ingresses'
// spec.tls, from a cluster of TLS Ingresses (some sharing a Secret, two Secrets with one pair)
// and from every golden case's input (Gateway listeners, client certificates, CA
// certificates). Each round must give what a full Build gives; most rotations are spliced.
func TestIncrementalMatchesBuildWithCertificates(t *testing.T) {
	certs := testCerts(t, 40) // rotations to another Secret's pair are rare
	cluster := tlsCluster(t, 24, 10, certs)
	// Two Secrets with one pair, and a Secret two Ingresses share.
	cluster.Secrets[len(cluster.Secrets)-7].Data = cluster.Secrets[len(cluster.Secrets)-8].DeepCopy().Data
	shared := cluster.Ingresses[12].DeepCopy() // in tls-2's namespace
	shared.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{shared.Spec.Rules[0].Host}, SecretName: "tls-2"}}
	cluster.Ingresses[12] = shared
	starts := []translationStart{{"tls-cluster", cluster, Options{}}}
	starts = append(starts, goldenStarts(t)...)
	steps := 60
	if testing.Short() {
		steps = 20
	}
	stats, reasons := matchBuildRounds(t, starts, steps, 29, func(e *editor) {
		e.certificatesMostly, e.certs = true, certs
	})
	t.Logf("full Builds because: %v", reasons)
	require.Greater(t, stats["tls-cluster"].PartialCertificates, steps/6, "rotations were hardly spliced")
	var spliced int
	for _, st := range stats {
		spliced += st.PartialCertificates
	}
	require.Greater(t, spliced, stats["tls-cluster"].PartialCertificates, "no rotation was spliced from the golden inputs")
}

// editCertificates makes one edit of a Secret an Ingress's spec.tls names, or of an
// Ingress's spec.tls; it says what it did ("" when there was nothing to edit).
func (e *editor) editCertificates(s *store.Snapshot) string {
	type named struct{ ns, name string }
	var names []named // Secrets Ingresses name, existing or not
	for _, ing := range s.Ingresses {
		for _, t := range ing.Spec.TLS {
			if t.SecretName != "" {
				names = append(names, named{ing.Namespace, t.SecretName})
			}
		}
	}
	find := func(n named) int {
		for i, sec := range s.Secrets {
			if sec.Namespace == n.ns && sec.Name == n.name {
				return i
			}
		}
		return -1
	}
	pair := func() map[string][]byte {
		c, other := e.certs[e.rng.IntN(len(e.certs))], e.certs[e.rng.IntN(len(e.certs))]
		switch e.rng.IntN(12) {
		case 0:
			return map[string][]byte{corev1.TLSCertKey: []byte("not pem"), corev1.TLSPrivateKeyKey: []byte(c.key)}
		case 1:
			return map[string][]byte{corev1.TLSCertKey: []byte(c.cert), corev1.TLSPrivateKeyKey: []byte(other.key)}
		default:
			return map[string][]byte{corev1.TLSCertKey: []byte(c.cert), corev1.TLSPrivateKeyKey: []byte(c.key + "\n")}
		}
	}
	i, ok := pick(e, names)
	op := e.rng.IntN(12)
	switch {
	case ok && op < 7:
		at := find(names[i])
		if at < 0 {
			sec := tlsSecretObject(names[i].ns, names[i].name, types.UID(fmt.Sprintf("uid-%d", e.rv)), e.version(), testCertPEM{})
			sec.Data = pair()
			s.Secrets = append(s.Secrets, sec)
			return "TLS Secret created"
		}
		c := s.Secrets[at].DeepCopy()
		c.ResourceVersion = e.version()
		if op == 6 {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations["konghq.com/tags"] = []string{"a,b", "c", "", "a", "bad tag,"}[e.rng.IntN(5)]
			s.Secrets[at] = c
			return "TLS Secret tagged"
		}
		c.Data = pair()
		s.Secrets[at] = c
		return "TLS Secret rotated"
	case ok && op == 7:
		if at := find(names[i]); at >= 0 {
			s.Secrets = append(s.Secrets[:at], s.Secrets[at+1:]...)
			return "TLS Secret deleted"
		}
	case ok && op == 8:
		if at := find(names[i]); at >= 0 {
			c := s.Secrets[at].DeepCopy()
			c.UID, c.ResourceVersion = types.UID(fmt.Sprintf("uid-%d", e.rv)), e.version()
			c.CreationTimestamp = metav1.Unix(int64(e.rng.IntN(3)), 0)
			c.Data = pair()
			s.Secrets[at] = c
			return "TLS Secret made again"
		}
	default:
		c, j, ok := e.ingressVersion(s)
		if !ok {
			return ""
		}
		switch {
		case len(c.Spec.TLS) > 0 && e.rng.IntN(2) == 0:
			c.Spec.TLS = c.Spec.TLS[1:]
		default:
			host := "a.example.com"
			if len(c.Spec.Rules) > 0 && c.Spec.Rules[0].Host != "" && e.rng.IntN(3) > 0 {
				host = c.Spec.Rules[0].Host
			}
			secret := []string{"tls-0", "tls-2", "tls-new", "cert"}[e.rng.IntN(4)]
			if len(names) > 0 && e.rng.IntN(4) > 0 {
				secret = names[e.rng.IntN(len(names))].name
			}
			c.Spec.TLS = append(c.Spec.TLS, netv1.IngressTLS{Hosts: []string{host}, SecretName: secret})
		}
		s.Ingresses[j] = c
		return "Ingress spec.tls"
	}
	return ""
}
