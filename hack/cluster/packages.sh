#!/usr/bin/env bash
# Installs the Debian packages the single-node cluster runs when one is missing:
# containerd, runc, the CNI plugins, conntrack (kube-proxy), iptables, openssl (PKI).
# Runs first in make cluster-up, so a user who is not root hears it before any build.
source "$(dirname "$0")/lib.sh"
need_root "make cluster-up"

PACKAGES=(containerd runc containernetworking-plugins conntrack iptables openssl)
missing=()
for p in "${PACKAGES[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = 'install ok installed' ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get: install them (Debian/Ubuntu names)"
say "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
