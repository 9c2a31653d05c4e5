package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/store"
)

// objects parses YAML documents (separated by "---") into typed objects.
func objects(t testing.TB, docs string) []client.Object {
	t.Helper()
	scheme := store.NewScheme()
	var out []client.Object
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &tm))
		ro, err := scheme.New(tm.GroupVersionKind())
		require.NoError(t, err, "kind %s", tm.GroupVersionKind())
		require.NoError(t, yaml.Unmarshal([]byte(doc), ro))
		out = append(out, ro.(client.Object))
	}
	return out
}

// request is an admission request for obj, of kind k.
func request(t testing.TB, k store.Kind, op admissionv1.Operation, obj client.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := yaml.Marshal(obj)
	require.NoError(t, err)
	js, err := yaml.YAMLToJSON(raw)
	require.NoError(t, err)
	gvk := k.GroupVersionKind()
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + obj.GetName()),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: k.Resource()},
		Name:      obj.GetName(),
		Namespace: obj.GetNamespace(),
		Operation: op,
		Object:    runtime.RawExtension{Raw: js},
	}
}

// kindFor is the store kind of obj.
func kindFor(t testing.TB, obj client.Object) store.Kind {
	t.Helper()
	for _, k := range store.AllKinds() {
		if reflect.TypeOf(k.NewObject()) == reflect.TypeOf(obj) {
			return k
		}
	}
	t.Fatalf("no store kind for %T", obj)
	return 0
}

// fakeGateway answers plugin validations: valid unless the config has "bad", unreachable
// when down.
type fakeGateway struct {
	down  bool
	asked int
}

func (g *fakeGateway) ValidatePlugin(_ context.Context, p *kong.Plugin) (bool, string, error) {
	g.asked++
	if g.down {
		return false, "", errors.New("connection refused")
	}
	if _, bad := p.Config["bad"]; bad {
		return false, "schema violation (config.bad: unknown field)", nil
	}
	if v, echo := p.Config["echo"]; echo {
		// As Kong's UNIQUE and custom validators do: the value is in the message.
		return false, fmt.Sprintf("schema violation (config.echo: %v is not allowed)", v), nil
	}
	return true, "", nil
}
