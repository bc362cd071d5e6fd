package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/infra"
)

// gatewayPollInterval is how often the Gateway addresses are looked at.
const gatewayPollInterval = time.Second

// gatewayPrinter prints a line for each Gateway when its Envoy runs and its addresses or
// listeners first appear or change, and when it is deleted.
type gatewayPrinter struct {
	c       client.Client
	out     printer
	workDir string // the host provider's, where each Envoy's admin address is written

	mu      sync.Mutex
	printed map[string]string // by namespace/name: the last line printed
}

func newGatewayPrinter(c client.Client, out printer, workDir string) *gatewayPrinter {
	return &gatewayPrinter{c: c, out: out, workDir: workDir, printed: map[string]string{}}
}

// run polls until ctx ends.
func (g *gatewayPrinter) run(ctx context.Context) {
	for {
		g.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(gatewayPollInterval):
		}
	}
}

// poll prints what changed since the last poll; a failed list prints nothing.
func (g *gatewayPrinter) poll(ctx context.Context) {
	var list gwapiv1.GatewayList
	if err := g.c.List(ctx, &list); err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]bool{}
	for i := range list.Items {
		gw := &list.Items[i]
		key := gw.Namespace + "/" + gw.Name
		seen[key] = true
		// Until this run's Envoy has its admin address the Gateway is not served here:
		// on a data directory kept from an earlier run, the status (kept in etcd) still
		// names the addresses the earlier run's Envoy served.
		admin := g.adminAddress(gw)
		if admin == "" {
			continue
		}
		if line, ok := gatewayLine(gw, admin); ok && g.printed[key] != line {
			g.printed[key] = line
			g.out.linef("%s", line)
		}
	}
	for key := range g.printed {
		if !seen[key] {
			delete(g.printed, key)
			g.out.linef("gateway %s: deleted", key)
		}
	}
}

// adminAddress is the host:port of the Gateway's Envoy admin interface, which the host
// provider picks and writes beside its bootstrap; "" until it has.
func (g *gatewayPrinter) adminAddress(gw *gwapiv1.Gateway) string {
	data, err := os.ReadFile(filepath.Join(infra.HostDir(g.workDir, gw.Namespace, gw.Name), infra.AdminAddressFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
