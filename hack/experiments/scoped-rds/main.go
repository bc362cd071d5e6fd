// Command scoped-rds measures how long Envoy 1.40 takes to serve one more hostname
// when N are present, two ways: A, one RouteConfiguration of N virtual hosts (as
// Portcullis programs an HTTP listener today), sent again whole; B, Scoped RDS, one
// scope keyed on the Host header and one small RouteConfiguration per hostname, of
// which only the new pair is sent. Both go over delta ADS from go-control-plane's
// SnapshotCache. It is an experiment, not part of the product or of `make test`: a
// module of its own, run by hand (README.md beside it has the results).
//
//	go run . -mode=rds    -n=10000 -tries=20
//	go run . -mode=scoped -n=10000 -tries=20 -prehash
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	accesslog "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	fileal "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	routerf "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

var (
	flagMode     = flag.String("mode", "scoped", "rds (A: one RouteConfiguration with N vhosts) or scoped (B: N scopes + N RouteConfigurations)")
	flagN        = flag.Int("n", 10000, "number of hostnames loaded before the tries")
	flagTries    = flag.Int("tries", 20, "number of 'one more hostname' tries")
	flagEnvoy    = flag.String("envoy", "../../../bin/envoy-1.40.0", "Envoy binary (the Makefile installs it in bin/)")
	flagBaseID   = flag.Int("base-id", 7311, "envoy --base-id")
	flagDebug    = flag.Bool("envoy-debug", false, "run envoy with --component-log-level config:debug and parse accept times")
	flagStrip    = flag.Bool("normalize-host", false, "set HCM strip_any_host_port=true and strip_trailing_host_dot=true")
	flagProbe    = flag.Bool("probe", true, "after the tries, probe unmatched host / host:port / wildcard behaviour")
	flagPrehash  = flag.Bool("prehash", false, "precompute per-resource version hashes incrementally and set Snapshot.VersionMap (avoids SnapshotCache re-hashing every resource on every SetSnapshot)")
	flagGap      = flag.Duration("gap", 300*time.Millisecond, "pause between tries")
	flagPoll     = flag.Duration("poll", 5*time.Millisecond, "poll interval")
	flagInitWait = flag.Duration("init-timeout", 5*time.Minute, "timeout for the initial load")
)

const nodeID = "srds-bench"

var (
	dir                                 string
	xdsPort, lisPort, upPort, adminPort int
	envoyCmd                            *exec.Cmd
	cleanupOnce                         sync.Once
)

func host(i int) string { return fmt.Sprintf("h%d.bench.example", i) }

func cleanup() {
	cleanupOnce.Do(func() {
		if envoyCmd != nil && envoyCmd.Process != nil {
			_ = envoyCmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _, _ = envoyCmd.Process.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				_ = envoyCmd.Process.Kill()
			}
		}
	})
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "FATAL: "+format+"\n", a...)
	cleanup()
	os.Exit(1)
}

// ---------- ports ----------

func pickPorts(k int) []int {
	used := map[int]bool{}
	var out []int
	for len(out) < k {
		p := 20000 + rand.Intn(10000)
		if used[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		used[p] = true
		out = append(out, p)
	}
	return out
}

// ---------- xDS resources ----------

func adsSource() *core.ConfigSource {
	return &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
	}
}

func backendCluster() *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 "backend",
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(time.Second),
		LoadAssignment: &endpoint.ClusterLoadAssignment{
			ClusterName: "backend",
			Endpoints: []*endpoint.LocalityLbEndpoints{{
				LbEndpoints: []*endpoint.LbEndpoint{{
					HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
						Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
							Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(upPort)},
						}}},
					}},
				}},
			}},
		},
	}
}

func routeToBackend() *route.Route {
	return &route.Route{
		Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/"}},
		Action: &route.Route_Route{Route: &route.RouteAction{
			ClusterSpecifier: &route.RouteAction_Cluster{Cluster: "backend"},
		}},
	}
}

func httpListener(scoped bool) *listener.Listener {
	routerAny, _ := anypb.New(&routerf.Router{})
	alAny, _ := anypb.New(&fileal.FileAccessLog{
		Path: filepath.Join(dir, "access.log"),
		AccessLogFormat: &fileal.FileAccessLog_LogFormat{LogFormat: &core.SubstitutionFormatString{
			Format: &core.SubstitutionFormatString_TextFormatSource{TextFormatSource: &core.DataSource{
				Specifier: &core.DataSource_InlineString{InlineString: "%START_TIME% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% authority=%REQ(:AUTHORITY)%\n"},
			}},
		}},
	})
	m := &hcm.HttpConnectionManager{
		StatPrefix:  "ingress",
		CodecType:   hcm.HttpConnectionManager_AUTO,
		HttpFilters: []*hcm.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: routerAny}}},
		AccessLog: []*accesslog.AccessLog{{
			Name: "envoy.access_loggers.file",
			// log only requests with any response flag set (e.g. NR) - keeps the 200 polls out
			Filter:     &accesslog.AccessLogFilter{FilterSpecifier: &accesslog.AccessLogFilter_ResponseFlagFilter{ResponseFlagFilter: &accesslog.ResponseFlagFilter{}}},
			ConfigType: &accesslog.AccessLog_TypedConfig{TypedConfig: alAny},
		}},
	}
	if *flagStrip {
		m.StripPortMode = &hcm.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true}
		m.StripTrailingHostDot = true
	}
	if scoped {
		m.RouteSpecifier = &hcm.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcm.ScopedRoutes{
			Name: "bench-scopes",
			ScopeKeyBuilder: &hcm.ScopedRoutes_ScopeKeyBuilder{Fragments: []*hcm.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder{{
				Type: &hcm.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder_HeaderValueExtractor_{
					HeaderValueExtractor: &hcm.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder_HeaderValueExtractor{
						Name:             ":authority",
						ElementSeparator: ":",
						ExtractType:      &hcm.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder_HeaderValueExtractor_Index{Index: 0},
					},
				},
			}}},
			RdsConfigSource: adsSource(),
			ConfigSpecifier: &hcm.ScopedRoutes_ScopedRds{ScopedRds: &hcm.ScopedRds{ScopedRdsConfigSource: adsSource()}},
		}}
	} else {
		m.RouteSpecifier = &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{ConfigSource: adsSource(), RouteConfigName: "routes"}}
	}
	hcmAny, err := anypb.New(m)
	if err != nil {
		fatalf("hcm any: %v", err)
	}
	return &listener.Listener{
		Name: "http",
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(lisPort)},
		}}},
		FilterChains: []*listener.FilterChain{{Filters: []*listener.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listener.Filter_TypedConfig{TypedConfig: hcmAny},
		}}}},
	}
}

// model: the set of hostnames (scope keys) published
type model struct {
	scoped bool
	hosts  []string // index i -> hostname / scope key
	lis    *listener.Listener
	cl     *cluster.Cluster
	// cached per-host resources for scoped mode so we don't rebuild them every snapshot
	scopes []types.Resource
	rcs    []types.Resource
	// cached vhosts for rds mode
	vhosts []*route.VirtualHost
	// incremental version map (only with -prehash)
	vmap map[string]map[string]string
}

func (m *model) hash(r types.Resource) {
	if !*flagPrehash {
		return
	}
	if m.vmap == nil {
		m.vmap = map[string]map[string]string{}
	}
	b, err := cachev3.MarshalResource(r)
	if err != nil {
		fatalf("marshal: %v", err)
	}
	var turl string
	switch r.(type) {
	case *listener.Listener:
		turl = resource.ListenerType
	case *cluster.Cluster:
		turl = resource.ClusterType
	case *route.RouteConfiguration:
		turl = resource.RouteType
	case *route.ScopedRouteConfiguration:
		turl = resource.ScopedRouteType
	}
	if m.vmap[turl] == nil {
		m.vmap[turl] = map[string]string{}
	}
	m.vmap[turl][cachev3.GetResourceName(r)] = cachev3.HashResource(b)
}

func (m *model) add(h string) {
	i := len(m.hosts)
	m.hosts = append(m.hosts, h)
	if m.scoped {
		m.scopes = append(m.scopes, &route.ScopedRouteConfiguration{
			Name:                   fmt.Sprintf("scope-%d", i),
			RouteConfigurationName: fmt.Sprintf("rc-%d", i),
			Key: &route.ScopedRouteConfiguration_Key{Fragments: []*route.ScopedRouteConfiguration_Key_Fragment{{
				Type: &route.ScopedRouteConfiguration_Key_Fragment_StringKey{StringKey: h},
			}}},
		})
		m.rcs = append(m.rcs, &route.RouteConfiguration{
			Name: fmt.Sprintf("rc-%d", i),
			VirtualHosts: []*route.VirtualHost{{
				Name: "vh", Domains: []string{"*"}, Routes: []*route.Route{routeToBackend()},
			}},
		})
		m.hash(m.rcs[len(m.rcs)-1])
	} else {
		m.vhosts = append(m.vhosts, &route.VirtualHost{
			Name: fmt.Sprintf("vh-%d", i), Domains: []string{h}, Routes: []*route.Route{routeToBackend()},
		})
	}
}

var snapVersion int

func (m *model) snapshot() *cachev3.Snapshot {
	snapVersion++
	res := map[resource.Type][]types.Resource{
		resource.ListenerType: {m.lis},
		resource.ClusterType:  {m.cl},
	}
	if m.scoped {
		res[resource.ScopedRouteType] = append([]types.Resource(nil), m.scopes...)
		res[resource.RouteType] = append([]types.Resource(nil), m.rcs...)
	} else {
		vh := append([]*route.VirtualHost(nil), m.vhosts...)
		rc := &route.RouteConfiguration{Name: "routes", VirtualHosts: vh}
		m.hash(rc)
		res[resource.RouteType] = []types.Resource{rc}
	}
	s, err := cachev3.NewSnapshot(strconv.Itoa(snapVersion), res)
	if err != nil {
		fatalf("snapshot: %v", err)
	}
	if *flagPrehash {
		m.hash(m.lis)
		m.hash(m.cl)
		s.VersionMap = make(map[string]map[string]string, len(m.vmap))
		for t, mm := range m.vmap {
			c := make(map[string]string, len(mm))
			for k, v := range mm {
				c[k] = v
			}
			s.VersionMap[t] = c
		}
	}
	return s
}

// ---------- send-time tracking (callback) ----------

type sendTracker struct {
	mu      sync.Mutex
	watch   map[string]bool // resource names to look for
	first   map[string]time.Time
	nacks   []string
	nresp   int
	bytesTx int
}

func (t *sendTracker) arm(names ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watch = map[string]bool{}
	t.first = map[string]time.Time{}
	for _, n := range names {
		t.watch[n] = true
	}
}

func (t *sendTracker) get(n string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first[n]
}

func (t *sendTracker) onResp(_ int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nresp++
	for _, r := range resp.Resources {
		if t.watch[r.Name] {
			if _, ok := t.first[r.Name]; !ok {
				t.first[r.Name] = now
			}
		}
	}
}

func (t *sendTracker) onReq(_ int64, req *discovery.DeltaDiscoveryRequest) error {
	if req.ErrorDetail != nil {
		t.mu.Lock()
		msg := fmt.Sprintf("NACK %s: %s", req.TypeUrl, req.ErrorDetail.Message)
		t.nacks = append(t.nacks, msg)
		t.mu.Unlock()
		fmt.Fprintln(os.Stderr, msg)
	}
	return nil
}

// ---------- envoy ----------

func writeBootstrap() string {
	b := fmt.Sprintf(`node: {id: %s, cluster: bench}
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: %d}}
dynamic_resources:
  ads_config:
    api_type: DELTA_GRPC
    transport_api_version: V3
    set_node_on_first_message_only: true
    grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]
  lds_config: {ads: {}, resource_api_version: V3}
  cds_config: {ads: {}, resource_api_version: V3}
static_resources:
  clusters:
  - name: xds_cluster
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: xds_cluster
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
`, nodeID, adminPort, xdsPort)
	p := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
		fatalf("write bootstrap: %v", err)
	}
	return p
}

func startEnvoy(bootstrap string) {
	args := []string{"--concurrency", "1", "--base-id", strconv.Itoa(*flagBaseID), "-c", bootstrap, "--log-level", "warn", "--file-flush-interval-msec", "200",
		"--log-format", "[%Y-%m-%d %T.%f][%l][%n] %v"}
	if *flagDebug {
		args = append(args, "--component-log-level", "config:debug")
	}
	envoyCmd = exec.Command(*flagEnvoy, args...)
	lf, err := os.Create(filepath.Join(dir, "envoy.log"))
	if err != nil {
		fatalf("%v", err)
	}
	envoyCmd.Stdout = lf
	envoyCmd.Stderr = lf
	if err := envoyCmd.Start(); err != nil {
		fatalf("start envoy: %v", err)
	}
	fmt.Printf("envoy pid %d: %s %s\n", envoyCmd.Process.Pid, *flagEnvoy, strings.Join(args, " "))
}

func rssKB() int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", envoyCmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	return -1
}

// ---------- HTTP probing ----------

var client = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true},
}

func get(h string) int {
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", lisPort), nil)
	req.Host = h
	resp, err := client.Do(req)
	if err != nil {
		return -1
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func waitAll200(hosts []string, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	pending := append([]string(nil), hosts...)
	for time.Now().Before(deadline) {
		var still []string
		for _, h := range pending {
			if get(h) != 200 {
				still = append(still, h)
			}
		}
		if len(still) == 0 {
			return time.Now(), true
		}
		pending = still
		time.Sleep(*flagPoll)
	}
	return time.Now(), false
}

// ---------- envoy debug-log parsing (optional) ----------

var logTS = regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6})\]`)

type logReader struct {
	f   *os.File
	off int64
}

// newLines returns the lines appended to envoy.log since the previous call.
func (lr *logReader) newLines() []string {
	if lr.f == nil {
		f, err := os.Open(filepath.Join(dir, "envoy.log"))
		if err != nil {
			return nil
		}
		lr.f = f
	}
	lr.f.Seek(lr.off, io.SeekStart)
	var out []string
	r := bufio.NewReaderSize(lr.f, 1<<20)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			break
		}
		lr.off += int64(len(l))
		out = append(out, strings.TrimRight(l, "\n"))
	}
	return out
}

func parseTS(l string) (time.Time, bool) {
	m := logTS.FindStringSubmatch(l)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05.000000", m[1], time.Local)
	return t, err == nil
}

// ---------- stats ----------

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := int(float64(len(s)-1)*p + 0.5)
	return s[idx]
}

func ms(d time.Duration) string { return fmt.Sprintf("%7.1f", float64(d.Microseconds())/1000) }

// ---------- main ----------

func main() {
	flag.Parse()
	rand.Seed(time.Now().UnixNano())
	scoped := false
	switch *flagMode {
	case "scoped", "B", "b":
		scoped = true
	case "rds", "A", "a":
	default:
		fatalf("bad -mode %q", *flagMode)
	}
	if _, err := os.Stat(*flagEnvoy); err != nil {
		fatalf("envoy binary: %v", err)
	}
	var err error
	dir, err = os.MkdirTemp("", "scoped-rds-"+*flagMode+"-")
	if err != nil {
		fatalf("%v", err)
	}
	ps := pickPorts(4)
	xdsPort, lisPort, upPort, adminPort = ps[0], ps[1], ps[2], ps[3]
	fmt.Printf("mode=%s n=%d tries=%d prehash=%v dir=%s ports xds=%d listener=%d upstream=%d admin=%d\n",
		*flagMode, *flagN, *flagTries, *flagPrehash, dir, xdsPort, lisPort, upPort, adminPort)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; fatalf("signal") }()
	defer cleanup()

	// upstream
	upL, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", upPort))
	if err != nil {
		fatalf("upstream listen: %v", err)
	}
	go http.Serve(upL, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))

	// xDS
	ctx := context.Background()
	snapCache := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	tr := &sendTracker{}
	tr.arm()
	cbs := serverv3.CallbackFuncs{StreamDeltaResponseFunc: tr.onResp, StreamDeltaRequestFunc: tr.onReq}
	srv := serverv3.NewServer(ctx, snapCache, cbs)
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(256<<20))
	discovery.RegisterAggregatedDiscoveryServiceServer(gs, srv)
	xl, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", xdsPort))
	if err != nil {
		fatalf("xds listen: %v", err)
	}
	go gs.Serve(xl)

	m := &model{scoped: scoped}
	m.lis = httpListener(scoped)
	m.cl = backendCluster()
	// start with zero hostnames so Envoy boots, then load N as one publish
	if err := snapCache.SetSnapshot(ctx, nodeID, m.snapshot()); err != nil {
		fatalf("set snapshot: %v", err)
	}
	startEnvoy(writeBootstrap())
	// wait until the listener answers (404, no hosts yet)
	bootDeadline := time.Now().Add(30 * time.Second)
	for get("nobody.bench.example") != 404 {
		if time.Now().After(bootDeadline) {
			fatalf("envoy listener not up; see %s/envoy.log", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	rss0 := rssKB()
	lr := &logReader{}
	lr.newLines()

	// ---- initial load of N ----
	N := *flagN
	tBuild := time.Now() // "publish" starts when the control plane starts building the new state
	for i := 0; i < N; i++ {
		m.add(host(i))
	}
	snap := m.snapshot()
	tPub := time.Now()
	if err := snapCache.SetSnapshot(ctx, nodeID, snap); err != nil {
		fatalf("set snapshot: %v", err)
	}
	tSet := time.Now()
	probe := []string{host(N - 1), host(0), host(N / 2)}
	t200, ok := waitAll200(probe, *flagInitWait)
	if !ok {
		fatalf("initial load did not finish; see %s/envoy.log", dir)
	}
	initLoad := t200.Sub(tBuild)
	fmt.Printf("initial load of %d: build snapshot %s ms, SetSnapshot %s ms, build-start->200 (first/mid/last host) %s ms\n",
		N, ms(tPub.Sub(tBuild)), ms(tSet.Sub(tPub)), ms(initLoad))
	// verify a random sample
	var sample []string
	for i := 0; i < 200; i++ {
		sample = append(sample, host(rand.Intn(N)))
	}
	if _, ok := waitAll200(sample, 60*time.Second); !ok {
		fatalf("random sample of hosts not all 200")
	}
	time.Sleep(2 * time.Second)
	rss1 := rssKB()
	fmt.Printf("RSS: before load %d MiB, after loading %d: %d MiB\n", rss0/1024, N, rss1/1024)
	lr.newLines()

	// ---- tries ----
	type tryRes struct {
		total, setSnap, sendTo200, envoyAccept time.Duration
		polls                                  int
	}
	var results []tryRes
	for t := 0; t < *flagTries; t++ {
		i := len(m.hosts)
		h := host(i)
		if get(h) != 404 {
			fatalf("host %s already routable before publish", h)
		}
		tPub := time.Now() // includes building the snapshot (and hashing, with -prehash)
		m.add(h)
		var key string
		if scoped {
			key = fmt.Sprintf("scope-%d", i)
			tr.arm(key, fmt.Sprintf("rc-%d", i))
		} else {
			key = "routes"
			tr.arm(key)
		}
		snap := m.snapshot()
		if err := snapCache.SetSnapshot(ctx, nodeID, snap); err != nil {
			fatalf("set snapshot: %v", err)
		}
		tSet := time.Now()
		polls := 0
		deadline := tPub.Add(30 * time.Second)
		var t200 time.Time
		for {
			polls++
			if get(h) == 200 {
				t200 = time.Now()
				break
			}
			if time.Now().After(deadline) {
				fatalf("try %d: %s not 200 after 30s", t, h)
			}
			time.Sleep(*flagPoll)
		}
		r := tryRes{total: t200.Sub(tPub), setSnap: tSet.Sub(tPub), polls: polls}
		if ts := tr.get(key); !ts.IsZero() {
			r.sendTo200 = t200.Sub(ts)
		}
		if *flagDebug {
			// last "accepted"/"loaded" config line for route types in the log since the previous try
			var last time.Time
			for _, l := range lr.newLines() {
				ll := strings.ToLower(l)
				if strings.Contains(ll, "delta config for type.googleapis.com/envoy.config.route.v3.routeconfiguration accepted") {
					if ts, ok := parseTS(l); ok && ts.After(last) {
						last = ts
					}
				}
			}
			if !last.IsZero() {
				r.envoyAccept = last.Sub(tPub)
			}
		}
		results = append(results, r)
		extra := ""
		if scoped {
			if a, b := tr.get(key), tr.get(fmt.Sprintf("rc-%d", i)); !a.IsZero() && !b.IsZero() {
				extra = fmt.Sprintf(" scope-sent->rc-sent %s ms", ms(b.Sub(a)))
			}
		}
		fmt.Printf("try %2d host=%s publish->200 %s ms  build+SetSnapshot %s ms  first-send->200 %s ms  envoy-log RDS-accepted %s ms polls=%d%s\n",
			t, h, ms(r.total), ms(r.setSnap), ms(r.sendTo200), ms(r.envoyAccept), polls, extra)
		time.Sleep(*flagGap)
	}
	rss2 := rssKB()

	var tot, set, s2, acc []time.Duration
	for _, r := range results {
		acc = append(acc, r.envoyAccept)
		tot = append(tot, r.total)
		set = append(set, r.setSnap)
		s2 = append(s2, r.sendTo200)
	}
	fmt.Printf("\n=== RESULTS mode=%s n=%d tries=%d prehash=%v debuglog=%v ===\n", *flagMode, N, len(results), *flagPrehash, *flagDebug)
	fmt.Printf("%-28s %8s %8s %8s\n", "metric (ms)", "p50", "p95", "max")
	fmt.Printf("%-28s %s %s %s\n", "publish->200", ms(pct(tot, .5)), ms(pct(tot, .95)), ms(pct(tot, 1)))
	fmt.Printf("%-28s %s %s %s\n", "  build+SetSnapshot (Go)", ms(pct(set, .5)), ms(pct(set, .95)), ms(pct(set, 1)))
	fmt.Printf("%-28s %s %s %s\n", "  first xDS send->200", ms(pct(s2, .5)), ms(pct(s2, .95)), ms(pct(s2, 1)))
	if *flagDebug {
		fmt.Printf("%-28s %s %s %s\n", "  publish->Envoy RDS accepted", ms(pct(acc, .5)), ms(pct(acc, .95)), ms(pct(acc, 1)))
	}
	fmt.Printf("initial load %d: publish->200 %s ms; RSS before %d MiB, after load %d MiB, after tries %d MiB\n",
		N, ms(initLoad), rss0/1024, rss1/1024, rss2/1024)
	tr.mu.Lock()
	fmt.Printf("NACKs: %d %v\n", len(tr.nacks), tr.nacks)
	tr.mu.Unlock()

	if *flagProbe {
		runProbes(ctx, snapCache, m)
	}
	// envoy warnings/errors
	b, _ := os.ReadFile(filepath.Join(dir, "envoy.log"))
	nerr := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "][warning][") || strings.Contains(l, "][error][") || strings.Contains(l, "][critical][") {
			if nerr < 10 {
				fmt.Println("envoy:", l)
			}
			nerr++
		}
	}
	fmt.Printf("envoy warning/error lines: %d\n", nerr)
}

func runProbes(ctx context.Context, c cachev3.SnapshotCache, m *model) {
	fmt.Println("\n=== probes ===")
	try := func(h string) {
		code := get(h)
		flags := "(no access-log line: no response flag set)"
		// access log (filtered to requests with a response flag) is flushed ~every 1s
		for w := 0; w < 30 && strings.HasPrefix(flags, "("); w++ {
			time.Sleep(100 * time.Millisecond)
			b, _ := os.ReadFile(filepath.Join(dir, "access.log"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			for i := len(lines) - 1; i >= 0; i-- {
				if strings.HasSuffix(lines[i], "authority="+h) {
					flags = lines[i]
					break
				}
			}
		}
		fmt.Printf("Host %-28q -> %d   accesslog: %s\n", h, code, flags)
	}
	try("nomatch.bench.example")
	try(host(0) + ":80")
	try(host(0) + ":25000")
	try(strings.ToUpper(host(0)))
	try(host(0) + ".")
	if m.scoped {
		// wildcard-looking scope keys are literal strings; show it
		m.add("*.wild.example")
		m.add("*")
		m.add("")
		if err := c.SetSnapshot(ctx, nodeID, m.snapshot()); err != nil {
			fmt.Println("set snapshot:", err)
		}
		time.Sleep(1500 * time.Millisecond)
		try("a.wild.example")
		try("*.wild.example")
		try("other.example")
		try("*")
	}
}
