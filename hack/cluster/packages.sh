#!/usr/bin/env bash
# Installs the Debian packages the single-node cluster runs when one is missing:
# containerd, runc, the CNI plugins, conntrack (kube-proxy), iptables, openssl (PKI).
# As root it runs apt-get; otherwise it prints one line naming what to install.
source "$(dirname "$0")/lib.sh"

PACKAGES=(containerd runc containernetworking-plugins conntrack iptables openssl)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get: install them (Debian/Ubuntu names)"
[ "$(id -u)" = 0 ] || die "missing packages ${missing[*]}: run as root, or apt-get install -y --no-install-recommends ${missing[*]}"
say "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
