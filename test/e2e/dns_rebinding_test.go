package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// rebindTTL is the TTL the hostile server gives; the guard's clamp is lowered to match so
// the test runs in seconds.
const rebindTTL = 2 * time.Second

// TestDNSRebindingIsCutOffWithinTTL: a Backend's name first resolves to an allowed
// loopback address (the explicit --allow-cidr 127.0.0.0/8 exception tests need) and
// traffic flows; the hostile server then answers 169.254.169.254 and 10.0.0.5. Within
// TTL + 1 s Envoy sends nothing more to the old address, clients get 503, and the guard
// reports both blocked answers.
func TestDNSRebindingIsCutOffWithinTTL(t *testing.T) {
	const name = "rebind.e2e.test"
	dns := dnstest.NewServer(t)
	dns.Set(name, fmt.Sprintf("%s. %d IN A 127.0.0.1", name, int(rebindTTL.Seconds())))
	up := testupstream.Start(t, testupstream.Options{Name: "rebind"})

	cfg := dnsguard.DefaultConfig()
	cfg.DNSServers, cfg.AllowCIDRs, cfg.IPFamily = []string{dns.Addr()}, []string{"127.0.0.0/8"}, dnsguard.IPv4
	cfg.MinTTL, cfg.MaxTTL, cfg.Timeout, cfg.Attempts = time.Second, rebindTTL, 500*time.Millisecond, 1
	policy, err := cfg.AddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := dnsguard.NewResolver(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := dnsguard.NewStore(resolver, cfg, dnsguard.StoreOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = store.Run(ctx) }()

	d := startDataPath(t)
	res := loadResources(t, gatewayYAML+routeYAML+featureBackendYAML, scenario{Port: d.port, Name: "rebind", Host: name, Extra: fmt.Sprintf(`  destination:
    type: FQDN
    fqdn: {hostname: %s}
    ports: [{name: http, port: %d, protocol: HTTP}]`, name, up.Port())})
	statuses := make(chan translate.Statuses, 64)
	go republishOnChange(ctx, t, d, store, res, policy, statuses)
	store.SetNames([]string{name})

	d.eventually(200, name, "/before")
	dns.Set(name, fmt.Sprintf("%s. %d IN A 169.254.169.254", name, int(rebindTTL.Seconds())), fmt.Sprintf("%s. %d IN A 10.0.0.5", name, int(rebindTTL.Seconds())))
	switched := time.Now()
	before := len(up.Requests())
	for {
		code, _, _ := d.get(name, "/after")
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Since(switched) > rebindTTL+time.Second {
			t.Fatalf("still answered %d %s after the rebinding; want 503 within TTL + 1s", code, time.Since(switched))
		}
		time.Sleep(50 * time.Millisecond)
	}
	cutoff := time.Since(switched)
	reached := len(up.Requests())
	for i := 0; i < 10; i++ {
		if code, _, _ := d.get(name, "/after"); code != http.StatusServiceUnavailable {
			t.Fatalf("request %d after cut-off: %d, want 503", i, code)
		}
	}
	if n := len(up.Requests()); n != reached {
		t.Fatalf("%d requests reached the old address after the cut-off", n-reached)
	}
	t.Logf("cut off %s after the rebinding (TTL %s); %d requests reached the old address before", cutoff, rebindTTL, reached-before)

	resolution, _ := store.Resolution(name)
	if resolution.State != egress.ResolutionAllForbidden || len(resolution.Vetted) != 0 || len(resolution.Blocked) != 2 {
		t.Fatalf("guard reports %+v; want both answers blocked and nothing vetted", resolution)
	}
	assertBackendStatusReportsBlocked(t, statuses, "apps/rebind")
}

// republishOnChange is the control loop the manager runs: every change the DNS guard
// reports re-runs translation with its addresses and publishes the result.
func republishOnChange(ctx context.Context, t *testing.T, d *dataPath, store *dnsguard.Store, res *egress.Resources, policy egress.AddressPolicy, statuses chan<- translate.Statuses) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-store.Changes():
		}
		result := translate.Translate(res, store.Addresses(), translate.Options{AddressPolicy: policy, Unrestricted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
		select {
		case statuses <- result.Statuses:
		default:
		}
		for _, gw := range result.Gateways {
			out, err := envoyconfig.Build(gw, envoyconfig.Options{})
			if err == nil {
				_, _, err = d.server.Publish(gw.Name, out)
			}
			if err != nil {
				t.Errorf("republish: %v", err)
			}
		}
	}
}

func assertBackendStatusReportsBlocked(t *testing.T, statuses <-chan translate.Statuses, backend string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case st := <-statuses:
			b := st.Backends[backend]
			if b == nil || len(b.BlockedAddresses) != 2 {
				continue
			}
			for _, c := range b.Conditions {
				if c.Type == "AddressesResolved" && c.Reason == "AllAddressesForbidden" && len(b.Addresses) == 0 {
					return
				}
			}
		case <-deadline:
			t.Fatal("the Backend's status never reported both blocked addresses with AllAddressesForbidden")
		}
	}
}
