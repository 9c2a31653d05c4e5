package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Most tests build the images of a stand-in (testdata/standin: a few hundred kilobytes, quick
// to cross-compile) for two platforms; TestRealKonductor builds konductor's own linux/amd64
// image (skipped under -short: a cold -trimpath build of konductor takes minutes on two cores).

const (
	testVersion = "v1.2.3-test"
	testEpoch   = 1700000000
)

var testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

var (
	sharedOnce sync.Once
	sharedRes  *result
	sharedOpts options
	sharedErr  error
	sharedDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func standinOptions(out string, epoch int64) options {
	return options{
		image: "registry.example.com/konductor", tag: "test", version: testVersion,
		platforms: testPlatforms, sourceDateEpoch: epoch, out: out,
		goTool: goTool(), pkg: "./testdata/standin", verify: true,
	}
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// shared is one build of the stand-in's images, for the tests that only read them.
func shared(t *testing.T) (*result, options) {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "konductor-image-test-")
		if sharedErr != nil {
			return
		}
		sharedOpts = standinOptions(sharedDir, testEpoch)
		sharedRes, sharedErr = build(context.Background(), sharedOpts)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedRes, sharedOpts
}

func images(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Image{}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Platform.String()] = img
	}
	return out
}

func TestImageConfig(t *testing.T) {
	res, _ := shared(t)
	for plat, img := range images(t, res.index) {
		checkConfig(t, plat, img)
	}
}

// checkConfig checks one platform's image of a build with testVersion and testEpoch: its
// config (platform, entrypoint, user, environment, labels, times) and media types.
func checkConfig(t *testing.T, plat string, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.OS + "/" + cf.Architecture; got != plat {
		t.Errorf("%s: config platform %s", plat, got)
	}
	c := cf.Config
	if !reflect.DeepEqual(c.Entrypoint, []string{"/konductor"}) || len(c.Cmd) != 0 {
		t.Errorf("%s: entrypoint %q cmd %q, want [/konductor] and none", plat, c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532 (the Dockerfile's)", plat, c.User)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("%s: env %q lacks SSL_CERT_FILE", plat, c.Env)
	}
	if c.Labels["org.opencontainers.image.version"] != testVersion {
		t.Errorf("%s: labels %v", plat, c.Labels)
	}
	want := time.Unix(testEpoch, 0).UTC()
	if !cf.Created.Time.Equal(want) {
		t.Errorf("%s: created %v, want %v", plat, cf.Created.Time, want)
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(want) {
			t.Errorf("%s: history %q created %v", plat, h.CreatedBy, h.Created.Time)
		}
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("%s: manifest media type %s", plat, mt)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
		t.Errorf("%s: config %s, %d layers, want OCI config and 2 layers", plat, m.Config.MediaType, len(m.Layers))
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("%s: layer media type %s", plat, l.MediaType)
		}
	}
}

// Every file of the image, with its owner and mode: nothing else is there (no shell, no
// package manager, no /bin).
func TestImageFiles(t *testing.T) {
	res, _ := shared(t)
	for plat, img := range images(t, res.index) {
		checkFiles(t, plat, img)
	}
}

// checkFiles checks every file of one platform's image of a build with testEpoch, and the
// nonroot user and group.
func checkFiles(t *testing.T, plat string, img v1.Image) {
	t.Helper()
	type file struct {
		mode     int64
		uid, gid int
	}
	want := map[string]file{
		"etc/":                              {0o755, 0, 0},
		"etc/group":                         {0o644, 0, 0},
		"etc/nsswitch.conf":                 {0o644, 0, 0},
		"etc/passwd":                        {0o644, 0, 0},
		"etc/ssl/":                          {0o755, 0, 0},
		"etc/ssl/certs/":                    {0o755, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0},
		"home/":                             {0o755, 0, 0},
		"home/nonroot/":                     {0o700, 65532, 65532},
		"tmp/":                              {0o1777, 0, 0},
		"konductor":                         {0o755, 0, 0},
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]file{}
	for i, l := range layers {
		var names []string
		err := walkLayer(l, func(h *tar.Header, _ io.Reader) error {
			names = append(names, h.Name)
			got[h.Name] = file{h.Mode, h.Uid, h.Gid}
			if !h.ModTime.Equal(time.Unix(testEpoch, 0)) || h.Uname != "" || h.Gname != "" {
				t.Errorf("%s: %s: time %v, names %q %q", plat, h.Name, h.ModTime, h.Uname, h.Gname)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !sort.StringsAreSorted(names) {
			t.Errorf("%s: layer %d entries not sorted: %q", plat, i, names)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: files\n got %v\nwant %v", plat, got, want)
	}
	for name := range got {
		switch filepath.Base(strings.TrimSuffix(name, "/")) {
		case "sh", "bash", "ash", "dash", "busybox":
			t.Errorf("%s: a shell: %s", plat, name)
		}
	}

	passwd, _, err := readFile(img, "/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") {
		t.Errorf("%s: /etc/passwd has no nonroot user 65532:\n%s", plat, passwd)
	}
	group, _, err := readFile(img, "/etc/group")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(group), "\nnonroot:x:65532:\n") {
		t.Errorf("%s: /etc/group has no nonroot group 65532:\n%s", plat, group)
	}
}

// The CA bundle is PEM CA certificates that crypto/x509 loads, at the path it reads first.
func TestCABundle(t *testing.T) {
	res, _ := shared(t)
	img := images(t, res.index)["linux/amd64"]
	certs, _, err := readFile(img, "/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rest := certs; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				t.Fatalf("bundle has %d bytes that are not PEM", len(rest))
			}
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !c.IsCA {
			t.Errorf("%s: not a CA", c.Subject)
		}
		n++
	}
	if n < 100 {
		t.Errorf("%d certificates, want Mozilla's hundred or more", n)
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(certs) {
		t.Error("crypto/x509 loads none")
	}
}

// The binary is at the entrypoint's path, as built, and runs: `version` prints the version
// given to the build.
func TestBinaryInImageRuns(t *testing.T) {
	res, opts := shared(t)
	for plat, img := range images(t, res.index) {
		body, h, err := readFile(img, "/konductor")
		if err != nil {
			t.Fatal(err)
		}
		built, err := os.ReadFile(filepath.Join(opts.out, "bin", strings.ReplaceAll(plat, "/", "-"), "konductor"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, built) || h.Mode != 0o755 {
			t.Errorf("%s: /konductor (mode %o) is not the built binary", plat, h.Mode)
		}
		if plat != runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		bin := filepath.Join(t.TempDir(), "konductor")
		if err := os.WriteFile(bin, body, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != "konductor "+testVersion+"\n" {
			t.Errorf("version printed %q", out)
		}
	}
}

// The index lists both platforms; the layout, the OCI archive and the docker tarballs hold
// what the tools that read them need.
func TestIndexAndOutputs(t *testing.T) {
	res, opts := shared(t)
	m, err := res.index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index: %s with %d manifests", m.MediaType, len(m.Manifests))
	}
	for i, d := range m.Manifests {
		if d.Platform == nil || d.Platform.String() != testPlatforms[i].String() || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("index entry %d: %s %v", i, d.MediaType, d.Platform)
		}
	}

	// The layout's index.json has one entry, the multi-platform index, named: crane push
	// DIR REF pushes it (without --index, which would wrap index.json in another index).
	lp, err := layout.FromPath(res.layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest != res.digest || tm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("layout index.json: %+v, want the index %s", tm.Manifests, res.digest)
	}
	ann := tm.Manifests[0].Annotations
	if ann["org.opencontainers.image.ref.name"] != "test" || ann["io.containerd.image.name"] != "registry.example.com/konductor:test" {
		t.Errorf("layout annotations %v", ann)
	}
	read, err := top.ImageIndex(res.digest)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := read.Digest(); d != res.digest {
		t.Errorf("index read back from the layout: %s, want %s", d, res.digest)
	}
	if err := validateLayoutBlobs(res.layoutDir, read); err != nil {
		t.Error(err)
	}
	if b, err := os.ReadFile(filepath.Join(opts.out, "digest")); err != nil || string(b) != res.digest.String()+"\n" {
		t.Errorf("digest file %q %v", b, err)
	}

	// The OCI archive is the layout, file for file.
	archived := map[string][]byte{}
	f, err := os.Open(res.ociTar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			archived[h.Name], _ = io.ReadAll(tr)
		}
	}
	for _, name := range []string{"oci-layout", "index.json", "blobs/sha256/" + res.digest.Hex} {
		want, err := os.ReadFile(filepath.Join(res.layoutDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(archived[name], want) {
			t.Errorf("image.oci.tar: %s differs from the layout's", name)
		}
	}

	// Each docker tarball is one platform's image, tagged, as `docker save` writes it.
	imgs := images(t, res.index)
	for i, p := range testPlatforms {
		path := res.dockerTars[i]
		dm, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
		if err != nil {
			t.Fatal(err)
		}
		if len(dm) != 1 || !reflect.DeepEqual(dm[0].RepoTags, []string{"registry.example.com/konductor:test"}) {
			t.Errorf("%s: manifest.json %+v", path, dm)
		}
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := img.ConfigName()
		want, _ := imgs[p.String()].ConfigName()
		if got != want {
			t.Errorf("%s: config %s, want the index's %s image config %s", path, got, p.String(), want)
		}
	}
}

// validateLayoutBlobs checks that every blob the index reaches is in the layout, with its digest.
func validateLayoutBlobs(dir string, idx v1.ImageIndex) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var hashes []v1.Hash
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		im, err := img.Manifest()
		if err != nil {
			return err
		}
		hashes = append(hashes, d.Digest, im.Config.Digest)
		for _, l := range im.Layers {
			hashes = append(hashes, l.Digest)
		}
	}
	for _, h := range hashes {
		f, err := os.Open(filepath.Join(dir, "blobs", h.Algorithm, h.Hex))
		if err != nil {
			return err
		}
		got, _, err := v1.SHA256(f)
		f.Close()
		if err != nil {
			return err
		}
		if got != h {
			return &os.PathError{Op: "digest", Path: h.String(), Err: os.ErrInvalid}
		}
	}
	return nil
}

// Two builds of the same input give the same digests and byte-identical files; another
// SOURCE_DATE_EPOCH gives another digest.
func TestReproducible(t *testing.T) {
	first, firstOpts := shared(t)
	o := standinOptions(t.TempDir(), testEpoch)
	second, err := build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if second.digest != first.digest {
		t.Errorf("second build: %s, first: %s", second.digest, first.digest)
	}
	for _, name := range []string{"image.oci.tar", "linux-amd64.docker.tar", "linux-arm64.docker.tar", "oci/index.json"} {
		a, errA := os.ReadFile(filepath.Join(firstOpts.out, name))
		b, errB := os.ReadFile(filepath.Join(o.out, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds (%v, %v)", name, errA, errB)
		}
	}

	o = standinOptions(t.TempDir(), testEpoch+1)
	third, err := build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if third.digest == first.digest {
		t.Error("another SOURCE_DATE_EPOCH gave the same digest")
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--platforms", "linux"},
		{"--platforms", "linux/amd64,linux/amd64", "--pkg", "./testdata/standin"},
		{"--version", "1 2"},
		{"--source-date-epoch", "yesterday"},
		{"--image", "Not/Valid"},
		{"extra"},
	} {
		args = append(args, "--out", t.TempDir(), "--go", goTool())
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	var out bytes.Buffer
	dir := t.TempDir()
	err := run(context.Background(), []string{"--out", dir, "--go", goTool(), "--pkg", "./testdata/standin",
		"--platforms", runtime.GOOS + "/" + runtime.GOARCH, "--image", "konductor", "--tag", "dev"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "konductor:dev@sha256:") {
		t.Errorf("printed %q", out.String())
	}
	var idx struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "oci", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Manifests) != 1 ||
		idx.Manifests[0].Annotations["io.containerd.image.name"] != "docker.io/library/konductor:dev" {
		t.Errorf("index.json %s", b)
	}
}

// konductor itself, the linux/amd64 image, through the builder's path (build: go build with the
// image's flags, the layers, the index, every output file): the image is checked as the
// stand-in's are, and /konductor, read back from its layer, is konductor's main package built
// as the image builds it and runs on a linux/amd64 machine (`version`; `translate` of
// examples/). Skipped under -short only: `make test` runs it. The first build with a cold cache
// compiles konductor and its dependencies anew (-trimpath and CGO_ENABLED=0 share no
// compiled package with go test's builds): minutes on two cores (docs/image.md).
func TestRealKonductor(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building konductor itself (minutes with a cold build cache)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	o := options{
		image: "konductor", tag: "test", version: testVersion,
		platforms:       []v1.Platform{amd64},
		sourceDateEpoch: testEpoch, out: t.TempDir(), goTool: goTool(),
		pkg: filepath.Join(root, "cmd", "konductor"), verify: true,
	}
	start := time.Now()
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built konductor's linux/amd64 image in %v: %s", time.Since(start).Round(time.Second), res.digest)

	imgs := images(t, res.index)
	img := imgs["linux/amd64"]
	if len(imgs) != 1 || img == nil {
		t.Fatalf("index holds %v, want linux/amd64 alone", slices.Collect(maps.Keys(imgs)))
	}
	checkConfig(t, "linux/amd64", img)
	checkFiles(t, "linux/amd64", img)
	for _, p := range []string{res.ociTar, res.dockerTars[0], filepath.Join(res.layoutDir, "index.json")} {
		if !fileExists(p) {
			t.Errorf("%s not written", p)
		}
	}

	// The layer's /konductor is the binary built, and that binary is konductor's main package
	// as the image builds it: static, for the baseline amd64, no cgo, no build paths.
	body, h, err := readFile(img, entrypoint)
	if err != nil {
		t.Fatal(err)
	}
	built, err := os.ReadFile(filepath.Join(o.out, "bin", "linux-amd64", "konductor"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, built) || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
		t.Errorf("/konductor (mode %o, owner %d:%d, %d bytes) is not the built binary (%d bytes)", h.Mode, h.Uid, h.Gid, len(body), len(built))
	}
	ef, err := elf.NewFile(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Machine != elf.EM_X86_64 || ef.Type != elf.ET_EXEC {
		t.Errorf("/konductor: ELF machine %v type %v, want x86-64 executable", ef.Machine, ef.Type)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/konductor is dynamically linked (%v): the image has no libc", p.Type)
		}
	}
	info, err := buildinfo.Read(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != "github.com/konductor/konductor/cmd/konductor" {
		t.Errorf("/konductor is %s, not konductor's main package", info.Path)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, v := range map[string]string{"-trimpath": "true", "CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": "amd64", "GOAMD64": "v1", "-buildmode": "exe"} {
		if settings[k] != v {
			t.Errorf("/konductor built with %s=%q, want %q", k, settings[k], v)
		}
	}
	if settings["vcs"] != "" {
		t.Errorf("/konductor carries a VCS stamp (%s %s): the digest would depend on the checkout", settings["vcs"], settings["vcs.revision"])
	}
	if bytes.Contains(body, []byte(root)) {
		t.Errorf("/konductor holds the build directory %s: not -trimpath, not reproducible elsewhere", root)
	}
	if len(body) < 10<<20 {
		t.Errorf("/konductor is %d bytes: not konductor", len(body))
	}

	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Logf("not running /konductor on %s/%s", runtime.GOOS, runtime.GOARCH)
		return
	}
	// It runs, from the layer's bytes, with the image's environment.
	bin := filepath.Join(t.TempDir(), "konductor")
	if err := os.WriteFile(bin, body, 0o755); err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	konductor := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = cf.Config.Env
		cmd.Dir = t.TempDir()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("konductor %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out, nil
	}
	out, err := konductor("version")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "konductor "+testVersion+"\n" {
		t.Errorf("version printed %q", out)
	}
	// translate: the store, the translator and the renderer, as the controller runs them.
	out, err = konductor("translate", "-f", filepath.Join(root, "examples"), "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var kong struct {
		FormatVersion string            `json:"_format_version"`
		Services      []json.RawMessage `json:"services"`
	}
	if err := json.Unmarshal(out, &kong); err != nil {
		t.Fatalf("translate printed no JSON: %v\n%.500s", err, out)
	}
	if kong.FormatVersion != "3.0" || len(kong.Services) == 0 {
		t.Errorf("translate of examples/: _format_version %q, %d services\n%.500s", kong.FormatVersion, len(kong.Services), out)
	}
}
