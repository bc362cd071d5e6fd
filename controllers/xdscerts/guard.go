package xdscerts

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// NodeGuard is a gRPC stream interceptor that holds an Envoy to the namespace its client
// certificate names: a discovery request whose node.cluster ("<namespace>/<gateway>")
// is in another namespace ends the stream with PermissionDenied. Without it, whoever can
// read the client Secret of one namespace could fetch the configuration, secrets
// included, of every Gateway in the cluster.
func NodeGuard(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ns, err := peerNamespace(ss.Context())
	if err != nil {
		return status.Error(codes.Unauthenticated, err.Error())
	}
	g := &guardedStream{ServerStream: ss, namespace: ns}
	err = handler(srv, g)
	// go-control-plane ends a stream whose Recv failed without an error of its own, so
	// the refusal is returned here.
	if refused := g.refused.Load(); refused != nil {
		return *refused
	}
	return err
}

func peerNamespace(ctx context.Context) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", errors.New("no peer information")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return "", errors.New("no verified client certificate")
	}
	ns, ok := NamespaceOf(info.State.VerifiedChains[0][0])
	if !ok {
		return "", errors.New("the client certificate names no namespace")
	}
	return ns, nil
}

type guardedStream struct {
	grpc.ServerStream
	namespace string
	// refused is set once a request was refused.
	refused atomic.Pointer[error]
}

type nodeCarrier interface{ GetNode() *corev3.Node }

func (g *guardedStream) RecvMsg(m any) error {
	if err := g.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	req, ok := m.(nodeCarrier)
	if !ok || req.GetNode() == nil {
		return nil
	}
	cluster := req.GetNode().GetCluster()
	if ns, _, _ := strings.Cut(cluster, "/"); ns != g.namespace {
		err := status.Errorf(codes.PermissionDenied,
			"the client certificate of namespace %q may not fetch the configuration of Gateway %q", g.namespace, cluster)
		g.refused.Store(&err)
		return err
	}
	return nil
}
