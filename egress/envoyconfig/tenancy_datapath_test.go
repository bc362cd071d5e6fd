package envoyconfig

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// Callers of the tenancy data-path test, by loopback source address.
const (
	callerA        = "127.0.0.11" // team-a/client-a
	callerB        = "127.0.0.12" // team-b/client-b
	callerNoRoutes = "127.0.0.13" // team-c/idle: a known pod whose namespace has no route
	callerUnknown  = "127.0.0.14" // no pod
	callerHost     = "127.0.0.1"  // unrestricted
)

// tenancySecret is team-a's injected credential: it must reach team-a's upstream and
// appear in no log line.
const tenancySecret = "Bearer tenancy-secret-9c1e"

// tenancyGateway is a listener isolating team-a and team-b, who both route
// api.example.com, each to its own upstream; team-a's Backend injects a credential,
// and its /down route goes to a port nothing listens on.
func tenancyGateway(port, closedPort uint32, a, b *httptest.Server) ir.Gateway {
	route := func(ns string) ir.Route {
		return ir.Route{Name: ns + "/api/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"},
			Backends: []ir.WeightedCluster{{Cluster: "backend/" + ns + "/api/80", Weight: 1}}}
	}
	host := func(routes ...ir.Route) []ir.VirtualHost {
		return []ir.VirtualHost{{Name: "api", Domains: []string{"api.example.com"}, Routes: routes}}
	}
	// team-a's "paths" host serves /v1 only: its other paths reach the table's catch-all,
	// which the "/" routes of "api" leave out (appendReachable).
	paths := ir.VirtualHost{Name: "paths", Domains: []string{"paths.example.com"}, Routes: []ir.Route{{
		Name: "team-a/paths/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/v1"},
		Backends: []ir.WeightedCluster{{Cluster: "backend/team-a/api/80", Weight: 1}},
	}}}
	cluster := func(ns string, s *httptest.Server) *ir.Cluster {
		addr := netip.MustParseAddrPort(strings.TrimPrefix(s.URL, "http://"))
		return &ir.Cluster{Name: "backend/" + ns + "/api/80", Protocol: ir.ProtocolHTTP1, Endpoints: []ir.Endpoint{{Address: addr.Addr().String(), Port: uint32(addr.Port())}},
			Origin: ir.ClusterOrigin{Kind: "Backend", Namespace: ns, Name: "api", Port: 80}}
	}
	down := ir.Route{Name: "team-a/down/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/down"},
		Backends: []ir.WeightedCluster{{Cluster: "backend/team-a/down/80", Weight: 1}}}
	withCredential := cluster("team-a", a)
	withCredential.Credential = &ir.Credential{Header: "Authorization", Secret: "generic/team-a/token/token"}
	return ir.Gateway{
		Name: "egress-gateway/egress",
		Listeners: []ir.Listener{{
			Name: "http", Port: port, Isolated: true, AccessLog: true,
			VirtualHosts: append(host(down, route("team-a"), route("team-b")), paths),
			Tenants:      []ir.Tenant{{Namespace: "team-a", VirtualHosts: append(host(down, route("team-a")), paths)}, {Namespace: "team-b", VirtualHosts: host(route("team-b"))}},
			Callers: []ir.Caller{
				{Prefix: callerHost + "/32", Unrestricted: true},
				{Prefix: callerA + "/32", Namespace: "team-a", Pod: "client-a", ServiceAccount: "sa-a"},
				{Prefix: callerB + "/32", Namespace: "team-b", Pod: "client-b", ServiceAccount: "sa-b"},
				{Prefix: callerNoRoutes + "/32", Namespace: "team-c", Pod: "idle", ServiceAccount: "default"},
			},
		}},
		Clusters: []*ir.Cluster{
			withCredential, cluster("team-b", b),
			{Name: "backend/team-a/down/80", Protocol: ir.ProtocolHTTP1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: closedPort}}},
		},
		Secrets: []ir.Secret{{Name: "generic/team-a/token/token", Kind: ir.SecretGeneric, Value: []byte(tenancySecret)}},
	}
}

// TestTenantIsolationDataPath proves the isolated listener with a real Envoy: each
// caller reaches only its own namespace's route for a hostname both tenants use,
// callers without a route or identity get 403 naming the reason, the unrestricted
// caller gets the shared table, and the audit log names who called what.
func TestTenantIsolationDataPath(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	a, b := httptest.NewServer(echoHandler("a")), httptest.NewServer(echoHandler("b"))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	port, closedPort := freePort(t), freePort(t)
	audit := runEnvoyAudit(t, envoy, staticBootstrapFile(t, tenancyGateway(port, closedPort, a, b), Options{}))
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	waitReady(t, base+"/")

	tests := []struct {
		name, from, host string
		wantStatus       int
		wantBody         string // the upstream's name, or the start of the body
	}{
		{"team-a reaches its own route", callerA, "api.example.com", 200, `"upstream":"a"`},
		{"team-b reaches its own route for the same hostname", callerB, "api.example.com", 200, `"upstream":"b"`},
		{"a hostname team-a has no route for is refused", callerA, "other.example.com", 403, "denied: no route for caller\n"},
		{"a path of team-a's host that its route serves", callerA, "paths.example.com/v1", 200, `"upstream":"a"`},
		{"a path of team-a's host that no route of it serves is refused", callerA, "paths.example.com/v2", 403, "denied: no route for caller\n"},
		{"team-b is refused team-a's host", callerB, "paths.example.com/v1", 403, "denied: no route for caller\n"},
		{"a pod whose namespace has no route is refused", callerNoRoutes, "api.example.com", 403, "denied: no route for caller\n"},
		{"an address no pod holds is refused", callerUnknown, "api.example.com", 403, "denied: unknown caller\n"},
		{"the unrestricted caller gets the shared table", callerHost, "api.example.com", 200, `"upstream":"a"`},
		{"an upstream that refuses the connection is a 503", callerA, "api.example.com/down", 503, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, path, _ := strings.Cut(tc.host, "/")
			status, body := getFrom(t, tc.from, base+"/"+path, host)
			if status != tc.wantStatus || !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("from %s Host %s: %d %q, want %d with %q", tc.from, tc.host, status, body, tc.wantStatus, tc.wantBody)
			}
		})
	}

	lines := audit.waitFor(t, len(tests)+1) // and waitReady's request
	wantAudit := []struct {
		from, decision string
		fields         map[string]string
	}{
		{callerA, "allowed", map[string]string{"caller.namespace": "team-a", "caller.pod": "client-a", "caller.serviceAccount": "sa-a", "route": "team-a/api", "backend": "team-a/api", "responseCode": "200", "gateway": "egress-gateway/egress", "listener": "http", "log": auditLogVersion}},
		{callerA, DecisionNoRouteForCaller, map[string]string{"caller.namespace": "team-a", "route": "", "upstream": "", "responseCode": "403"}},
		{callerA, "allowed", map[string]string{"route": "team-a/paths", "responseCode": "200"}},
		{callerB, DecisionNoRouteForCaller, map[string]string{"caller.namespace": "team-b", "caller.pod": "client-b", "route": "", "responseCode": "403"}},
		{callerB, "allowed", map[string]string{"caller.namespace": "team-b", "caller.pod": "client-b", "caller.serviceAccount": "sa-b", "route": "team-b/api", "backend": "team-b/api"}},
		{callerNoRoutes, DecisionNoRouteForCaller, map[string]string{"caller.namespace": "team-c", "caller.pod": "idle", "responseCode": "403", "upstream": ""}},
		{callerUnknown, DecisionUnknownCaller, map[string]string{"caller.namespace": "unknown", "caller.pod": "unknown", "caller.serviceAccount": "unknown", "responseCode": "403"}},
		{callerHost, "allowed", map[string]string{"caller.namespace": "(host)", "route": "team-a/api"}},
		{callerA, "allowed", map[string]string{"route": "team-a/down", "responseCode": "503", "upstream": fmt.Sprintf("127.0.0.1:%d", closedPort)}},
	}
	for _, w := range wantAudit {
		line := audit.find(t, lines, w.from, w.decision, w.fields["route"], w.fields["responseCode"])
		for path, want := range w.fields {
			if got := field(line, path); got != want {
				t.Errorf("audit line of %s (%s): %s = %q, want %q\n%v", w.from, w.decision, path, got, want, line)
			}
		}
	}
	if flags := field(audit.find(t, lines, callerA, DecisionAllowed, "team-a/down", "503"), "responseFlags"); !strings.Contains(flags, "UF") {
		t.Errorf("the failed upstream's audit line has response flags %q, want UF (connection failure)", flags)
	}
	audit.mu.Lock()
	raw := audit.raw.String()
	audit.mu.Unlock()
	if strings.Contains(raw, "tenancy-secret") || strings.Contains(audit.stderr(), "tenancy-secret") {
		t.Error("the injected credential appears in Envoy's output")
	}
	if got := field(audit.find(t, lines, callerA, DecisionAllowed, "team-a/api", "200"), "upstream"); !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("audit line of %s: upstream = %q, want the address dialled", callerA, got)
	}
}

// getFrom sends a GET from a given loopback source address.
func getFrom(t *testing.T, from, rawURL, host string) (int, []byte) {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", rawURL, from, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// auditLines collects the JSON lines Envoy writes on standard output.
type auditLines struct {
	mu     sync.Mutex
	lines  []map[string]any
	raw    bytes.Buffer
	errLog *lockedBuffer
}

// stderr is Envoy's own log so far.
func (a *auditLines) stderr() string { return a.errLog.String() }

func (a *auditLines) waitFor(t *testing.T, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		got := append([]map[string]any(nil), a.lines...)
		a.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Envoy wrote fewer than %d audit lines within 10s", n)
	return nil
}

// find is the first audit line of a caller address with a decision, and the route and
// response code when they are not empty.
func (a *auditLines) find(t *testing.T, lines []map[string]any, from, decision, route, code string) map[string]any {
	t.Helper()
	for _, l := range lines {
		if field(l, "caller.address") == from && field(l, "decision") == decision &&
			(route == "" || field(l, "route") == route) && (code == "" || field(l, "responseCode") == code) {
			return l
		}
	}
	t.Fatalf("no audit line from %s with decision %q, route %q, code %q", from, decision, route, code)
	return nil
}

// field reads a dotted path of an audit line as a string; absent or null is "".
func field(line map[string]any, path string) string {
	var v any = line
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// runEnvoyAudit starts Envoy and parses every JSON line of its standard output.
func runEnvoyAudit(t *testing.T, envoy, bootstrapPath string) *auditLines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errLog := &lockedBuffer{}
	cmd := exec.CommandContext(ctx, envoy, "-c", bootstrapPath, "--disable-hot-restart", "--concurrency", "1", "--log-level", "warn")
	cmd.Args = append(cmd.Args, bootstrap.LogArgs()...)
	cmd.Stderr = errLog
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &auditLines{errLog: errLog}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line map[string]any
			a.mu.Lock()
			a.raw.Write(append(sc.Bytes(), '\n'))
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				a.lines = append(a.lines, line)
			}
			a.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("Envoy log:\n%s", a.stderr())
			a.mu.Lock()
			t.Logf("audit lines: %v", a.lines)
			a.mu.Unlock()
		}
	})
	return a
}

// lockedBuffer is Envoy's stderr, written by exec's copier while the test reads it.
// The buffer is not embedded: its ReadFrom would let io.Copy bypass the lock.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestEscapedSlashesAreRedirected: "%2F" would let "/x%2F..%2Fdown" pass a rule on
// "/x" while an upstream that decodes it serves "/down". Envoy decodes it and redirects
// the client to the path the rules match, so no rule sees a path the upstream reads
// differently.
func TestEscapedSlashesAreRedirected(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	a, b := httptest.NewServer(echoHandler("a")), httptest.NewServer(echoHandler("b"))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	port := freePort(t)
	runEnvoyAudit(t, envoy, staticBootstrapFile(t, tenancyGateway(port, freePort(t), a, b), Options{}))
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	waitReady(t, base+"/")
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, base+"/x%2F..%2Fdown", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "api.example.com"
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "/down" {
		t.Fatalf("GET /x%%2F..%%2Fdown: %d Location %q, want 307 to /down", resp.StatusCode, resp.Header.Get("Location"))
	}
}
