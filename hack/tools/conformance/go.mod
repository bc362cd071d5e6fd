// Module conformance builds Gateway API conformance tools from the published
// sigs.k8s.io/gateway-api/conformance module: echo-basic, the upstream server of the
// single-node cluster (make cluster-up). The conformance module requires an unpublished
// sigs.k8s.io/gateway-api version, so gateway-api is replaced by its matching release.
module github.com/portcullis-io/portcullis/hack/tools/conformance

go 1.26.0

require sigs.k8s.io/gateway-api/conformance v1.6.3

require (
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260427160629-7cedc36a6bc4 // indirect
	google.golang.org/grpc v1.81.1 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
)

replace sigs.k8s.io/gateway-api => sigs.k8s.io/gateway-api v1.6.3
