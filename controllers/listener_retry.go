package controllers

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// A listener Envoy cannot bind (another process holds the port) is rejected, and Envoy
// never tries again by itself; the xDS server does not resend a rejected version either
// (that would loop). So while a Gateway's configuration is rejected for a bind failure,
// the reconciler resends it every BindRetryInterval: once the port is free, the next
// attempt binds, without anyone editing or deleting the Gateway.
const BindRetryInterval = 5 * time.Second

// bindFailure tells a rejection Envoy may get past by itself on a later attempt.
func bindFailure(message string) bool {
	return strings.Contains(message, "cannot bind") || strings.Contains(message, "Address already in use")
}

// retryBindFailures resends the configuration of every Gateway whose Envoys rejected
// it for a bind failure, at most once per BindRetryInterval, and returns when to look
// again (0: no Gateway is waiting).
func (r *Reconciler) retryBindFailures() time.Duration {
	var wait time.Duration
	now := r.opts.Clock()
	for name := range r.lastPublished {
		nack, _ := r.opts.XDS.Status(name).Rejection()
		if nack == nil || !bindFailure(nack.Message) {
			// Forget the last retry once Envoy runs the configuration or rejects it for
			// another reason; not while a resend is still unanswered (no rejection yet):
			// a reconcile in that moment would otherwise let the next rejection resend
			// at once, and the two looped every few milliseconds.
			if nack != nil || r.envoysRunLatest(name) {
				delete(r.bindRetries, name)
			}
			continue
		}
		if last, ok := r.bindRetries[name]; !ok || now.Sub(last) >= BindRetryInterval {
			r.resend(name)
			r.bindRetries[name] = now
		}
		wait = BindRetryInterval
	}
	return wait
}

// resend publishes the Gateway's configuration again; the new version carries what the
// last one carried.
func (r *Reconciler) resend(gateway string) {
	content := r.versions.latest(gateway)
	version, err := r.opts.XDS.Resend(gateway)
	if err != nil {
		r.log.Error(err, "resend after a bind failure", "gateway", gateway)
		return
	}
	if content != nil {
		r.versions.record(gateway, version, *content)
	}
	r.log.Info("resent the configuration after a bind failure", "gateway", gateway, "version", version)
}

// listenerNamePattern finds the Envoy listener names ("http-10080") in a message.
var listenerNamePattern = regexp.MustCompile(`\bhttps?-(\d+)\b`)

// rejectedListeners are the Gateway listeners whose Envoy listener a rejection names.
func rejectedListeners(gw *gwapiv1.Gateway, message string) map[gwapiv1.SectionName]bool {
	named := map[string]bool{}
	for _, m := range listenerNamePattern.FindAllStringSubmatch(message, -1) {
		named[m[1]] = true
	}
	out := map[gwapiv1.SectionName]bool{}
	for _, l := range gw.Spec.Listeners {
		if named[fmt.Sprint(translate.EnvoyPort(l.Port))] {
			out[l.Name] = true
		}
	}
	return out
}

// markRejectedListeners gives the listeners a rejection names Programmed=False with
// reason Invalid and Envoy's message, instead of leaving them Pending.
func markRejectedListeners(st *gwapiv1.GatewayStatus, gw *gwapiv1.Gateway, ps programState) {
	if gw == nil || ps.reason != "Rejected" {
		return
	}
	rejected := rejectedListeners(gw, ps.message)
	for i := range st.Listeners {
		c := findCond(st.Listeners[i].Conditions, string(gwapiv1.ListenerConditionProgrammed))
		if c != nil && c.Reason == string(gwapiv1.ListenerReasonPending) && rejected[st.Listeners[i].Name] {
			c.Status, c.Reason, c.Message = "False", string(gwapiv1.ListenerReasonInvalid), ps.message
		}
	}
}
