#!/usr/bin/env bash
# Starts the single-node cluster (make cluster-up): host network, host DNS, containerd,
# etcd, kube-apiserver, controller-manager, scheduler, kubelet, kube-proxy, CoreDNS.
# Idempotent: what already runs is kept, what is missing is started.
source "$(dirname "$0")/lib.sh"
need_root "make cluster-up"
mkdir -p "$DATA"/{etc,logs,pids,cni/net.d,kubelet,pod-logs}
mkdir -p -m 700 "$DATA/etcd"
"$HERE/pki.sh"

render() { # render TEMPLATE OUT: fills in @DATA@, @NODE_IP@, ...
  sed -e "s#@DATA@#$DATA#g" -e "s#@NODE_IP@#$NODE_IP#g" -e "s#@NODE_NAME@#$NODE_NAME#g" \
    -e "s#@POD_CIDR@#$POD_CIDR#g" -e "s#@POD_GATEWAY@#$POD_GATEWAY#g" -e "s#@BRIDGE@#$BRIDGE#g" \
    -e "s#@CLUSTER_DNS@#$CLUSTER_DNS#g" "$1" >"$2"
}
for f in containerd.toml kubelet.yaml kube-proxy.yaml resolv.conf; do render "$HERE/etc/$f" "$DATA/etc/$f"; done
render "$HERE/etc/10-bridge.conflist" "$DATA/cni/net.d/10-bridge.conflist"
[ -f "$DATA/dns-records" ] || cp "$HERE/dns-records" "$DATA/dns-records"

# The first up records the sysctls and the host directories that down.sh puts back.
if [ ! -f "$DATA/sysctl.orig" ]; then
  for d in "${HOST_DIRS[@]}"; do [ -e "$d" ] || echo "$d"; done >"$DATA/host-dirs.created"
  for s in "${SYSCTLS[@]}"; do sysctl -n "$s" >/dev/null 2>&1 && echo "$s=$(sysctl -n "$s")"; done >"$DATA/sysctl.orig"
fi
# (The address list is read whole first: grep -q closing the pipe early would make ip
# fail under pipefail and the address look missing.)
lo_addrs=$(ip -4 addr show dev lo)
for ip in $NODE_IP $EXTERNAL_IP; do
  grep -q " $ip/32 " <<<"$lo_addrs" || ip addr add "$ip/32" dev lo
done
sysctl -qw net.ipv4.ip_forward=1
# Pod traffic may reach the node and other pods, never leave through another interface.
if ! iptables -w -n -L "$FWD_CHAIN" >/dev/null 2>&1; then
  iptables -w -N "$FWD_CHAIN"
  iptables -w -A "$FWD_CHAIN" -s "$POD_CIDR" ! -o "$BRIDGE" -j REJECT --reject-with icmp-net-prohibited
  iptables -w -I FORWARD 1 -j "$FWD_CHAIN"
fi

start hostdns "$CLUSTER_BIN/hostdns" -listen "$NODE_IP:53" -records "$DATA/dns-records"
start containerd containerd --config "$DATA/etc/containerd.toml"
wait_for 30 containerd "${CTR[@]}" version
for img in "$CLUSTER_BIN"/images/*.tar; do
  "${CTR[@]}" images import "$img" >/dev/null
done

start etcd "$K8S_BIN/etcd" --name "$NODE_NAME" --data-dir "$DATA/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --unsafe-no-fsync
P=$DATA/pki
start kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
  --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" --client-ca-file "$P/ca.crt" \
  --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$P/ca.crt" --kubelet-preferred-address-types InternalIP \
  --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode Node,RBAC --allow-privileged \
  --enable-admission-plugins NodeRestriction --profiling=false
wait_for 60 kube-apiserver "$KUBECTL" get --raw /readyz

start kube-controller-manager "$CLUSTER_BIN/kube-controller-manager" --kubeconfig "$P/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$P/controller-manager.kubeconfig" --authorization-kubeconfig "$P/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 10257 --leader-elect=false --use-service-account-credentials \
  --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
  --root-ca-file "$P/ca.crt" --service-account-private-key-file "$P/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false
start kube-scheduler "$CLUSTER_BIN/kube-scheduler" --kubeconfig "$P/scheduler.kubeconfig" \
  --authentication-kubeconfig "$P/scheduler.kubeconfig" --authorization-kubeconfig "$P/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --profiling=false
start kubelet "$CLUSTER_BIN/kubelet" --config "$DATA/etc/kubelet.yaml" --kubeconfig "$P/kubelet.kubeconfig" \
  --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --root-dir "$DATA/kubelet"
start kube-proxy "$CLUSTER_BIN/kube-proxy" --config "$DATA/etc/kube-proxy.yaml"
wait_for 120 "node $NODE_NAME Ready" "$KUBECTL" wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s

render "$HERE/coredns.yaml" "$DATA/etc/coredns.yaml"
"$KUBECTL" apply -f "$DATA/etc/coredns.yaml" >/dev/null
wait_for 120 "CoreDNS" "$KUBECTL" -n kube-system rollout status deployment/coredns --timeout=1s
say "up: export KUBECONFIG=$KUBECONFIG"
