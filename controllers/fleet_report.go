package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// With several replicas an Envoy's xDS stream reaches any of them, but only the leader
// writes Programmed. So each follower reports what the Envoys connected to it run, per
// Gateway, in a ConfigMap of its own (owned by its Pod, so it goes with the Pod), and
// the leader counts those Envoys with its own. A report not refreshed for
// reportStaleAfter is ignored: its replica is gone or cut off, and its Envoys will
// reconnect to a live one.

const (
	reportLabel      = "portcullis.io/fleet-report"
	reportKey        = "report.json"
	reportHeartbeat  = time.Minute
	reportStaleAfter = 3 * reportHeartbeat
)

// Replica identifies this manager replica, for fleet reports; from the downward API.
type Replica struct {
	Namespace, Pod string
	UID            types.UID
}

// fleetReport is what the Envoys of one Gateway connected to one replica run.
type fleetReport struct {
	Envoys int `json:"envoys"`
	// Accepted: every Envoy accepted every type of a version the replica knows.
	Accepted bool              `json:"accepted"`
	Running  []reportedContent `json:"running,omitempty"`
	// Rejection is an Envoy's rejection of the latest version, as a condition message.
	Rejection string `json:"rejection,omitempty"`
}

// reportedContent is versionContent in a report.
type reportedContent struct {
	Gateway  int64            `json:"gateway"`
	Backends map[string]int64 `json:"backends,omitempty"`
}

// replicaReport is one replica's report: its fleets by Gateway key, and when it wrote.
type replicaReport struct {
	Written time.Time              `json:"written"`
	Fleets  map[string]fleetReport `json:"fleets"`
}

// localFleets describes the Envoys connected to this replica, by Gateway key.
func (r *Reconciler) localFleets() map[string]fleetReport {
	out := map[string]fleetReport{}
	for key := range r.lastPublished {
		st := r.opts.XDS.Status(key)
		fr := fleetReport{Envoys: len(st.Envoys)}
		if nack, kind := st.Rejection(); nack != nil {
			fr.Rejection = fmt.Sprintf("Envoy %s rejected the %s configuration version %s: %s", nack.NodeID, kind, nack.Version, nack.Message)
		}
		if fs := r.localFleetState(key, nil); fs.running != nil {
			fr.Accepted = true
			for _, c := range fs.running {
				fr.Running = append(fr.Running, reportedContent{Gateway: c.gateway, Backends: c.backends.all()})
			}
		}
		if fr.Envoys > 0 || fr.Rejection != "" {
			out[key] = fr
		}
	}
	return out
}

// reportFleets writes this follower's report when it changed or its heartbeat is due,
// and says when to look again.
func (r *Reconciler) reportFleets(ctx context.Context) time.Duration {
	if r.opts.Replica == nil || r.writes() {
		return 0
	}
	fleets := r.localFleets()
	if reflect.DeepEqual(fleets, r.reported) && time.Since(r.reportedAt) < reportHeartbeat {
		return reportHeartbeat - time.Since(r.reportedAt)
	}
	now := time.Now()
	body, err := json.Marshal(replicaReport{Written: now.UTC(), Fleets: fleets})
	if err != nil {
		r.log.Error(err, "fleet report")
		return reportHeartbeat
	}
	rep := r.opts.Replica
	cm := corev1ac.ConfigMap("portcullis-fleet-"+rep.Pod, rep.Namespace).
		WithLabels(map[string]string{reportLabel: "true", managedByLabel: managedBy}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Pod").WithName(rep.Pod).WithUID(rep.UID)).
		WithData(map[string]string{reportKey: string(body)})
	if err := r.client.Apply(ctx, cm, client.FieldOwner("portcullis-fleet-report"), client.ForceOwnership); err != nil {
		r.log.Error(err, "fleet report")
		return time.Second
	}
	r.reported, r.reportedAt = maps.Clone(fleets), now
	return reportHeartbeat
}

// peerFleets reads the live reports of the other replicas (on the leader only).
func (r *Reconciler) peerFleets(ctx context.Context) map[string][]fleetReport {
	if r.opts.Replica == nil {
		return nil
	}
	var list corev1.ConfigMapList
	if err := r.gather.api.List(ctx, &list, client.InNamespace(r.opts.Replica.Namespace), client.MatchingLabels{reportLabel: "true"}); err != nil {
		r.log.Error(err, "reading fleet reports")
		return nil
	}
	out := map[string][]fleetReport{}
	for _, cm := range list.Items {
		if ownedByPod(cm.OwnerReferences, r.opts.Replica.UID) {
			continue
		}
		var rep replicaReport
		if err := json.Unmarshal([]byte(cm.Data[reportKey]), &rep); err != nil || time.Since(rep.Written) > reportStaleAfter {
			continue
		}
		for key, fr := range rep.Fleets {
			out[key] = append(out[key], fr)
		}
	}
	return out
}

func ownedByPod(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, ref := range refs {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// withPeers adds the other replicas' Envoys to a Gateway's fleet state: they run what
// their reports say, and an Envoy there that has not accepted every type, or rejected
// the latest version, counts as it would here.
func (fs fleetState) withPeers(peers []fleetReport) fleetState {
	if len(peers) == 0 {
		return fs
	}
	localEnvoys := len(fs.status.Envoys) > 0
	if !localEnvoys {
		fs.running, fs.forgotten = nil, false
	}
	complete := localEnvoys == (fs.running != nil)
	for _, p := range peers {
		fs.peerEnvoys += p.Envoys
		if p.Rejection != "" && fs.peerRejection == "" {
			fs.peerRejection = p.Rejection
		}
		if p.Envoys > 0 && !p.Accepted {
			complete, fs.forgotten = false, false // a peer's Envoy is behind for another reason
		}
		for _, c := range p.Running {
			fs.running = append(fs.running, &versionContent{gateway: c.Gateway, backends: generationsOf(c.Backends)})
		}
	}
	if !complete {
		fs.running = nil
	}
	return fs
}
