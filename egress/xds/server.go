// Package xds is the one place where Envoy configuration is published. It keeps one
// go-control-plane snapshot per Gateway (keyed by the Envoy node's cluster field,
// "<namespace>/<gateway>"), serves it over incremental (delta) ADS, which Portcullis'
// bootstraps ask for, and over state-of-the-world ADS for Envoys started from older
// ones (secrets included, by SDS on the same stream), and follows Envoy's ACKs and
// NACKs so that the controllers can tell whether a Gateway is programmed.
//
// Nothing here logs resource contents: secrets travel through this package.
package xds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Keepalive and shutdown settings of the gRPC server. Envoy's bootstrap pings every 30 s
// (HTTP/2 keepalive); the enforcement policy must allow that or gRPC would close the
// connection with "too_many_pings".
const (
	serverPingInterval = 30 * time.Second
	serverPingTimeout  = 10 * time.Second
	clientMinPingTime  = 10 * time.Second
	maxRecvMessageSize = 16 << 20 // requests name every subscribed resource
	gracefulStopWait   = 5 * time.Second
)

// Server keeps the snapshots of every Gateway and serves them to Envoy over ADS.
type Server struct {
	log   logr.Logger
	cache *deltaCache
	now   func() time.Time

	// publishMu serializes Publish and Remove and guards memos, the analysis of each
	// Gateway's last snapshot (always a consistent one): what was learnt about its
	// resources.
	publishMu sync.Mutex
	memos     map[string]*analysis
	// resends counts Resend calls per Gateway, to name each resent version.
	resends map[string]int

	// mu guards the state below; it is never held while calling into the cache.
	mu       sync.Mutex
	gateways map[string]*gatewayState
	streams  map[int64]*streamState

	changes *notifier
	// news counts the status changes a Publish does not make itself (news.go).
	news    atomic.Uint64
	serving atomic.Bool
}

// New returns a Server with no snapshot.
func New(log logr.Logger) *Server {
	s := &Server{
		log:      log,
		now:      time.Now,
		memos:    map[string]*analysis{},
		resends:  map[string]int{},
		gateways: map[string]*gatewayState{},
		streams:  map[int64]*streamState{},
		changes:  newNotifier(),
	}
	s.cache = newDeltaCache(cachev3.NewSnapshotCache(true, nodeHash{}, cacheLogger{log.WithName("cache")}))
	return s
}

// Changes emits the name of a Gateway whenever its status changes. Changes to one
// Gateway are coalesced while the receiver is busy, so a receiver must re-read Status.
// Names are delivered while Serve runs.
func (s *Server) Changes() <-chan string { return s.changes.out }

// Serve serves ADS on lis until ctx is done, then stops gracefully: open streams end
// and Envoys reconnect to another server. opts come after the defaults (keepalive,
// message size), so they may override them; TLS credentials go there. Serve may be
// called once.
// namedOnlyTypes are the resource types Envoy always asks for by name. go-control-plane
// by default reads a request with no names as "every resource" (the legacy wildcard of
// listeners and clusters); for these types an empty request means Envoy no longer wants
// any (see parkEmptyRequestLocked).
var namedOnlyTypes = []string{resource.RouteType, resource.EndpointType, resource.SecretType}

func (s *Server) Serve(ctx context.Context, lis net.Listener, opts ...grpc.ServerOption) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("xds: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	grpcServer := grpc.NewServer(append(defaultServerOptions(), opts...)...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(grpcServer, adsService{
		sotw: sotw.NewServer(ctx, s.cache, callbacks{s},
			sotw.WithOrderedADS(), sotw.WithLogger(cacheLogger{s.log.WithName("server")}),
			sotw.DeactivateLegacyWildcardForTypes(namedOnlyTypes)),
		delta: delta.NewServer(ctx, s.cache, callbacks{s},
			delta.WithLogger(cacheLogger{s.log.WithName("server")}),
			delta.DeactivateLegacyWildcardForTypes(namedOnlyTypes)),
	})

	go s.changes.run(ctx)
	served := make(chan error, 1)
	go func() { served <- grpcServer.Serve(lis) }()
	s.log.Info("serving xDS", "address", lis.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("xds: serve: %w", err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() {
		grpcServer.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(gracefulStopWait):
		grpcServer.Stop()
		<-stopped
	}
	<-served
	s.log.Info("stopped serving xDS")
	return nil
}

func defaultServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: serverPingInterval, Timeout: serverPingTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: clientMinPingTime, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(maxRecvMessageSize),
		grpc.ChainStreamInterceptor(kickable),
	}
}

// adsService serves both kinds of ADS from the one snapshot cache: incremental (delta),
// which the bootstraps ask for, and state of the world.
type adsService struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	sotw  sotw.Server
	delta delta.Server
}

func (a adsService) StreamAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return a.sotw.StreamHandler(stream, resource.AnyType)
}

func (a adsService) DeltaAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return a.delta.DeltaStreamHandler(stream, resource.AnyType)
}

// nodeHash keys snapshots by node.cluster, the Gateway's "<namespace>/<name>", so every
// Envoy of a Gateway's fleet shares one snapshot.
type nodeHash struct{}

func (nodeHash) ID(node *corev3.Node) string { return node.GetCluster() }

func validGateway(gateway string) error {
	ns, name, ok := strings.Cut(gateway, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("gateway %q is not <namespace>/<name>", gateway)
	}
	return nil
}

// cacheLogger routes go-control-plane's log to logr. Its messages name types, versions
// and resource names, never contents.
type cacheLogger struct{ log logr.Logger }

func (l cacheLogger) Debugf(format string, args ...any) { l.at(2, format, args) }
func (l cacheLogger) Infof(format string, args ...any)  { l.at(1, format, args) }
func (l cacheLogger) Warnf(format string, args ...any)  { l.at(1, format, args) }
func (l cacheLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Errorf(format, args...), "go-control-plane")
}

func (l cacheLogger) at(level int, format string, args []any) {
	if v := l.log.V(level); v.Enabled() {
		v.Info(fmt.Sprintf(format, args...))
	}
}
