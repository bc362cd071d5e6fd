package localenv

import (
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context of the kubeconfig.
const contextName = "portcullis-local"

// writeKubeconfig writes an admin kubeconfig with the CA and client certificate
// inline (mode 0600: it holds a private key) and returns the matching REST config.
func writeKubeconfig(path, server string, caPEM []byte, admin KeyPair) (*rest.Config, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: admin.CertPEM, ClientKeyData: admin.KeyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	return clientcmd.RESTConfigFromKubeConfig(data)
}
