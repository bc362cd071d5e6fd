package envoyconfig

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// TestMirrorDataPath proves RequestMirror with a real Envoy: the client gets the main
// upstream's answer, and the mirror receives a copy of each request, its answer dropped.
func TestMirrorDataPath(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	var copies atomic.Int32
	main := httptest.NewServer(echoHandler("main"))
	t.Cleanup(main.Close)
	shadow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/mirrored/") {
			copies.Add(1)
		}
		w.WriteHeader(http.StatusTeapot) // never reaches the client
	}))
	t.Cleanup(shadow.Close)
	endpoint := func(s *httptest.Server) ir.Endpoint {
		a := netip.MustParseAddrPort(strings.TrimPrefix(s.URL, "http://"))
		return ir.Endpoint{Address: a.Addr().String(), Port: uint32(a.Port())}
	}
	cluster := func(name string, s *httptest.Server) *ir.Cluster {
		return &ir.Cluster{Name: "service/apps/" + name + "/80", Protocol: ir.ProtocolHTTP1, Endpoints: []ir.Endpoint{endpoint(s)},
			Origin: ir.ClusterOrigin{Kind: ir.OriginService, Namespace: "apps", Name: name, Port: 80}}
	}
	port := freePort(t)
	gw := ir.Gateway{
		Name: "gw/egress",
		Listeners: []ir.Listener{{Name: "http", Port: port, VirtualHosts: []ir.VirtualHost{{Name: "any", Domains: []string{"*"}, Routes: []ir.Route{{
			Name: "apps/mirrored/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"},
			Backends: []ir.WeightedCluster{{Cluster: "service/apps/main/80", Weight: 1}},
			Mirrors:  []ir.Mirror{{Cluster: "service/apps/shadow/80", Numerator: 1, Denominator: 1}},
		}}}}}},
		Clusters: []*ir.Cluster{cluster("main", main), cluster("shadow", shadow)},
	}
	runEnvoy(t, envoy, staticBootstrapFile(t, gw, Options{}))
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	waitReady(t, base+"/ready")

	const n = 5
	for i := range n {
		resp, err := http.Get(base + "/mirrored/" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d, want the main upstream's 200 (the mirror's 418 is dropped)", i, resp.StatusCode)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for copies.Load() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := copies.Load(); got != n {
		t.Fatalf("the mirror received %d copies, want %d", got, n)
	}
}
