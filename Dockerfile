# syntax=docker/dockerfile:1
# The portcullis image: one static binary on distroless, running as the nonroot user.
#   docker build -t ghcr.io/portcullis-io/portcullis:dev --build-arg VERSION=dev .

# Build on the build machine's platform and cross-compile for the target one, so a
# multi-platform build (docker buildx --platform linux/amd64,linux/arm64) needs no
# emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
# Stamped into 'portcullis version'; empty falls back to the Go build information.
ARG VERSION=""
WORKDIR /src
# go.mod pins go 1.26.x: build with the image's toolchain, never download another.
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
# Modules first, so editing the source does not invalidate the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/portcullis ./cmd/portcullis

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/portcullis /portcullis
USER 65532:65532
ENTRYPOINT ["/portcullis"]
CMD ["manager"]
