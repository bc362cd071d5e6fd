package bench

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// logStall says where a wait for Programmed stopped, before the benchmark fails: the
// Gateway's Programmed condition, that of a few Backends of the batch still not
// Programmed, and what the xDS server published and each Envoy holds per type. A
// benchmark that did not settle in ten minutes is a bug to find, and the manager's own
// log is discarded here.
func (w *propagationWorld) logStall(b *testing.B, prefix string, backends tally) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var gw gwapiv1.Gateway
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: gatewayNS, Name: w.gateway}, &gw); err == nil {
		b.Logf("Gateway %s: %s", w.gateway, conditionLine(meta.FindStatusCondition(gw.Status.Conditions, string(gwapiv1.GatewayConditionProgrammed))))
	}
	shown := 0
	for _, name := range slices.Sorted(maps.Keys(backends.by)) {
		if backends.by[name] || !strings.HasPrefix(name, prefix) || shown == 5 {
			continue
		}
		shown++
		var be egressv1alpha1.Backend
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &be); err == nil {
			b.Logf("Backend %s (generation %d): %s", name, be.Generation, conditionLine(meta.FindStatusCondition(be.Status.Conditions, egressv1alpha1.ConditionProgrammed)))
		}
	}
	logXDSStatus(b, w.xds.Status(gatewayNS+"/"+w.gateway))
	for _, stat := range []string{"cluster_manager.active_clusters", "cluster_manager.warming_clusters", "listener_manager.total_listeners_warming", "cluster_manager.cds.update_success", "cluster_manager.cds.update_rejected"} {
		v, err := w.envoy.Stat(stat)
		b.Logf("Envoy %s: %d %v", stat, v, err)
	}
}

func conditionLine(c *metav1.Condition) string {
	if c == nil {
		return "no Programmed condition"
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}

// logXDSStatus logs per type the published version and count, and per Envoy what it
// was sent last and runs.
func logXDSStatus(b *testing.B, st xds.GatewayStatus) {
	b.Logf("xDS: published version %s", st.Version)
	for _, typeURL := range slices.Sorted(maps.Keys(st.Resources)) {
		b.Logf("xDS:   %s: %d resources, version %s", kindOf(typeURL), st.Resources[typeURL], st.TypeVersion(typeURL))
	}
	for _, e := range st.Envoys {
		for _, typeURL := range slices.Sorted(maps.Keys(e.Types)) {
			t := e.Types[typeURL]
			b.Logf("xDS:   Envoy %s stream %d %s: sent %s at %s, runs %s since %s, nack %v, mirror %+v", e.NodeID, e.StreamID, kindOf(typeURL),
				t.Sent, t.SentAt.Format(time.TimeOnly), t.Acked, t.AckedAt.Format(time.TimeOnly), t.Nack, t.Mirror)
		}
	}
}

func kindOf(typeURL string) string { return typeURL[strings.LastIndex(typeURL, ".")+1:] }
