package envoyconfig

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// flakyUpstream answers each request path with ?status for its first ?fail requests,
// then 200.
func flakyUpstream() http.Handler {
	var mu sync.Mutex
	seen := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		fail, _ := strconv.Atoi(r.URL.Query().Get("fail"))
		if n <= fail {
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			w.WriteHeader(status)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// TestRetryDataPath proves HTTPRoute retries with a real Envoy: a listed status is
// retried up to the attempts and no further, an unlisted one is not retried, and a
// connection that cannot be made is retried on another address.
func TestRetryDataPath(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	up := httptest.NewServer(flakyUpstream())
	t.Cleanup(up.Close)
	live := netip.MustParseAddrPort(strings.TrimPrefix(up.URL, "http://"))
	port, closed := freePort(t), freePort(t)
	route := func(path, cluster string, retry *ir.Retry) ir.Route {
		return ir.Route{Name: "apps/retried" + path + "/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: path},
			Backends: []ir.WeightedCluster{{Cluster: cluster, Weight: 1}}, Retry: retry}
	}
	cluster := func(name string, endpoints ...ir.Endpoint) *ir.Cluster {
		return &ir.Cluster{Name: "backend/apps/" + name + "/80", Protocol: ir.ProtocolHTTP1, Endpoints: endpoints,
			Origin: ir.ClusterOrigin{Kind: ir.OriginBackend, Namespace: "apps", Name: name, Port: 80}}
	}
	liveEndpoint := ir.Endpoint{Address: live.Addr().String(), Port: uint32(live.Port())}
	gw := ir.Gateway{
		Name: "gw/egress",
		Listeners: []ir.Listener{{Name: "http", Port: port, VirtualHosts: []ir.VirtualHost{{Name: "any", Domains: []string{"*"}, Routes: []ir.Route{
			route("/codes", "backend/apps/api/80", &ir.Retry{Codes: []uint32{500}, Attempts: 2}),
			route("/none", "backend/apps/api/80", nil),
			route("/connect", "backend/apps/half/80", &ir.Retry{Attempts: 1}),
		}}}}},
		Clusters: []*ir.Cluster{
			cluster("api", liveEndpoint),
			// One address refuses connections: only a retry reaches the other every time.
			cluster("half", ir.Endpoint{Address: "127.0.0.1", Port: closed}, liveEndpoint),
		},
	}
	runEnvoy(t, envoy, staticBootstrapFile(t, gw, Options{}))
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	waitReady(t, base+"/codes/ready")

	tests := []struct {
		name, path string
		want       int
	}{
		{"two 500s are retried within two attempts", "/codes/a?status=500&fail=2", 200},
		{"three 500s exceed two attempts", "/codes/b?status=500&fail=3", 500},
		{"a 503 is not among the codes", "/codes/c?status=503&fail=1", 503},
		{"a route without retry returns the first 500", "/none/d?status=500&fail=1", 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
			}
		})
	}
	t.Run("a refused connection is retried on the other address", func(t *testing.T) {
		for i := range 10 {
			resp, err := http.Get(base + "/connect/" + strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %d, want 200 (the retry goes to the live address)", i, resp.StatusCode)
			}
		}
	})
}
