package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// Settings of BenchmarkConnectTunnel: bytes per transfer (a short one, whose time
// includes the connection's ramp-up, and a sustained one), the read buffer every side
// uses, transfers per side and size (the sides alternate) and tunnels opened for the
// setup latency.
const (
	tunnelTransferBytes  = 64 << 20
	tunnelSustainedBytes = 256 << 20
	tunnelReadBuffer     = 256 << 10
	tunnelRounds         = 5
	tunnelSetups         = 300
)

// BenchmarkConnectTunnel measures the forward proxy's CONNECT tunnel: the throughput of
// one transfer through the tunnel (one Envoy worker thread, the configuration the
// translator generates for a forward-proxy listener and a Backend's TCP port) against
// the same transfer over a direct connection to the same local upstream, alternating
// sides, and the tunnel setup latency: from dialling the proxy to reading its 200 for
// the CONNECT, a new connection each time. It reports MB/s of each side (median of the
// rounds) from opening the connection to its last byte, their ratio (tunnel / direct),
// the same for a sustained transfer four times as long (a loopback connection speeds up
// over its first tens of megabytes, a tunnel's two connections less so),
// the setup latency p50 and p99, and how long after the last byte the tunnel's end of
// file comes (the source closes its side; Envoy closes the client's after its delayed
// close, envoyconfig.tunnelCloseDelay). For comparison, the same transfer through a TCP
// listener and a TCPRoute to the same Backend (Envoy's TCP proxy, no HTTP codec), the
// path of applications that cannot use a proxy.
func BenchmarkConnectTunnel(b *testing.B) {
	source := startByteSource(b)
	proxyPort, tcpPort := startTunnelProxy(b, source)
	authority := "127.0.0.1:" + strconv.Itoa(int(source))
	tcpListener := "127.0.0.1:" + strconv.Itoa(int(tcpPort))
	relay := startCopyRelay(b, authority)
	var direct, tunnel, eof, tcpRoute, directLong, tunnelLong, relayed []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < tunnelRounds; r++ {
			d, _ := transferMBps(b, tunnelTransferBytes, func() net.Conn { return dialTCP(b, authority) })
			t, closed := transferMBps(b, tunnelTransferBytes, func() net.Conn { return openTunnel(b, proxyPort, authority) })
			p, _ := transferMBps(b, tunnelTransferBytes, func() net.Conn { return dialTCP(b, tcpListener) })
			direct, tunnel, eof, tcpRoute = append(direct, d), append(tunnel, t), append(eof, ms(closed)), append(tcpRoute, p)
			d, _ = transferMBps(b, tunnelSustainedBytes, func() net.Conn { return dialTCP(b, authority) })
			t, _ = transferMBps(b, tunnelSustainedBytes, func() net.Conn { return openTunnel(b, proxyPort, authority) })
			c, _ := transferMBps(b, tunnelSustainedBytes, func() net.Conn { return dialTCP(b, relay) })
			directLong, tunnelLong, relayed = append(directLong, d), append(tunnelLong, t), append(relayed, c)
		}
	}
	setups := make([]time.Duration, 0, tunnelSetups)
	for i := 0; i < tunnelSetups; i++ {
		start := time.Now()
		c := openTunnel(b, proxyPort, authority)
		setups = append(setups, time.Since(start))
		c.Close()
	}
	sort.Slice(setups, func(i, j int) bool { return setups[i] < setups[j] })
	d, t := median(direct), median(tunnel)
	b.ReportMetric(d, "direct-MB/s")
	b.ReportMetric(t, "tunnel-MB/s")
	b.ReportMetric(t/d, "ratio")
	b.ReportMetric(median(directLong), "sustained-direct-MB/s")
	b.ReportMetric(median(tunnelLong), "sustained-tunnel-MB/s")
	b.ReportMetric(median(tunnelLong)/median(directLong), "sustained-ratio")
	b.ReportMetric(median(relayed), "copy-relay-MB/s")
	b.ReportMetric(median(tunnelLong)/median(relayed), "tunnel-vs-copy-relay")
	b.ReportMetric(median(tcpRoute), "tcproute-MB/s")
	b.ReportMetric(median(tcpRoute)/d, "tcproute-ratio")
	b.ReportMetric(ms(setups[len(setups)/2]), "setup-p50-ms")
	b.ReportMetric(ms(setups[len(setups)*99/100]), "setup-p99-ms")
	b.ReportMetric(median(eof), "eof-after-last-byte-ms")
}

// startByteSource listens on loopback; on every connection it reads the number of
// bytes wanted (8 bytes, big endian), writes that many, then closes it.
func startByteSource(b *testing.B) uint32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	chunk := make([]byte, 256<<10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var want [8]byte
				if _, err := io.ReadFull(c, want[:]); err != nil {
					return
				}
				for sent := 0; sent < int(binary.BigEndian.Uint64(want[:])); sent += len(chunk) {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	return uint32(l.Addr().(*net.TCPAddr).Port)
}

// startTunnelProxy runs an Envoy (one worker) on the generated configuration of a
// Gateway whose listener "proxy" is a forward proxy, with a TCP listener whose TCPRoute
// goes to the Backend declaring the source's TCP port, and returns the two ports.
func startTunnelProxy(b *testing.B, source uint32) (uint32, uint32) {
	port, tcpPort := xdstest.FreePort(b), xdstest.FreePort(b)
	all := gwapiv1.NamespacesFromAll
	res := &egress.Resources{
		GatewayClasses: []gwapiv1.GatewayClass{gatewayClass()},
		Gateways: []gwapiv1.Gateway{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "proxy", Annotations: map[string]string{
				translate.ForwardProxyAnnotation: "proxy", translate.TenantIsolationAnnotation: "off", translate.AccessLogAnnotation: "off"}},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: gwapiv1.ObjectName(gatewayClass().Name), Listeners: []gwapiv1.Listener{{
				Name: "proxy", Port: gwapiv1.PortNumber(port), Protocol: gwapiv1.HTTPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &all}},
			}, {
				Name: "tcp", Port: gwapiv1.PortNumber(tcpPort), Protocol: gwapiv1.TCPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &all}},
			}}},
		}},
		TCPRoutes: []gwapiv1.TCPRoute{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "source"},
			Spec: gwapiv1.TCPRouteSpec{
				CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "proxy", Namespace: ptrTo(gwapiv1.Namespace("gw"))}}},
				Rules: []gwapiv1.TCPRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: gwapiv1.BackendObjectReference{
					Group: ptrTo(gwapiv1.Group(egressv1alpha1.GroupVersion.Group)), Kind: ptrTo(gwapiv1.Kind(egressv1alpha1.BackendKind)), Name: "source"}}}}},
			},
		}},
		Backends: []*egressv1alpha1.Backend{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "source"},
			Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
				Type: egressv1alpha1.DestinationTypeIP, IP: &egressv1alpha1.IPDestination{Address: "127.0.0.1"},
				Ports: []egressv1alpha1.BackendPort{{Name: "bytes", Port: int32(source), Protocol: egressv1alpha1.PortProtocolTCP}},
			}},
		}},
	}
	result := translate.Translate(res, nil, translate.Options{AddressPolicy: anyAddress{}})
	if len(result.Gateways) != 1 || len(result.Gateways[0].Listeners) != 2 {
		b.Fatalf("translation did not produce one forward-proxy Gateway; statuses: %+v", result.Statuses.Gateways)
	}
	xdstest.Start(b, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		bs, err := envoyconfig.Static(result.Gateways[0], envoyconfig.Options{}, admin)
		if err != nil {
			return nil, err
		}
		return protojson.Marshal(bs)
	}})
	for _, p := range []uint32{port, tcpPort} {
		xdstest.WaitFor(b, xdstest.Timeout, "the listener on port "+fmt.Sprint(p), func() error {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(p)))
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	return port, tcpPort
}

// startCopyRelay listens on loopback and relays every connection's bytes to and from a
// new connection to target, copying through a user-space buffer as a proxy must (a
// plain Go copy between two TCP connections would splice in the kernel instead). It is
// the floor of what any copying proxy costs on this machine: two more copies into and
// out of the kernel per byte than a direct connection.
func startCopyRelay(b *testing.B, target string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relayConn(c, target)
		}
	}()
	return l.Addr().String()
}

func relayConn(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go copyThrough(up, c)
	copyThrough(c, up)
}

// copyThrough copies src to dst through a user-space buffer; the types hide the
// connections' splice paths.
func copyThrough(dst, src net.Conn) {
	buf := make([]byte, tunnelReadBuffer)
	io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// anyAddress admits the loopback destination of the benchmark.
type anyAddress struct{}

func (anyAddress) CheckAddr(netip.Addr) (bool, string) { return true, "" }

func dialTCP(b *testing.B, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// openTunnel sends CONNECT through the proxy and returns the connection once the proxy
// answered 200 (its buffered reader drained into the returned conn).
func openTunnel(b *testing.B, proxyPort uint32, authority string) net.Conn {
	c := dialTCP(b, "127.0.0.1:"+strconv.Itoa(int(proxyPort)))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	r := bufio.NewReaderSize(c, tunnelReadBuffer)
	resp, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT %s: %v %v", authority, resp, err)
	}
	return &bufferedConn{Conn: c, r: r}
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// transferMBps asks a new connection for size bytes and reads them, then its end of
// file. Every side reads through the same buffer size (io.Discard alone would read 8
// KiB at a time, and the tunnel's buffered reader 256 KiB: the comparison would be of
// the readers). It returns MB/s up to the last byte and how long the end of file came
// after it.
func transferMBps(b *testing.B, size int64, open func() net.Conn) (float64, time.Duration) {
	start := time.Now()
	c := open()
	defer c.Close()
	var want [8]byte
	binary.BigEndian.PutUint64(want[:], uint64(size))
	if _, err := c.Write(want[:]); err != nil {
		b.Fatal(err)
	}
	if n, err := readN(c, size); err != nil {
		b.Fatalf("read %d of %d bytes: %v", n, size, err)
	}
	last := time.Now()
	if extra, err := io.Copy(io.Discard, c); err != nil || extra != 0 {
		b.Fatalf("after the last byte: %d more bytes, %v; want end of file", extra, err)
	}
	return float64(size) / 1e6 / last.Sub(start).Seconds(), time.Since(last)
}

// readN reads size bytes from c through one tunnelReadBuffer. (io.Copy to io.Discard
// would read through the discarder's own 8 KiB buffer whatever buffer it is given.)
func readN(c net.Conn, size int64) (int64, error) {
	buf := make([]byte, tunnelReadBuffer)
	var n int64
	for n < size {
		k, err := c.Read(buf[:min(int64(len(buf)), size-n)])
		n += int64(k)
		if err == io.EOF {
			return n, io.ErrUnexpectedEOF
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func ptrTo[T any](v T) *T { return &v }
