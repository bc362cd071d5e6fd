# Shared by the single-node cluster scripts (make cluster-up / cluster-down). Sourced, not run.
#
# Why bash: the cluster is a handful of processes, iptables rules, addresses and sysctls;
# each step is one command a reader can run by hand, and the same commands undo it.
# The pieces that need logic (DNS server, image writer, client) are small Go programs.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/hack/cluster
BIN=${BIN:-$ROOT/bin}
K8S_BIN=$BIN/k8s                  # kube-apiserver, etcd (make envtest-assets)
CLUSTER_BIN=$BIN/cluster          # kubelet, ..., kubectl, hostdns, images/*.tar (make cluster-tools)
DATA=${CLUSTER_DIR:-$ROOT/tmp/cluster}

# Addresses. Nothing listens on the machine's own network interfaces: the node address
# and the fake outside server are /32s on lo, and pods may not route past the bridge.
NODE_NAME=portcullis-node
NODE_IP=10.200.0.1                # kube-apiserver :6443, kubelet :10250, host DNS :53, NodePorts
EXTERNAL_IP=11.22.33.44           # stands in for an outside API (test/cluster serves it)
POD_CIDR=10.244.0.0/24
POD_GATEWAY=10.244.0.1
SERVICE_CIDR=10.96.0.0/24
CLUSTER_DNS=10.96.0.10
BRIDGE=pccni0
FWD_CHAIN=PORTCULLIS-CLUSTER      # filter/FORWARD: pods never leave through another interface

# Sysctls the cluster changes (ip_forward) or the kubelet rewrites; down.sh restores them.
SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)

# Host directories containerd, the kubelet and libcni use whatever their configuration
# says; down.sh removes the ones the first up created, and only our entries in the others.
HOST_DIRS=(/var/lib/kubelet /var/lib/cni /var/log/containers /run/netns /run/containerd)

export KUBECONFIG=$DATA/kubeconfig
KUBECTL=$CLUSTER_BIN/kubectl
CTR=(ctr --address "$DATA/containerd/containerd.sock" --namespace k8s.io)

say() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root: it changes addresses, iptables rules, mounts and sysctls of this machine"; }

# start NAME CMD...: runs CMD in its own session, logs to logs/NAME.log, records
# "PID EXECUTABLE" in pids/NAME. Does nothing when NAME is already running.
start() {
  local name=$1; shift
  if running "$name"; then return 0; fi
  mkdir -p "$DATA/logs" "$DATA/pids"
  setsid "$@" >>"$DATA/logs/$name.log" 2>&1 </dev/null &
  echo "$! $(readlink -f "$(command -v "$1")")" >"$DATA/pids/$name"
}

# alive PID EXE: PID is a live (not zombie) process running EXE (or EXE since rebuilt,
# which the kernel shows as "EXE (deleted)"). PIDs wrap within minutes here, so a bare
# kill -0 could name someone else's process.
alive() {
  local exe
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  [ "$exe" = "$2" ] || [ "$exe" = "$2 (deleted)" ] || return 1
  ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

running() {
  local pid exe
  [ -f "$DATA/pids/$1" ] || return 1
  read -r pid exe <"$DATA/pids/$1"
  alive "$pid" "$exe"
}

# stop NAME: SIGTERM, then SIGKILL after 10 s, only if the recorded process is still ours.
stop() {
  local pid exe i
  [ -f "$DATA/pids/$1" ] || return 0
  read -r pid exe <"$DATA/pids/$1"
  if alive "$pid" "$exe"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do alive "$pid" "$exe" || break; sleep 0.1; done
    if alive "$pid" "$exe"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$DATA/pids/$1"
}

# wait_for SECONDS WHAT CMD...: retries CMD every half second.
wait_for() {
  local secs=$1 what=$2 i; shift 2
  for i in $(seq $((secs * 2))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  die "timed out after ${secs}s waiting for $what (logs: $DATA/logs)"
}
