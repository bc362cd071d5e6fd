package controllers

import (
	"context"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// Callers of isolated Gateways are pods, known by their IPs. Pods change all the time
// and change nothing else translation reads, so a pod event does not translate again:
// it updates the pod's claim (pod_index.go), recomputes the caller table and, when that
// changed, rebuilds and publishes the configuration last published with the new table
// (only listeners and route tables differ; Envoy applies the new matcher without
// draining connections).
//
// IP reuse: a pod loses its identity as soon as it is terminating or finished
// (translate.ClaimOf), which the API says before the kubelet tears its sandbox down and
// before its IP can go to another pod; a new pod gets an identity when its IP shows in
// its status. An address two pods claim at once identifies neither.

// callersKey is the work item of pod events.
var callersKey = ctrl.Request{NamespacedName: types.NamespacedName{Name: "portcullis-callers"}}

// PodCacheOptions keeps, of every Pod, only what identifies a caller, so that ten
// thousand pods cost little memory. The manager's cache applies it.
func PodCacheOptions() cache.ByObject {
	return cache.ByObject{Transform: func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		return callerView(p), nil
	}}
}

// callerView is a Pod reduced to its caller identity.
func callerView(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = p.Name, p.Namespace, p.UID, p.ResourceVersion
	out.DeletionTimestamp, out.CreationTimestamp = p.DeletionTimestamp, p.CreationTimestamp
	out.Spec.ServiceAccountName, out.Spec.HostNetwork = p.Spec.ServiceAccountName, p.Spec.HostNetwork
	out.Status.Phase, out.Status.PodIP, out.Status.PodIPs = p.Status.Phase, p.Status.PodIP, p.Status.PodIPs
	return out
}

// callerChanged passes pod events that can change the caller table.
var callerChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		a, okA := e.ObjectOld.(*corev1.Pod)
		b, okB := e.ObjectNew.(*corev1.Pod)
		if !okA || !okB {
			return true
		}
		return !samePodIdentity(a, b)
	},
}

func samePodIdentity(a, b *corev1.Pod) bool {
	return (a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil) && a.Spec.ServiceAccountName == b.Spec.ServiceAccountName &&
		a.Spec.HostNetwork == b.Spec.HostNetwork && a.Status.Phase == b.Status.Phase && a.Status.PodIP == b.Status.PodIP &&
		slices.Equal(a.Status.PodIPs, b.Status.PodIPs)
}

// reconcileCallers republishes every Gateway last published with the current caller
// table, when it changed.
func (r *Reconciler) reconcileCallers(ctx context.Context) (ctrl.Result, error) {
	callers := r.pods.callers(r.opts.Unrestricted)
	if slices.Equal(callers, r.callers) {
		return ctrl.Result{}, nil
	}
	r.callers = callers
	r.run.clean = false // what the last reconcile published changed (nothing_new.go)
	names := make([]string, 0, len(r.lastPublished))
	for name := range r.lastPublished {
		names = append(names, name)
	}
	sort.Strings(names)
	published := false
	for _, name := range names {
		gw := translate.WithCallers(r.lastPublished[name], callers)
		out, err := envoyconfig.Build(gw, r.opts.Envoy)
		if err != nil {
			r.log.Error(err, "build with new callers", "gateway", name)
			continue
		}
		version, _, err := r.opts.XDS.Publish(name, out)
		if err != nil {
			r.log.Error(err, "publish new callers", "gateway", name)
			continue
		}
		if c := r.versions.latest(name); c != nil {
			r.versions.record(name, version, *c)
		}
		r.lastPublished[name] = gw
		published = true
	}
	if published {
		select {
		case r.callersPublished <- struct{}{}: // the reconcile it brings marks the new version
		default:
		}
	}
	r.log.V(1).Info("callers changed", "callers", len(callers), "gateways", len(names))
	return ctrl.Result{}, nil
}
