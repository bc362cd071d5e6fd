// Module mkimage builds the image writer of the single-node cluster (make cluster-up)
// with github.com/google/go-containerregistry, kept out of the main module.
module github.com/portcullis-io/portcullis/hack/tools/mkimage

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
