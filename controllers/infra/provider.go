// Package infra runs the Envoy fleet of each Gateway: in a cluster as a Deployment
// behind a Service (Kubernetes), or locally as one Envoy process per Gateway (Host).
// Either way the Envoys get their listeners by xDS, so a provider only needs to know
// who the Gateway is and which ports it exposes.
package infra

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// Gateway is what a provider needs to run the Envoy fleet of one Gateway.
type Gateway struct {
	// Name, Namespace and UID identify the Gateway, the owner of the objects created.
	Name, Namespace string
	UID             types.UID
	Listeners       []Listener
	Generation      int64
	// Labels and Annotations come from spec.infrastructure: the provider puts them on
	// every object it makes for the Gateway, pods included (its own labels win a clash,
	// since selectors and policies depend on them). Keys the translator refuses
	// (translate.RefusedInfrastructureKey) never get here.
	Labels, Annotations map[string]string
}

// Listener is one Gateway listener as far as the infrastructure is concerned.
type Listener struct {
	Name string
	// Port is the public port (the Gateway's); EnvoyPort is where Envoy binds it
	// (translate.EnvoyPort).
	Port      int32
	EnvoyPort uint32
}

// Provider runs the Envoy fleets of Gateways.
type Provider interface {
	// Ensure creates or updates what runs the Gateway's Envoys and returns the
	// addresses clients use (Gateway.status.addresses).
	Ensure(ctx context.Context, gw Gateway) ([]gwapiv1.GatewayStatusAddress, error)
	// Delete removes everything Ensure created for the Gateway.
	Delete(ctx context.Context, namespace, name string) error
}

// GatewayOf returns the provider's view of a Gateway.
func GatewayOf(gw *gwapiv1.Gateway) Gateway {
	out := Gateway{Name: gw.Name, Namespace: gw.Namespace, UID: gw.UID, Generation: gw.Generation}
	if infra := gw.Spec.Infrastructure; infra != nil {
		out.Labels, out.Annotations = acceptedKeys(stringMap(infra.Labels)), acceptedKeys(stringMap(infra.Annotations))
	}
	for _, l := range gw.Spec.Listeners {
		out.Listeners = append(out.Listeners, Listener{
			Name:      string(l.Name),
			Port:      int32(l.Port),
			EnvoyPort: translate.EnvoyPort(l.Port),
		})
	}
	return out
}

// key is "<namespace>/<name>", the xDS node.cluster of the Gateway's Envoys.
func (g Gateway) key() string { return g.Namespace + "/" + g.Name }

func (g Gateway) validate() error {
	var errs []error
	if g.Name == "" || g.Namespace == "" {
		errs = append(errs, fmt.Errorf("gateway %q has no name or namespace", g.key()))
	}
	for _, l := range g.Listeners {
		if l.Port < 1 || l.Port > 65535 || l.EnvoyPort < 1 || l.EnvoyPort > 65535 {
			errs = append(errs, fmt.Errorf("listener %q: port %d (Envoy port %d) is out of range", l.Name, l.Port, l.EnvoyPort))
		}
	}
	return errors.Join(errs...)
}

// addressType returns a pointer to t, for GatewayStatusAddress.Type.
func addressType(t gwapiv1.AddressType) *gwapiv1.AddressType { return &t }

// stringMap converts Gateway API's typed label and annotation maps.
func stringMap[K, V ~string](in map[K]V) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[string(k)] = string(v)
	}
	return out
}

// acceptedKeys drops the keys translate.RefusedInfrastructureKey refuses. The translator
// already refuses such a Gateway; this keeps them off the pods whatever provisions them.
func acceptedKeys(m map[string]string) map[string]string {
	for k := range m {
		if translate.RefusedInfrastructureKey(k) != "" {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
