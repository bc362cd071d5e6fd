#!/usr/bin/env bash
# Writes the cluster's certificates and kubeconfigs into $DATA/pki once: one CA signs the
# API server's serving certificate and every client certificate. Kept until cluster-down.
source "$(dirname "$0")/lib.sh"

PKI=$DATA/pki
[ -f "$PKI/done" ] && exit 0
mkdir -p "$PKI" && cd "$PKI"

key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }

# cert NAME SUBJECT USAGE [SAN]: a certificate signed by the CA, valid 30 days.
cert() {
  key "$1"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -out "$1.crt" \
    -extfile <(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s\n' \
      "$3" "${4:+subjectAltName=$4}") 2>/dev/null
  rm -f "$1.csr"
}

# kubeconfig NAME: a kubeconfig for the client certificate NAME.
kubeconfig() {
  cat >"$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: portcullis-cluster
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$PKI/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$PKI/$1.crt", client-key: "$PKI/$1.key"}
contexts:
- name: $1
  context: {cluster: portcullis-cluster, user: $1}
current-context: $1
EOF
}

key ca
openssl req -x509 -new -key ca.key -subj "/CN=portcullis-cluster-ca" -days 30 -out ca.crt \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature

cert apiserver "/CN=kube-apiserver" serverAuth \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:10.96.0.1,IP:$NODE_IP,IP:127.0.0.1"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=portcullis-cluster-admin" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-proxy "/CN=system:kube-proxy" clientAuth
cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
cert kubelet-serving "/CN=$NODE_NAME" serverAuth "DNS:$NODE_NAME,IP:$NODE_IP"
for c in admin controller-manager scheduler kube-proxy kubelet; do kubeconfig "$c"; done

key sa && openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
cp admin.kubeconfig "$DATA/kubeconfig"
touch done
