package xds

import (
	"maps"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
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
// presented to the cache as sent with no version, which makes the cache send the
// resource, or its removal when the snapshot lacks it. Names a new stream reports in
// initial_resource_versions are held by Envoy, as it says, and are not sent again.
type resubscribingCache struct{ cachev3.SnapshotCache }

func (c resubscribingCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	return c.SnapshotCache.CreateDeltaWatch(req, resubscribed(req, sub), out)
}

// resubscribed is sub, with every name req subscribes to again shown as sent without a
// version; sub itself when there is none (the cache must not modify sub's maps).
func resubscribed(req *cachev3.DeltaRequest, sub cachev3.Subscription) cachev3.Subscription {
	sent := sub.ReturnedResources()
	var forgotten map[string]string
	for _, name := range req.GetResourceNamesSubscribe() {
		if v, ok := sent[name]; !ok || v == "" {
			continue
		}
		if _, held := req.GetInitialResourceVersions()[name]; held {
			continue
		}
		if forgotten == nil {
			forgotten = maps.Clone(sent)
		}
		forgotten[name] = ""
	}
	if forgotten == nil {
		return sub
	}
	return forgottenSubscription{Subscription: sub, sent: forgotten}
}

// forgottenSubscription is a subscription whose client forgot some of what it was sent.
type forgottenSubscription struct {
	cachev3.Subscription
	sent map[string]string
}

func (s forgottenSubscription) ReturnedResources() map[string]string { return s.sent }
