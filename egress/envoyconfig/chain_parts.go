package envoyconfig

import (
	"slices"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// chainParts are the messages every HTTP connection manager of one listener holds
// alike: the HTTP filters, the local reply mapping and the audit log (one for the
// unknown-caller chain, one for the others). A tenant-isolating listener has a chain
// per tenant namespace and is built again on every caller change, so each part is made
// once per listener build rather than once per chain: the audit log's JSON format alone
// was half of building a chain. Each connection manager is packed (encoded) as soon as it
// is made, so no output message shares a part with another.
type chainParts struct {
	gateway  string
	listener string

	httpFilters []*hcmv3.HttpFilter
	localReply  *hcmv3.LocalReplyConfig
	logs        [2]*accesslogv3.AccessLog // by whether the chain is the unknown caller's
}

// filters are the HTTP filters (httpFilters), clipped so that a chain appending to its
// list never writes into another's.
func (p *chainParts) filters() ([]*hcmv3.HttpFilter, error) {
	if p.httpFilters == nil {
		filters, err := httpFilters()
		if err != nil {
			return nil, err
		}
		p.httpFilters = slices.Clip(filters)
	}
	return p.httpFilters, nil
}

func (p *chainParts) reply() *hcmv3.LocalReplyConfig {
	if p.localReply == nil {
		p.localReply = invalidShareReply()
	}
	return p.localReply
}

// auditLog is the listener's audit log for the unknown-caller chain or the others.
func (p *chainParts) auditLog(unknown bool) (*accesslogv3.AccessLog, error) {
	i := 0
	if unknown {
		i = 1
	}
	if p.logs[i] == nil {
		log, err := auditLog(p.gateway, p.listener, unknown)
		if err != nil {
			return nil, err
		}
		p.logs[i] = log
	}
	return p.logs[i], nil
}
