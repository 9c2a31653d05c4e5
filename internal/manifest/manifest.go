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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/store"
)

// clusterScoped are the kinds that have no namespace. Every other kind gets "default" when
// its manifest names none, as kubectl apply does.
var clusterScoped = map[string]bool{
	"IngressClass": true, "KongClusterPlugin": true, "Namespace": true, "KongVault": true,
	"KongLicense": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"CustomResourceDefinition": true, "PersistentVolume": true, "StorageClass": true,
}

// Load reads the objects in paths: files, or directories walked recursively for *.yaml,
// *.yml and *.json in sorted order. A file may hold many documents ("---"), and a document
// may be a List. Objects of the same kind, namespace and name may appear only once.
func Load(paths ...string) ([]client.Object, error) {
	scheme := store.NewScheme()
	dec := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Strict: true})
	var out []client.Object
	seen := map[string]string{}
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			objs, err := loadFile(f, dec)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				key := o.GetObjectKind().GroupVersionKind().GroupKind().String() + " " + o.GetNamespace() + "/" + o.GetName()
				if prev, dup := seen[key]; dup {
					return nil, fmt.Errorf("%s: %s is also defined in %s", f, key, prev)
				}
				seen[key] = f
				out = append(out, o)
			}
		}
	}
	return out, nil
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

func loadFile(path string, dec runtime.Decoder) ([]client.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
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
			return nil, fmt.Errorf("unknown kind %q (apiVersion %q)", tm.Kind, tm.APIVersion)
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
	return []client.Object{co}, nil
}

// runtimeRaw keeps a List item as raw JSON until it is decoded on its own.
type runtimeRaw []byte

func (r *runtimeRaw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
