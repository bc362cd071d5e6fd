package xds

import (
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Envoy names a resource in resource_names_subscribe again, without unsubscribing it
// first, when it lost interest in the resource and regained it before its next request:
// it may have forgotten its copy and waits for the server to send it (Envoy's
// DeltaSubscriptionState says so: "treat it as a new addition"). The snapshot cache of
// go-control-plane v0.14.0 sends a named resource only when its version differs from
// the one it last sent on the stream, so such a resource would never come; for an SDS
// secret, a cluster would warm until its initial fetch timeout (15 s) and then run
// without its CA. No sequence tried with Envoy 1.40 here (clusters changed, renamed,
// removed and added back) made Envoy do this, so this guards the protocol rather than a
// seen failure. A subscribed name the stream was already sent is therefore
// taken as sent with no version (deltaCache), which sends the resource, or its removal
// when the snapshot lacks it. Names a new stream reports in
// initial_resource_versions are held by Envoy, as it says, and are not sent again.

// forgottenNames are the names req subscribes to again that the stream was sent
// (sent, the stream's returned resources); nil when there are none.
func forgottenNames(req *discoveryv3.DeltaDiscoveryRequest, sent map[string]string) map[string]bool {
	var forgotten map[string]bool
	for _, name := range req.GetResourceNamesSubscribe() {
		if v, ok := sent[name]; !ok || v == "" {
			continue
		}
		if _, held := req.GetInitialResourceVersions()[name]; held {
			continue
		}
		if forgotten == nil {
			forgotten = map[string]bool{}
		}
		forgotten[name] = true
	}
	return forgotten
}
