package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's layout. The Dockerfile's image (gcr.io/distroless/static:nonroot) has the same
// entrypoint, user and CA bundle path; docs/image.md lists what distroless has that this does not.
const (
	entrypoint = "/konductor"
	nonrootUID = 65532
	user       = "65532:65532"
	caBundle   = "/etc/ssl/certs/ca-certificates.crt"
	sourceURL  = "https://github.com/konductor/konductor"
)

// env is the image's environment, as distroless/static's. SSL_CERT_FILE is not needed by Go
// (the bundle is at the first path crypto/x509 tries on Linux); it is set as distroless sets
// it, so that the bundle is found the same way whichever base the binary runs on.
var env = []string{
	"PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=" + caBundle,
}

// entry is one tar entry of a layer: a directory when body is nil and dir is set.
type entry struct {
	name     string // without the leading slash
	dir      bool
	mode     int64
	uid, gid int
	body     []byte
}

// baseEntries is the base layer: everything but the binary. The same for every platform.
func baseEntries() ([]entry, error) {
	certs, err := caCertificates()
	if err != nil {
		return nil, err
	}
	return []entry{
		{name: "etc", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl", dir: true, mode: 0o755},
		{name: "etc/ssl/certs", dir: true, mode: 0o755},
		{name: strings.TrimPrefix(caBundle, "/"), mode: 0o644, body: certs},
		{name: "home", dir: true, mode: 0o755},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: nonrootUID, gid: nonrootUID},
		{name: "tmp", dir: true, mode: 0o1777},
	}, nil
}

// caCertificates is the PEM bundle of Mozilla's NSS roots as golang.org/x/crypto/x509roots/fallback
// ships them: pinned by go.sum, so the image does not depend on the build machine's
// /etc/ssl/certs. Roots with a constraint (NSS's "distrust after" date, which a PEM file cannot
// carry) are left out: a file would trust them without it.
func caCertificates() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("no CA certificates in golang.org/x/crypto/x509roots/fallback/bundle")
	}
	return buf.Bytes(), nil
}

// layer writes entries as a gzip-compressed tar, reproducibly: entries sorted by name, every
// time set to mtime, owners and modes as given (no user or group names), no other metadata.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	sorted := append([]entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].name == e.name {
			return nil, fmt.Errorf("layer: %s twice", e.name)
		}
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// compress/gzip writes no name and a zero time in its header: the output depends on the
	// input, the level and the Go version alone.
	var gzBuf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gzBuf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gzBuf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// imageSpec is what one platform's image is made of.
type imageSpec struct {
	platform v1.Platform
	binary   string // path of the konductor binary built for platform
	version  string
	created  time.Time
	base     v1.Layer // baseEntries' layer, shared by every platform
}

// buildImage assembles one platform's image: OCI media types, the base layer, the binary's
// layer, and a config whose every field is a function of the spec.
func buildImage(s imageSpec) (v1.Image, error) {
	bin, err := os.ReadFile(s.binary)
	if err != nil {
		return nil, err
	}
	app, err := layer([]entry{{name: strings.TrimPrefix(entrypoint, "/"), mode: 0o755, body: bin}}, s.created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: s.created}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: s.base, History: v1.History{Created: created, CreatedBy: "konductor hack/image: base (CA certificates, passwd, group, tmp)", Comment: "base"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "konductor hack/image: " + entrypoint, Comment: "konductor " + s.version}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS = s.platform.OS
	cf.Architecture = s.platform.Architecture
	cf.Variant = s.platform.Variant
	cf.Config = v1.Config{
		Entrypoint: []string{entrypoint},
		User:       user,
		Env:        env,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "konductor",
			"org.opencontainers.image.source":  sourceURL,
			"org.opencontainers.image.version": s.version,
			"org.opencontainers.image.created": s.created.UTC().Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cf)
}

// buildIndex makes the multi-platform index of images, in the given order.
func buildIndex(images []v1.Image, platforms []v1.Platform) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for i, img := range images {
		p := platforms[i]
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// readFile returns a file's content and tar header from an image's flattened layers (the
// last layer that holds it wins; the images built here whiteout nothing).
func readFile(img v1.Image, name string) ([]byte, *tar.Header, error) {
	name = strings.TrimPrefix(path.Clean(name), "/")
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	var body []byte
	var hdr *tar.Header
	for _, l := range layers {
		err := walkLayer(l, func(h *tar.Header, r io.Reader) error {
			if strings.TrimSuffix(h.Name, "/") != name {
				return nil
			}
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			body, hdr = b, h
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if hdr == nil {
		return nil, nil, fmt.Errorf("%s: not in the image", name)
	}
	return body, hdr, nil
}

// walkLayer calls fn for each entry of a layer's uncompressed tar.
func walkLayer(l v1.Layer, fn func(*tar.Header, io.Reader) error) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}
