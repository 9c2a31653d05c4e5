# syntax=docker/dockerfile:1
# konductor image: a static binary on distroless, running as a non-root user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t konductor:dev .
#
# The manifests in config/ refer to the image as "konductor"; point them at yours with
# `cd config/manager && kustomize edit set image konductor=REGISTRY/konductor:TAG`, or give the
# Helm chart --set image.repository=REGISTRY/konductor --set image.tag=TAG.
#
# `make image` (hack/image, docs/image.md) builds the equivalent image without a container
# engine, reproducibly, and is what the release workflow publishes. This Dockerfile stays for
# those who build with an engine, and must stay equivalent: the same binary (CGO_ENABLED=0,
# -trimpath, -ldflags "-s -w -X main.version=..."), at /konductor, the entrypoint, user
# 65532:65532, CA bundle at /etc/ssl/certs/ca-certificates.crt. (distroless also carries tzdata,
# /etc/os-release and /root, which konductor does not use.)
#
# Never built in this repository: our machines have no container engine. Written for BuildKit
# (`docker build`, `docker buildx build --platform linux/amd64,linux/arm64`) and `podman build`.

# The builder runs on the build machine's platform and cross-compiles (pure Go, no cgo), so a
# multi-platform build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd/ cmd/
COPY internal/ internal/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/konductor ./cmd/konductor

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/konductor /konductor
USER 65532:65532
ENTRYPOINT ["/konductor"]
