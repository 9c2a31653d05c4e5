package store

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func payloadSecret(name string, typ corev1.SecretType, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels, UID: "uid-" + "x"},
		Type:       typ, Data: map[string][]byte{"key": []byte("value-of-" + name)},
	}
}

func TestSecretPayloadsTransformKeepsWhatTranslationMayRead(t *testing.T) {
	p := NewSecretPayloads(nil)
	p.SetReferenced(func(_ Kind, ns, name string) bool { return ns == "default" && name == "referenced" })
	for _, c := range []struct {
		secret *corev1.Secret
		kept   bool
	}{
		{payloadSecret("unrelated", corev1.SecretTypeOpaque, nil), false},
		{payloadSecret("referenced", corev1.SecretTypeOpaque, nil), true},
		{payloadSecret("tls", corev1.SecretTypeTLS, nil), true},
		{payloadSecret("credential", corev1.SecretTypeOpaque, map[string]string{"konghq.com/credential": "key-auth"}), true},
		{payloadSecret("ca", corev1.SecretTypeOpaque, map[string]string{CACertLabel: "true"}), true},
		{payloadSecret("other-label", corev1.SecretTypeOpaque, map[string]string{"app": "x"}), false},
	} {
		out, err := p.Transform(c.secret)
		if err != nil {
			t.Fatal(err)
		}
		s := out.(*corev1.Secret)
		if kept := len(s.Data) > 0; kept != c.kept {
			t.Errorf("%s: payload kept %v, want %v", s.Name, kept, c.kept)
		}
		if PayloadNotCached(s) == c.kept {
			t.Errorf("%s: marked %v, want %v", s.Name, PayloadNotCached(s), !c.kept)
		}
	}
	// An empty Secret has nothing to drop: not marked, so it is taken as the empty Secret it is.
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "empty"}}
	if out, _ := p.Transform(empty); PayloadNotCached(out.(*corev1.Secret)) {
		t.Error("an empty Secret is marked")
	}
}

type fixedSource struct{ snap Snapshot }

func (f fixedSource) Snapshot(context.Context) (*Snapshot, error) {
	s := f.snap
	s.Secrets = append([]*corev1.Secret(nil), f.snap.Secrets...)
	return &s, nil
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets, lists int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.Reader.List(ctx, list, opts...)
}

// A Secret cached without its data never shows empty: it is pending until loaded; loading
// reads the referenced ones only, and the loaded copy serves the next snapshots while the
// cache holds that version.
func TestSecretPayloadsLoadReferencedSecrets(t *testing.T) {
	for _, n := range []int{3, listThreshold + 5} {
		t.Run(fmt.Sprintf("secrets=%d", n), func(t *testing.T) {
			ctx := context.Background()
			var apiObjects []client.Object
			var cached []*corev1.Secret
			p := NewSecretPayloads(nil)
			for i := 0; i < n; i++ {
				s := payloadSecret(fmt.Sprintf("s%d", i), corev1.SecretTypeOpaque, nil)
				apiObjects = append(apiObjects, s.DeepCopy())
			}
			api := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(apiObjects...).Build()
			for i := 0; i < n; i++ {
				var s corev1.Secret
				if err := api.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("s%d", i)}, &s); err != nil {
					t.Fatal(err)
				}
				out, _ := p.Transform(s.DeepCopy())
				cached = append(cached, out.(*corev1.Secret))
			}
			reader := &countingReader{Reader: api}
			p.SetReader(reader)
			src := p.Source(fixedSource{Snapshot{Secrets: cached}})

			snap, err := src.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Secrets) != 0 || len(snap.SecretsPending) != n {
				t.Fatalf("%d Secrets shown, %d pending; want none shown, all pending", len(snap.Secrets), len(snap.SecretsPending))
			}
			// Nothing referenced: nothing read.
			if c, err := p.Complete(ctx, snap, func(Kind, string, string) bool { return false }); err != nil || c != nil {
				t.Fatalf("Complete with no reference = %v, %v", c, err)
			}
			if reader.gets+reader.lists != 0 {
				t.Fatal("read the API server for unreferenced Secrets")
			}
			referenced := func(_ Kind, _, name string) bool { return name == "s1" || name == "s2" }
			complete, err := p.Complete(ctx, snap, referenced)
			if err != nil {
				t.Fatal(err)
			}
			if len(complete.Secrets) != 2 || len(complete.SecretsPending) != n-2 {
				t.Fatalf("after loading: %d shown, %d pending", len(complete.Secrets), len(complete.SecretsPending))
			}
			for _, s := range complete.Secrets {
				if string(s.Data["key"]) != "value-of-"+s.Name || PayloadNotCached(s) {
					t.Errorf("%s loaded as %v (annotations %v)", s.Name, s.Data, s.Annotations)
				}
			}
			reads := reader.gets + reader.lists
			// The same snapshot completed again (a fallback translation of the round's
			// snapshot) shows the loaded copies without reading again.
			again, err := p.Complete(ctx, snap, referenced)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Secrets) != 2 || len(again.SecretsPending) != n-2 || reader.gets+reader.lists != reads {
				t.Fatalf("completed again: %d shown, %d pending, %d reads more", len(again.Secrets), len(again.SecretsPending), reader.gets+reader.lists-reads)
			}
			// The next snapshot shows the loaded copies without reading again.
			next, err := src.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(next.Secrets) != 2 || reader.gets+reader.lists != reads {
				t.Fatalf("next snapshot: %d shown, %d reads more", len(next.Secrets), reader.gets+reader.lists-reads)
			}
			// A snapshot without Secrets (a status updater's) shows none and forgets no
			// loaded copy.
			noSecrets, err := src.(payloadSource).SnapshotOf(ctx, NewKindSet(KindIngress))
			if err != nil {
				t.Fatal(err)
			}
			if len(noSecrets.Secrets)+len(noSecrets.SecretsPending) != 0 {
				t.Fatalf("snapshot without Secrets: %d shown, %d pending", len(noSecrets.Secrets), len(noSecrets.SecretsPending))
			}
			if next, err = src.Snapshot(ctx); err != nil || len(next.Secrets) != 2 || reader.gets+reader.lists != reads {
				t.Fatalf("after a snapshot without Secrets: %d shown, %d reads more (%v)", len(next.Secrets), reader.gets+reader.lists-reads, err)
			}
			// Another version cached (the Secret changed): the loaded copy no longer serves.
			cached[1] = cached[1].DeepCopy()
			cached[1].ResourceVersion = "12345"
			src = p.Source(fixedSource{Snapshot{Secrets: cached}})
			after, err := src.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Secrets) != 1 || after.Secrets[0].Name != "s2" {
				t.Fatalf("after s1 changed: shown %v", after.Secrets)
			}
		})
	}
}

// A ConfigMap keeps its data when it carries every CA-certificate label (KIC's: the
// ca-cert label and --configmap-label-selector's) or a BackendTLSPolicy of the latest
// translation names it; any other is cached as metadata, then loaded once named (issue #40).
func TestSecretPayloadsConfigMaps(t *testing.T) {
	ctx := context.Background()
	cm := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels, UID: "uid-" + types.UID(name), ResourceVersion: "1"},
			Data: map[string]string{"ca.crt": "pem of " + name}}
	}
	named := map[string]bool{}
	p := NewSecretPayloads(nil)
	p.SetConfigMapLabels(CACertLabel, "konghq.com/configmap")
	p.SetReferenced(func(k Kind, _, name string) bool { return k == KindConfigMap && named[name] })
	both := map[string]string{CACertLabel: "true", "konghq.com/configmap": "true"}
	var cached []*corev1.ConfigMap
	for _, c := range []struct {
		cm   *corev1.ConfigMap
		kept bool
	}{
		{cm("labelled", both), true},
		{cm("ca-label-only", map[string]string{CACertLabel: "true"}), false},
		{cm("policy-ca", nil), false}, // not named yet
		{cm("unrelated", nil), false},
	} {
		out, err := p.Transform(c.cm.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.ConfigMap)
		if kept := len(got.Data) > 0; kept != c.kept || PayloadNotCached(got) == c.kept {
			t.Errorf("%s: data kept %v (marked %v), want kept %v", got.Name, kept, PayloadNotCached(got), c.kept)
		}
		cached = append(cached, got)
	}
	reader := fake.NewClientBuilder().WithObjects(cm("policy-ca", nil), cm("unrelated", nil)).Build()
	p.SetReader(reader)
	src := p.Source(fixedSource{Snapshot{ConfigMaps: cached}})
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.ConfigMaps) != 1 || len(snap.ConfigMapsPending) != 3 {
		t.Fatalf("%d ConfigMaps shown, %d pending; want the labelled one shown, 3 pending", len(snap.ConfigMaps), len(snap.ConfigMapsPending))
	}
	// A policy now names policy-ca: Complete loads it, and only it.
	named["policy-ca"] = true
	referenced := func(k Kind, _, name string) bool { return k == KindConfigMap && named[name] }
	complete, err := p.Complete(ctx, snap, referenced)
	if err != nil || complete == nil {
		t.Fatalf("Complete: %v, %v", complete, err)
	}
	var shown []string
	for _, c := range complete.ConfigMaps {
		shown = append(shown, c.Name+"="+c.Data["ca.crt"])
	}
	if fmt.Sprint(shown) != "[labelled=pem of labelled policy-ca=pem of policy-ca]" || len(complete.ConfigMapsPending) != 2 {
		t.Fatalf("after Complete: shown %v, %d pending", shown, len(complete.ConfigMapsPending))
	}
	// The next snapshot shows the loaded copy while the cached version is the same one.
	p.SetReferenced(referenced)
	again, err := src.Snapshot(ctx)
	if err != nil || len(again.ConfigMaps) != 2 {
		t.Fatalf("next snapshot: %d shown (%v)", len(again.ConfigMaps), err)
	}
	// Once named, its next informer event caches it whole.
	if out, _ := p.Transform(cm("policy-ca", nil)); PayloadNotCached(out.(*corev1.ConfigMap)) {
		t.Error("a ConfigMap a BackendTLSPolicy names is cached without its data")
	}
}
