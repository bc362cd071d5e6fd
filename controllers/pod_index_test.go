package controllers

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
)

func indexPod(ns, name, sa, ip string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.Spec.ServiceAccountName = sa
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
	if ip != "" {
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	return p
}

// TestPodIndexKeepsTheCallerTableOfItsEvents: the caller table built from the index's
// events is the one expected, and the one translate.Callers builds from the pods the
// events leave, through every kind of change a pod goes through.
func TestPodIndexKeepsTheCallerTableOfItsEvents(t *testing.T) {
	host := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	terminating := indexPod("a", "web", "", "10.0.0.1")
	terminating.DeletionTimestamp = &metav1.Time{}
	finished := indexPod("a", "web", "", "10.0.0.1")
	finished.Status.Phase = corev1.PodSucceeded
	hostNet := indexPod("a", "web", "", "10.0.0.1")
	hostNet.Spec.HostNetwork = true
	caller := func(ip, ns, pod, sa string) ir.Caller {
		return ir.Caller{Prefix: ip + "/32", Namespace: ns, Pod: pod, ServiceAccount: sa}
	}
	unrestricted := ir.Caller{Prefix: "127.0.0.1/32", Unrestricted: true}
	tests := []struct {
		name   string
		set    []*corev1.Pod
		remove []*corev1.Pod
		want   []ir.Caller
	}{
		{name: "no pod: the unrestricted prefixes only", want: []ir.Caller{unrestricted}},
		{name: "a running pod is a caller, its ServiceAccount defaulted",
			set:  []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1")},
			want: []ir.Caller{caller("10.0.0.1", "a", "web", "default"), unrestricted}},
		{name: "a pod without an address yet is none",
			set:  []*corev1.Pod{indexPod("a", "web", "", "")},
			want: []ir.Caller{unrestricted}},
		{name: "an update that makes it terminating takes its identity",
			set:  []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1"), terminating},
			want: []ir.Caller{unrestricted}},
		{name: "so does finishing", set: []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1"), finished}, want: []ir.Caller{unrestricted}},
		{name: "and the node's network", set: []*corev1.Pod{hostNet}, want: []ir.Caller{unrestricted}},
		{name: "a deleted pod is forgotten",
			set:    []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1"), indexPod("b", "db", "db", "10.0.0.2")},
			remove: []*corev1.Pod{indexPod("a", "web", "", "")},
			want:   []ir.Caller{caller("10.0.0.2", "b", "db", "db"), unrestricted}},
		{name: "an address two pods claim identifies neither",
			set:  []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1"), indexPod("b", "db", "db", "10.0.0.1"), indexPod("b", "job", "", "10.0.0.3")},
			want: []ir.Caller{caller("10.0.0.3", "b", "job", "default"), unrestricted}},
		{name: "its new holder gets it once the old one is gone",
			set:    []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1"), indexPod("b", "db", "db", "10.0.0.1")},
			remove: []*corev1.Pod{indexPod("a", "web", "", "10.0.0.1")},
			want:   []ir.Caller{caller("10.0.0.1", "b", "db", "db"), unrestricted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newPodIndex()
			left := map[string]corev1.Pod{}
			for _, p := range tt.set {
				x.set(p)
				left[p.Namespace+"/"+p.Name] = *p
			}
			for _, p := range tt.remove {
				x.remove(p)
				delete(left, p.Namespace+"/"+p.Name)
			}
			got := x.callers(host)
			if !slices.Equal(got, tt.want) {
				t.Errorf("callers = %+v\nwant %+v", got, tt.want)
			}
			if listed := translate.Callers(slices.Collect(maps.Values(left)), host); !slices.Equal(got, listed) {
				t.Errorf("callers = %+v\nfrom the pods left: %+v", got, listed)
			}
		})
	}
}

// TestPodIndexUpdatesBeforeItWakesTheReconcile: the handler has indexed an event by the
// time the key it enqueues can be taken, so the reconcile it wakes sees the pod.
func TestPodIndexUpdatesBeforeItWakesTheReconcile(t *testing.T) {
	x := newPodIndex()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h, ctx := x.handler(callersKey), context.Background()
	steps := []struct {
		name  string
		event func()
		want  []string // the prefixes of the callers
	}{
		{"create", func() { h.Create(ctx, event.CreateEvent{Object: indexPod("a", "web", "", "10.0.0.1")}, q) }, []string{"10.0.0.1/32"}},
		{"update", func() {
			h.Update(ctx, event.UpdateEvent{ObjectOld: indexPod("a", "web", "", "10.0.0.1"), ObjectNew: indexPod("a", "web", "", "10.0.0.9")}, q)
		}, []string{"10.0.0.9/32"}},
		{"delete", func() { h.Delete(ctx, event.DeleteEvent{Object: indexPod("a", "web", "", "10.0.0.9")}, q) }, nil},
	}
	for _, s := range steps {
		s.event()
		key, _ := q.Get()
		if key != callersKey {
			t.Fatalf("%s: enqueued %v, want the callers key", s.name, key)
		}
		var got []string
		for _, c := range x.callers(nil) {
			got = append(got, c.Prefix)
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("after the %s event's key was taken, the callers are %v, want %v", s.name, got, s.want)
		}
		q.Done(key)
	}
}
