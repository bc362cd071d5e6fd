package translate

import (
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestCheckEndpoint(t *testing.T) {
	private := prefixPolicy{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fc00::/7")}
	cluster := []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")}
	none := &translator{opts: Options{AddressPolicy: private}}
	withCIDRs := &translator{opts: Options{AddressPolicy: private, ClusterCIDRs: cluster}}
	noPolicy := &translator{opts: Options{ClusterCIDRs: cluster}}
	loopbackTests := &translator{opts: Options{AllowLoopbackEndpoints: true}}
	cases := []struct {
		name       string
		t          *translator
		addr       string
		wantReason string // "" means allowed
	}{
		{"a pod address", none, "10.244.1.5", ""},
		{"a private address without cluster CIDRs", none, "192.168.1.1", ""},
		{"a public address", none, "203.0.113.9", ""},
		{"an IPv6 pod address", none, "fd00:10:244::5", ""},
		{"loopback", none, "127.0.0.1", "loopback (127.0.0.0/8)"},
		{"the end of loopback", none, "127.255.255.255", "loopback"},
		{"IPv6 loopback", none, "::1", "loopback (::1/128)"},
		{"unspecified", none, "0.0.0.0", `"this network" (0.0.0.0/8)`},
		{"IPv6 unspecified", none, "::", "unspecified (::/128)"},
		{"link-local", none, "169.254.1.1", "link-local (169.254.0.0/16)"},
		{"IPv6 link-local", none, "fe80::1", "link-local (fe80::/10)"},
		{"AWS, GCP and Azure metadata", none, "169.254.169.254", "cloud metadata endpoint (169.254.169.254/32)"},
		{"Alibaba metadata", none, "100.100.100.200", "cloud metadata endpoint (100.100.100.200/32)"},
		{"Azure WireServer", none, "168.63.129.16", "Azure WireServer"},
		{"AWS IPv6 metadata", none, "fd00:ec2::254", "cloud metadata endpoint (fd00:ec2::254/128)"},
		{"IPv4-mapped loopback", none, "::ffff:127.0.0.1", "loopback (127.0.0.0/8)"},
		{"IPv4-compatible loopback", none, "::127.0.0.1", "IPv4-compatible (::/96) embeds 127.0.0.1: loopback"},
		{"SIIT metadata", none, "::ffff:0:a9fe:a9fe", "IPv4-compatible (::ffff:0:0:0/96) embeds 169.254.169.254"},
		{"NAT64 metadata", none, "64:ff9b::a9fe:a9fe", "NAT64 (64:ff9b::/96) embeds 169.254.169.254: cloud metadata endpoint"},
		{"local-use NAT64 loopback", none, "64:ff9b:1::7f00:1", "embeds 127.0.0.1: loopback"},
		{"6to4 Azure WireServer", none, "2002:a83f:8110::", "6to4 (2002::/16) embeds 168.63.129.16"},
		{"Teredo client loopback", none, "2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo (2001::/32) embeds client 127.0.0.1"},
		{"NAT64 of a public address", none, "64:ff9b::cb00:7109", ""},
		{"not an address", none, "db.example.com", "not an IP address"},
		{"a zone", none, "fe80::1%eth0", "not an IP address"},
		{"a pod address inside the cluster CIDRs", withCIDRs, "10.244.1.5", ""},
		{"an IPv4-mapped pod address", withCIDRs, "::ffff:10.244.1.5", ""},
		{"a private node address outside them", withCIDRs, "10.0.0.9", "outside the cluster CIDRs: denied (10.0.0.0/8)"},
		{"a unique-local address outside them", withCIDRs, "fd00:99::1", "denied (fc00::/7)"},
		{"a public address outside them", withCIDRs, "203.0.113.9", ""},
		{"loopback with cluster CIDRs", withCIDRs, "127.0.0.1", "loopback"},
		{"outside them with no policy", noPolicy, "203.0.113.9", "no address policy is configured"},
		{"loopback in a single-host test", loopbackTests, "127.0.0.1", ""},
		{"IPv6 loopback in a single-host test", loopbackTests, "::1", ""},
		{"metadata in a single-host test", loopbackTests, "169.254.169.254", "cloud metadata endpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := tc.t.checkEndpoint(tc.addr)
			switch {
			case tc.wantReason == "" && !ok:
				t.Fatalf("refused: %s", reason)
			case tc.wantReason != "" && ok:
				t.Fatalf("allowed, want refused with %q", tc.wantReason)
			case !strings.Contains(reason, tc.wantReason):
				t.Fatalf("reason %q does not mention %q", reason, tc.wantReason)
			}
		})
	}
}

func TestRefusedEndpointsMessage(t *testing.T) {
	svc := types.NamespacedName{Namespace: "apps", Name: "db"}
	if e := (refusedEndpoints{}).error(svc); e != nil {
		t.Fatalf("no refused address, got %v", e.msg)
	}
	r := refusedEndpoints{}
	for _, a := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9", "127.0.0.10"} {
		r[a] = "loopback"
	}
	e := r.error(svc)
	if e.reason != "ForbiddenDestination" || !strings.HasPrefix(e.msg, "Service apps/db has endpoint addresses Portcullis refuses: 127.0.0.1 (loopback), 127.0.0.10 (loopback)") || !strings.HasSuffix(e.msg, " and 2 more") {
		t.Fatalf("got %s: %s", e.reason, e.msg)
	}
}
