package xds

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An Envoy that stays connected but never acknowledges the latest version of a type
// (a response lost between go-control-plane's watches and the stream, a wedged client)
// would run an old configuration forever: nothing else makes the server send again.
// Kick closes such an Envoy's stream; Envoy reconnects at once, asks for every type
// with the versions it runs, and gets the current snapshot whole. It keeps serving
// traffic with its configuration meanwhile: a closed xDS stream drops no request.

// kickKey carries a stream's kick function from the interceptor to OnStreamOpen.
type kickKey struct{}

// kickableStream is a server stream whose context ends when it is kicked.
type kickableStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s kickableStream) Context() context.Context { return s.ctx }

// kickable lets Kick end a stream. go-control-plane's stream loop blocks in Recv, which
// nothing but the client or the end of the RPC interrupts, so a kicked stream's RPC
// returns from here (Unavailable; Envoy reconnects at once) and the handler, whose
// Recv and Send then fail, winds down behind it.
func kickable(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	kicked := make(chan struct{})
	var once sync.Once
	kick := context.CancelFunc(func() { once.Do(func() { close(kicked) }) })
	done := make(chan error, 1)
	go func() {
		done <- handler(srv, kickableStream{ServerStream: ss, ctx: context.WithValue(ctx, kickKey{}, kick)})
	}()
	select {
	case err := <-done:
		return err
	case <-kicked:
		return status.Error(codes.Unavailable, "xds: the server closed this stream because it did not acknowledge the configuration; reconnect")
	}
}

// Kick closes the xDS streams of the named Envoy of gateway and returns how many it
// closed.
func (s *Server) Kick(gateway, nodeID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gateways[gateway]
	if g == nil {
		return 0
	}
	n := 0
	for _, st := range g.streams {
		if st.nodeID == nodeID && st.kick != nil {
			st.kick()
			n++
		}
	}
	if n > 0 {
		s.log.Info("closed the xDS stream of an Envoy that did not acknowledge the configuration; it reconnects and gets it whole", "gateway", gateway, "node", nodeID)
	}
	return n
}
