package samples

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// envoyEndpoints returns, per cluster whose name starts with "backend/", the endpoint
// addresses the Gateway's Envoy holds (its admin /clusters view).
func (m *manager) envoyEndpoints(namespace, gateway string) (map[string][]string, error) {
	base, ok := m.host.AdminURL(namespace, gateway)
	if !ok {
		return nil, fmt.Errorf("the host provider runs no Envoy for Gateway %s/%s", namespace, gateway)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(base + "/clusters?format=json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("Envoy admin /clusters: status %d, %v", resp.StatusCode, err)
	}
	var dump struct {
		ClusterStatuses []struct {
			Name         string `json:"name"`
			HostStatuses []struct {
				Address struct {
					SocketAddress struct {
						Address   string `json:"address"`
						PortValue int    `json:"port_value"`
					} `json:"socket_address"`
				} `json:"address"`
			} `json:"host_statuses"`
		} `json:"cluster_statuses"`
	}
	if err := json.Unmarshal(body, &dump); err != nil {
		return nil, fmt.Errorf("Envoy admin /clusters: %v", err)
	}
	out := map[string][]string{}
	for _, cl := range dump.ClusterStatuses {
		if !strings.HasPrefix(cl.Name, "backend/") {
			continue
		}
		hosts := []string{}
		for _, h := range cl.HostStatuses {
			hosts = append(hosts, fmt.Sprintf("%s:%d", h.Address.SocketAddress.Address, h.Address.SocketAddress.PortValue))
		}
		sort.Strings(hosts)
		out[cl.Name] = hosts
	}
	return out, nil
}

// assertEnvoyIsPinnedToVettedAddresses looks at the data plane, not the statuses: the
// Gateway's Envoy holds an endpoint at the vetted answer for an allowed name, none for
// the blocked sample, and the refused address nowhere.
func assertEnvoyIsPinnedToVettedAddresses(t *testing.T, m *manager) {
	t.Helper()
	want := map[string]string{
		"backend/payments/stripe-api/https":      "[127.0.0.1:443]",
		"backend/sandbox/instance-metadata/http": "[]",
	}
	var last map[string][]string
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if last, lastErr = m.envoyEndpoints("egress-gateway", "egress"); lastErr == nil && endpointsMatch(last, want) {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("Envoy's clusters: %v", lastErr)
	}
	for cluster, hosts := range want {
		got, ok := last[cluster]
		if !ok || fmt.Sprint(got) != hosts {
			t.Errorf("Envoy cluster %s has endpoints %v (present %v), want %s", cluster, got, ok, hosts)
		}
	}
	for cluster, hosts := range last {
		for _, h := range hosts {
			if strings.HasPrefix(h, "169.254.") {
				t.Errorf("Envoy cluster %s holds the refused address %s", cluster, h)
			}
		}
	}
}

func endpointsMatch(got map[string][]string, want map[string]string) bool {
	for cluster, hosts := range want {
		if h, ok := got[cluster]; !ok || fmt.Sprint(h) != hosts {
			return false
		}
	}
	return true
}
