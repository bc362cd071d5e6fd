#!/usr/bin/env bash
# Stops the single-node cluster (make cluster-down) and undoes what it did to the host:
# processes, containers, mounts, network namespaces, the bridge, the lo addresses,
# iptables chains, sysctls, cgroups; then deletes the data directory. Idempotent.
source "$(dirname "$0")/lib.sh"
need_root "make cluster-down"
[ -d "$DATA" ] || { say "down: not running ($DATA does not exist)"; exit 0; }

# Pods first, while the API server and the kubelet run: the kubelet stops each sandbox
# through containerd, which runs the CNI DEL that frees its address and veth.
if running kube-apiserver && running kubelet; then
  stop kube-controller-manager # nothing recreates the pods
  "$KUBECTL" delete pods --all --all-namespaces --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
  for i in $(seq 60); do [ -z "$("${CTR[@]}" tasks ls -q 2>/dev/null)" ] && break; sleep 0.5; done
fi
for p in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$p"; done

# Whatever still runs in a container is killed through containerd, then containerd stops.
if running containerd; then
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
  sleep 1
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true; done
fi
stop containerd
stop hostdns
# A shim outlives containerd; ours name our socket on their command line.
for d in /proc/[0-9]*; do
  [ "$(readlink "$d/exe" 2>/dev/null)" = /usr/bin/containerd-shim-runc-v2 ] || continue
  tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "$DATA/containerd/containerd.sock" && kill -KILL "${d#/proc/}" 2>/dev/null || true
done

# iptables: kube-proxy's own cleanup, then every KUBE-* chain (the kubelet's canaries and
# firewall too) and ours, in both families.
"$CLUSTER_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
for ipt in iptables ip6tables; do
  for table in filter nat mangle; do
    { "$ipt" -w -t "$table" -S 2>/dev/null || true; } |
      awk -v ours="$FWD_CHAIN" '$1 == "-A" && $2 ~ /^(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING)$/ &&
        match($0, / -j [A-Z0-9-]+/) && (substr($0, RSTART+4, RLENGTH-4) ~ /^KUBE-/ || substr($0, RSTART+4, RLENGTH-4) == ours) {
          sub(/^-A/, "-D"); print }' |
      while read -r rule; do eval "$ipt -w -t $table $rule" || true; done
    chains=$({ "$ipt" -w -t "$table" -S 2>/dev/null || true; } | awk -v ours="$FWD_CHAIN" '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == ours) {print $2}')
    for c in $chains; do "$ipt" -w -t "$table" -F "$c"; done
    for c in $chains; do "$ipt" -w -t "$table" -X "$c"; done
  done
done

# Mounts under the data directory (the kubelet bind-mounts its root onto itself; volumes,
# sandbox shm, overlay rootfs), deepest first, and the sandboxes' network namespaces.
for i in 1 2 3; do
  mounts=$(awk -v d="$DATA/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  [ -z "$mounts" ] && break
  for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
done
for ns in /run/netns/cni-*; do [ -e "$ns" ] && ip netns delete "$(basename "$ns")" 2>/dev/null || true; done

ip link delete "$BRIDGE" 2>/dev/null || true
for ip in $NODE_IP $EXTERNAL_IP; do ip addr del "$ip/32" dev lo 2>/dev/null || true; done
if [ -f "$DATA/sysctl.orig" ]; then
  while IFS= read -r kv; do sysctl -qw "$kv" || true; done <"$DATA/sysctl.orig"
fi
# The kubelet's cgroups (cgroupfs driver), once empty.
for c in /sys/fs/cgroup/*/kubepods; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true; done
# Host directories: our entries in the ones that were there before, the rest entirely.
for l in /var/log/containers/*.log; do
  case $(readlink "$l" 2>/dev/null) in "$DATA"/*) rm -f "$l" ;; esac
done
for r in /var/lib/cni/results/portcullis-cluster-*; do
  [ -e "$r" ] || continue
  id=${r#/var/lib/cni/results/portcullis-cluster-}; id=${id%-eth0}
  rm -f "$r" "/var/lib/cni/results/cni-loopback-$id-lo"
done
rmdir /run/containerd/s 2>/dev/null || true
if [ -f "$DATA/host-dirs.created" ]; then
  while IFS= read -r d; do
    case $d in
      /var/lib/*) rm -rf --one-file-system "$d" ;; # the kubelet's device-plugin socket, libcni's cache
      *) rmdir "$d" 2>/dev/null || say "down: $d is not empty; left in place" ;;
    esac
  done <"$DATA/host-dirs.created"
fi

if awk -v d="$DATA/" 'index($5, d) == 1 {found=1} END {exit !found}' /proc/self/mountinfo; then
  die "down: mounts remain under $DATA; not deleting it"
fi
rm -rf "$DATA"
say "down: stopped and cleaned"
