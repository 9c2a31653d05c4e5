package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/store"
)

// clusterScoped are the kinds that have no namespace. Every other kind gets "default" when
// its manifest names none, as kubectl apply does.
var clusterScoped = map[string]bool{
	"IngressClass": true, "KongClusterPlugin": true, "Namespace": true, "KongVault": true,
	"KongLicense": true, "GatewayClass": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"CustomResourceDefinition": true, "PersistentVolume": true, "StorageClass": true,
}

// Load reads the objects in paths (see LoadAll) and returns those of the kinds konductor
// reads; the others are left out.
func Load(paths ...string) ([]client.Object, error) {
	l, err := LoadAll(paths...)
	if err != nil {
		return nil, err
	}
	return l.Objects, nil
}

// Loaded is what LoadAll read: the objects of kinds konductor reads, and one line for each
// object of another kind (a Deployment, a kind no scheme here knows), which is skipped.
type Loaded struct {
	Objects []client.Object
	Skipped []string
}

// LoadAll reads the objects in paths: files, or directories walked recursively for *.yaml,
// *.yml and *.json in sorted order. A file may hold many documents ("---"), and a document
// may be a List. Objects of the same kind, namespace and name may appear only once.
func LoadAll(paths ...string) (*Loaded, error) {
	r := newReader()
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if err := r.add(f, data); err != nil {
				return nil, err
			}
		}
	}
	return r.out, nil
}

// Parse reads the objects of one manifest held in memory, as LoadAll reads a file: the
// objects of kinds konductor reads, the others skipped.
func Parse(data []byte) (*Loaded, error) {
	r := newReader()
	if err := r.add("manifest", data); err != nil {
		return nil, err
	}
	return r.out, nil
}

// reader accumulates the objects of several manifests.
type reader struct {
	dec  runtime.Decoder
	read map[schema.GroupVersionKind]bool
	seen map[string]string // object key -> the manifest that defined it
	out  *Loaded
}

func newReader() *reader {
	scheme := store.Scheme()
	r := &reader{
		dec:  json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Strict: true}),
		read: map[schema.GroupVersionKind]bool{}, seen: map[string]string{}, out: &Loaded{},
	}
	for _, k := range store.AllKinds() {
		for _, gvk := range k.GroupVersionKinds() { // older versions too (store.Kind.Versions)
			r.read[gvk] = true
		}
	}
	return r
}

// add reads the manifest data, named name in messages.
func (r *reader) add(name string, data []byte) error {
	objs, err := loadFile(name, data, r.dec, r.out)
	if err != nil {
		return err
	}
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		key := gvk.GroupKind().String() + " " + o.GetNamespace() + "/" + o.GetName()
		if prev, dup := r.seen[key]; dup {
			return fmt.Errorf("%s: %s is also defined in %s", name, key, prev)
		}
		r.seen[key] = name
		if !r.read[gvk] {
			why := "konductor does not read this kind"
			if k, ok := store.KindNamed(gvk.Kind); ok && k.GroupVersionKind().Group == gvk.Group {
				why = fmt.Sprintf("konductor does not read %s at %s (versions read: %s)", gvk.Kind, gvk.Version, strings.Join(k.Versions(), ", "))
			}
			r.out.Skipped = append(r.out.Skipped, fmt.Sprintf("%s: %s %s: %s; skipped", name, gvk.Kind, strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"), why))
			continue
		}
		if v1, older := store.ToInternal(o); older {
			// TCPRoute, UDPRoute, TLSRoute at v1alpha2 and BackendTLSPolicy at v1alpha3, as KIC
			// 3.5 reads them: converted to the v1 type the store and translation read, as the
			// controller converts them from a cluster that serves only those versions.
			v1.GetObjectKind().SetGroupVersionKind(v1.GetObjectKind().GroupVersionKind().GroupKind().WithVersion(gatewayv1.SchemeGroupVersion.Version))
			o = v1
		}
		r.out.Objects = append(r.out.Objects, o)
	}
	return nil
}

func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

func loadFile(path string, data []byte, dec runtime.Decoder, l *Loaded) ([]client.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []client.Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		objs, err := decodeDoc(doc, dec)
		var unknown *unknownKindError
		if errors.As(err, &unknown) {
			l.Skipped = append(l.Skipped, fmt.Sprintf("%s: document %d: %v; skipped", path, i, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

func decodeDoc(doc []byte, dec runtime.Decoder) ([]client.Object, error) {
	j, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || string(j) == "null" {
		return nil, nil // empty document or only comments
	}
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(j, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, fmt.Errorf("not a Kubernetes object: apiVersion and kind are required")
	}
	if tm.Kind == "List" || strings.HasSuffix(tm.Kind, "List") && tm.APIVersion == "v1" {
		var list struct {
			Items []runtimeRaw `json:"items"`
		}
		if err := sigsyaml.Unmarshal(j, &list); err != nil {
			return nil, err
		}
		var out []client.Object
		for k, item := range list.Items {
			objs, err := decodeDoc(item, dec)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", k, err)
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	obj, gvk, err := dec.Decode(j, nil, nil)
	if err != nil {
		if runtime.IsNotRegisteredError(err) {
			return nil, &unknownKindError{tm}
		}
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("kind %q is not an object", tm.Kind)
	}
	// Typed objects decoded by a serializer keep their TypeMeta; set it anyway so callers
	// can rely on it.
	co.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind(*gvk))
	if co.GetNamespace() == "" && !clusterScoped[gvk.Kind] {
		co.SetNamespace("default")
	}
	if s, ok := co.(*corev1.Secret); ok && len(s.StringData) > 0 {
		// The API server merges stringData into data on write; a manifest read here stands
		// for what the cluster would hold.
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	return []client.Object{co}, nil
}

// unknownKindError is a document of a kind no scheme here knows.
type unknownKindError struct{ tm metav1.TypeMeta }

func (e *unknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %q (apiVersion %q)", e.tm.Kind, e.tm.APIVersion)
}

// runtimeRaw keeps a List item as raw JSON until it is decoded on its own.
type runtimeRaw []byte

func (r *runtimeRaw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
