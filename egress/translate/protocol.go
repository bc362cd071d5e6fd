package translate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// mcpIdleTimeout keeps long-lived MCP streams open unless the Backend says otherwise.
const mcpIdleTimeout = time.Hour

// protocolOptions lists the options each protocol type knows.
var protocolOptions = map[egressv1alpha1.ProtocolType][]string{
	egressv1alpha1.ProtocolHTTP1:     nil,
	egressv1alpha1.ProtocolHTTP2:     nil,
	egressv1alpha1.ProtocolGRPC:      nil,
	egressv1alpha1.ProtocolWebSocket: nil,
	egressv1alpha1.ProtocolMCP:       {"idleTimeout"},
}

// applyProtocol validates the protocol block and sets the cluster's protocol. Unknown
// types, vendor-prefixed ones included, are refused rather than treated as HTTP/1.1.
func applyProtocol(c *ir.Cluster, p *egressv1alpha1.BackendProtocol, field string) *refError {
	c.Protocol = ir.ProtocolHTTP1
	if p == nil {
		return nil
	}
	known, ok := protocolOptions[p.Type]
	if !ok {
		return newRefError(egressv1alpha1.ReasonUnsupportedProtocol, "%s.type %s is not supported; supported: %s", field, p.Type, supportedProtocols())
	}
	for _, k := range sortedKeys(p.Options) {
		if !contains(known, k) {
			return newRefError(egressv1alpha1.ReasonUnsupportedProtocol, "%s.options.%s is not an option of %s%s", field, k, p.Type, knownList(known))
		}
	}
	c.Protocol = ir.UpstreamProtocol(p.Type)
	if p.Type == egressv1alpha1.ProtocolMCP {
		c.IdleTimeout = mcpIdleTimeout
		if v, ok := p.Options["idleTimeout"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return newRefError(egressv1alpha1.ReasonInvalid, "%s.options.idleTimeout must be a positive duration such as 1h, not %q", field, v)
			}
			c.IdleTimeout = d
		}
	}
	return nil
}

func supportedProtocols() string {
	names := make([]string, len(egressv1alpha1.SupportedProtocolTypes))
	for i, p := range egressv1alpha1.SupportedProtocolTypes {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func knownList(known []string) string {
	if len(known) == 0 {
		return " (it has none)"
	}
	return fmt.Sprintf("; known: %s", strings.Join(known, ", "))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
