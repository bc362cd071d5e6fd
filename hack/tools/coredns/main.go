// Command coredns is CoreDNS with only the plugins a single-node test cluster needs: the
// usual kube-dns Corefile (errors, health, ready, kubernetes, prometheus, forward, cache,
// loop, reload, loadbalance) and the log and whoami plugins the Gateway API conformance
// suite's Corefile uses. CoreDNS with all of its plugins pulls in every cloud SDK and
// takes minutes longer to build. Plugin order comes from CoreDNS's own directive list.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() {
	coremain.Run()
}
