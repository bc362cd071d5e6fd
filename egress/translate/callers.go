package translate

import (
	"iter"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// CallerClaim is what one pod claims as a caller of isolated Gateways: the addresses it
// holds and who it is. It is all of a pod the caller table needs, so the manager keeps
// one per pod from the pod watch's events instead of listing ten thousand pods (1.2 KB
// each, copied) on every pod event.
type CallerClaim struct {
	Namespace, Pod, ServiceAccount string
	Addrs                          []netip.Addr
}

// ClaimOf returns the claim of p, or false when its addresses give it no identity: it is
// terminating or finished (the kubelet may hand them to a new pod as soon as its sandbox
// is gone), shares the node's network, or has no address yet.
func ClaimOf(p *corev1.Pod) (CallerClaim, bool) {
	if !holdsAddresses(p) {
		return CallerClaim{}, false
	}
	addrs := podAddrs(p)
	if len(addrs) == 0 {
		return CallerClaim{}, false
	}
	return CallerClaim{Namespace: p.Namespace, Pod: p.Name, ServiceAccount: serviceAccountOf(p), Addrs: addrs}, true
}

// Callers lists the source addresses a Gateway's Envoys know, sorted by prefix: every
// running pod's IPs with its namespace, name and ServiceAccount (ClaimOf), and the
// unrestricted prefixes.
func Callers(pods []corev1.Pod, unrestricted []netip.Prefix) []ir.Caller {
	return CallersOf(func(yield func(CallerClaim) bool) {
		for i := range pods {
			if c, ok := ClaimOf(&pods[i]); ok && !yield(c) {
				return
			}
		}
	}, unrestricted)
}

// CallersOf is Callers from the pods' claims, in any order. An address two pods claim at
// once identifies neither: closed, not a guess.
func CallersOf(claims iter.Seq[CallerClaim], unrestricted []netip.Prefix) []ir.Caller {
	byAddr := map[netip.Addr][]CallerClaim{}
	for c := range claims {
		for _, ip := range c.Addrs {
			byAddr[ip] = append(byAddr[ip], c)
		}
	}
	out := make([]ir.Caller, 0, len(byAddr)+len(unrestricted))
	for addr, claimants := range byAddr {
		if len(claimants) != 1 {
			continue
		}
		c := claimants[0]
		out = append(out, ir.Caller{Prefix: netip.PrefixFrom(addr, addr.BitLen()).String(), Namespace: c.Namespace, Pod: c.Pod, ServiceAccount: c.ServiceAccount})
	}
	for _, pfx := range unrestricted {
		out = append(out, ir.Caller{Prefix: pfx.Masked().String(), Unrestricted: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out
}

// holdsAddresses tells whether a pod's IPs still belong to it.
func holdsAddresses(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && !p.Spec.HostNetwork &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func podAddrs(p *corev1.Pod) []netip.Addr {
	var out []netip.Addr
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			out = append(out, a.Unmap())
		}
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

func serviceAccountOf(p *corev1.Pod) string {
	if p.Spec.ServiceAccountName == "" {
		return "default"
	}
	return p.Spec.ServiceAccountName
}
