// Command image builds konductor's multi-platform OCI image without a container engine
// (`make image`; docs/image.md): for each platform a static binary (CGO_ENABLED=0, -trimpath,
// -ldflags "-s -w -X main.version=..."), on a base made here (Mozilla's CA roots from
// golang.org/x/crypto/x509roots/fallback, /etc/passwd and /etc/group with the nonroot user
// 65532, /tmp), entrypoint /konductor, user 65532:65532. Reproducible: the same sources, Go
// version, flags and --source-date-epoch give the same digests.
//
// It writes to --out:
//
//	oci/                          OCI image layout: index.json names the multi-platform index
//	                              (crane push, skopeo copy oci:, oras)
//	image.oci.tar                 the same layout as one tar (docker load on Docker 25+,
//	                              kind load image-archive, ctr images import --all-platforms)
//	<os>-<arch>.docker.tar        one platform's image as a `docker save` tarball (docker load
//	                              on any Docker, kind load image-archive, crane push)
//	bin/<os>-<arch>/konductor     the binaries
//	digest                        the index's digest
//
// The image of the machine's own platform is checked before any image file is written: its
// /konductor is read back from the layer and run with `version`.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type options struct {
	image, tag, version string
	platforms           []v1.Platform
	sourceDateEpoch     int64
	out                 string
	goTool, pkg         string
	verify              bool
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	image := fl.String("image", "konductor", "image repository (a registry host may lead it)")
	tag := fl.String("tag", "dev", "image tag")
	version := fl.String("version", "dev", "version stamped into the binary (main.version) and the image's labels")
	platforms := fl.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch[/variant]")
	epoch := fl.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "time of every file and of the image config, Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	out := fl.String("out", "dist/image", "output directory (its oci/ is replaced)")
	goTool := fl.String("go", envOr("GO", "go"), "go command")
	pkg := fl.String("pkg", "./cmd/konductor", "main package to build")
	verify := fl.Bool("verify", true, "run the machine's own platform's binary, read back from its image, with `version`")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	o := options{image: *image, tag: *tag, version: *version, out: *out, goTool: *goTool, pkg: *pkg, verify: *verify}
	if *epoch != "" {
		n, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("--source-date-epoch %q: not a number of seconds", *epoch)
		}
		o.sourceDateEpoch = n
	}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil || p.OS == "" || p.Architecture == "" {
			return fmt.Errorf("--platforms: %q is not os/arch[/variant]", s)
		}
		o.platforms = append(o.platforms, *p)
	}
	res, err := build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s\n", res.ref, res.digest)
	for i, p := range o.platforms {
		fmt.Fprintf(stdout, "  %-14s %s  %s\n", p.String(), res.platformDigests[i], res.dockerTars[i])
	}
	fmt.Fprintf(stdout, "  OCI layout %s, OCI archive %s\n", res.layoutDir, res.ociTar)
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

type result struct {
	ref             name.Tag
	digest          v1.Hash
	platformDigests []v1.Hash
	layoutDir       string
	ociTar          string
	dockerTars      []string
	index           v1.ImageIndex
}

// build builds the binaries and images and writes the outputs.
func build(ctx context.Context, o options) (*result, error) {
	if o.version == "" || strings.ContainsAny(o.version, " \t\n'\"") {
		return nil, fmt.Errorf("--version %q: empty or has spaces or quotes", o.version)
	}
	if len(o.platforms) == 0 {
		return nil, errors.New("no platforms")
	}
	ref, err := name.NewTag(o.image + ":" + o.tag)
	if err != nil {
		return nil, fmt.Errorf("--image and --tag: %w", err)
	}
	seen := map[string]bool{}
	for _, p := range o.platforms {
		if seen[platformKey(p)] {
			return nil, fmt.Errorf("platform %s twice", p.String())
		}
		seen[platformKey(p)] = true
	}
	created := time.Unix(o.sourceDateEpoch, 0).UTC()
	baseFiles, err := baseEntries()
	if err != nil {
		return nil, err
	}
	base, err := layer(baseFiles, created)
	if err != nil {
		return nil, err
	}
	res := &result{ref: ref}
	var images []v1.Image
	for _, p := range o.platforms {
		bin := filepath.Join(o.out, "bin", platformKey(p), "konductor")
		if err := goBuild(ctx, o, p, bin); err != nil {
			return nil, err
		}
		img, err := buildImage(imageSpec{platform: p, binary: bin, version: o.version, created: created, base: base})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.String(), err)
		}
		if o.verify && p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH {
			if err := verifyBinary(ctx, img, o.version); err != nil {
				return nil, fmt.Errorf("%s: %w", p.String(), err)
			}
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		images = append(images, img)
		res.platformDigests = append(res.platformDigests, d)
	}
	idx, err := buildIndex(images, o.platforms)
	if err != nil {
		return nil, err
	}
	res.index = idx
	if res.digest, err = idx.Digest(); err != nil {
		return nil, err
	}

	// The OCI layout, written anew: stale blobs of an earlier build would change the archive.
	res.layoutDir = filepath.Join(o.out, "oci")
	if err := os.RemoveAll(res.layoutDir); err != nil {
		return nil, err
	}
	lp, err := layout.Write(res.layoutDir, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		// The tag, as the OCI layout convention has it (skopeo's oci:DIR:TAG, oras)...
		"org.opencontainers.image.ref.name": ref.TagStr(),
		// ...and the full name, which containerd (ctr import, kind) and Docker 25+ name it by.
		"io.containerd.image.name": containerdName(ref),
	})); err != nil {
		return nil, err
	}
	res.ociTar = filepath.Join(o.out, "image.oci.tar")
	if err := tarDir(res.layoutDir, res.ociTar, created); err != nil {
		return nil, err
	}
	for i, p := range o.platforms {
		path := filepath.Join(o.out, platformKey(p)+".docker.tar")
		if err := writeFileAtomic(path, func(w io.Writer) error { return tarball.Write(ref, images[i], w) }); err != nil {
			return nil, err
		}
		res.dockerTars = append(res.dockerTars, path)
	}
	if err := os.WriteFile(filepath.Join(o.out, "digest"), []byte(res.digest.String()+"\n"), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// platformKey names a platform in file names: linux-amd64, linux-arm-v7.
func platformKey(p v1.Platform) string {
	return strings.Join(strings.FieldsFunc(p.String(), func(r rune) bool { return r == '/' || r == ':' }), "-")
}

// containerdName is a tag's fully qualified name as containerd and Docker normalize it:
// docker.io/library/konductor:dev for konductor:dev.
func containerdName(ref name.Tag) string {
	reg := ref.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + ref.RepositoryStr() + ":" + ref.TagStr()
}

// goBuild builds the binary for p as the Dockerfile does. Everything that changes the output
// and could come from the environment is set: cgo off, no VCS stamping, paths trimmed, the
// baseline instruction set of each architecture.
func goBuild(ctx context.Context, o options, p v1.Platform, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.goTool, "build", "-buildvcs=false", "-trimpath",
		"-ldflags", "-s -w -X main.version="+o.version, "-o", out, o.pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GO386=sse2")
	if p.Architecture == "arm" {
		goarm := strings.TrimPrefix(p.Variant, "v")
		if goarm == "" {
			goarm = "7"
		}
		cmd.Env = append(cmd.Env, "GOARM="+goarm)
	}
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", o.pkg, p.String(), err)
	}
	return nil
}

// verifyBinary reads the entrypoint back from the image and runs `version`.
func verifyBinary(ctx context.Context, img v1.Image, version string) error {
	body, _, err := readFile(img, entrypoint)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "konductor-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "konductor")
	if err := os.WriteFile(bin, body, 0o755); err != nil {
		return err
	}
	got, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", entrypoint, err)
	}
	if want := "konductor " + version + "\n"; string(got) != want {
		return fmt.Errorf("%s version printed %q, want %q", entrypoint, got, want)
	}
	return nil
}

// tarDir writes dir's files as a tar, reproducibly: sorted, every time set to mtime, root
// owned, 0644 files and 0755 directories.
func tarDir(dir, out string, mtime time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	return writeFileAtomic(out, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, p := range names {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Format: tar.FormatPAX}
			if fi.IsDir() {
				h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			} else {
				h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, fi.Size()
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if !fi.IsDir() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if _, err := tw.Write(b); err != nil {
					return err
				}
			}
		}
		return tw.Close()
	})
}

// writeFileAtomic writes a file through a temporary one, renamed into place when complete.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
