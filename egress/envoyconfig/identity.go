package envoyconfig

import (
	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Caller identity in the audit log. The filter chain tells a caller's namespace, but
// the pod and ServiceAccount are per address, and pods churn: putting them in the
// listener would drain connections on every pod start. So each route table carries a
// lookup from source address to namespace, pod and ServiceAccount, as the per-route
// configuration of three RBAC filters in shadow mode: shadow mode never allows or denies
// anything, it only records the name of the matching entry as dynamic metadata, which
// the access log prints. Route tables travel by RDS, which Envoy applies without
// touching connections.
const (
	rbacMetadataNamespace = "envoy.filters.http.rbac"
	nsIdentityFilter      = "portcullis.caller.namespace"
	nsIdentityPrefix      = "portcullis_ns_"
	podIdentityFilter     = "portcullis.caller.pod"
	saIdentityFilter      = "portcullis.caller.serviceaccount"
	podIdentityPrefix     = "portcullis_pod_"
	saIdentityPrefix      = "portcullis_sa_"
	rbacActionTypeName    = "caller"
)

// identityKey is the dynamic metadata key one identity filter writes.
func identityKey(prefix string) string { return prefix + "shadow_effective_policy_id" }

// identityFilters are the three RBAC filters, empty (they enforce nothing) until a
// route table gives them their lookups.
func identityFilters() ([]*hcmv3.HttpFilter, error) {
	empty, err := pack(&rbacv3.RBAC{})
	if err != nil {
		return nil, err
	}
	out := make([]*hcmv3.HttpFilter, 0, len(identities))
	for _, id := range identities {
		out = append(out, &hcmv3.HttpFilter{Name: id.filter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: empty}})
	}
	return out, nil
}

// identity is one thing the audit log tells of a caller, looked up by one filter.
type identity struct {
	filter, prefix string
	name           func(ir.Caller) string
}

var identities = []identity{
	{nsIdentityFilter, nsIdentityPrefix, func(c ir.Caller) string { return hostOr(c, c.Namespace) }},
	{podIdentityFilter, podIdentityPrefix, func(c ir.Caller) string { return hostOr(c, c.Pod) }},
	{saIdentityFilter, saIdentityPrefix, func(c ir.Caller) string { return hostOr(c, c.ServiceAccount) }},
}

// hostOr names an unrestricted caller (local mode's own machine) "(host)".
func hostOr(c ir.Caller, name string) string {
	if c.Unrestricted {
		return "(host)"
	}
	return name
}

// identityConfig is the per-filter configuration that gives a route table the address
// lookups of its callers; nil when it has none.
func identityConfig(callers []ir.Caller) (map[string]*anypb.Any, error) {
	if len(callers) == 0 {
		return nil, nil
	}
	out := make(map[string]*anypb.Any, len(identities))
	for _, id := range identities {
		cfg, err := identityLookup(callers, id.prefix, id.name)
		if err != nil {
			return nil, err
		}
		out[id.filter] = cfg
	}
	return out, nil
}

// identityLookup is one RBAC per-route configuration whose shadow matcher names the
// caller of each source address.
func identityLookup(callers []ir.Caller, prefix string, name func(ir.Caller) string) (*anypb.Any, error) {
	ip := &xdsmatcherv3.IPMatcher{}
	for _, c := range callers {
		cidr, err := cidrRange(c.Prefix)
		if err != nil {
			return nil, err
		}
		action, err := pack(&rbacconfigv3.Action{Name: name(c), Action: rbacconfigv3.RBAC_ALLOW})
		if err != nil {
			return nil, err
		}
		ip.RangeMatchers = append(ip.RangeMatchers, &xdsmatcherv3.IPMatcher_IPRangeMatcher{
			Ranges:  cidr,
			OnMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: &xdscorev3.TypedExtensionConfig{Name: rbacActionTypeName, TypedConfig: action}}},
		})
	}
	tree, err := sourceIPTree(ip)
	if err != nil {
		return nil, err
	}
	return pack(&rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{ShadowRulesStatPrefix: prefix, ShadowMatcher: tree}})
}
