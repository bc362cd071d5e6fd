package infra

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
)

// DefaultImage is the Envoy image of the pods: the release the generated configuration
// targets (ENVOY_VERSION in the Makefile).
const DefaultImage = "envoyproxy/envoy:v1.40.0"

// DefaultFieldOwner is the server-side apply field manager of the provider.
const DefaultFieldOwner = "portcullis"

// Pod template annotations whose change rolls the Envoy pods: Envoy reads its bootstrap
// and its xDS client certificate files once, at start.
const (
	AnnotationBootstrapHash       = "portcullis.io/bootstrap-hash"
	AnnotationXDSClientHash       = "portcullis.io/xds-client-cert-hash"
	defaultLogLevel               = "info"
	defaultConcurrency      int32 = 2
)

// KubernetesOptions configure the Kubernetes provider.
type KubernetesOptions struct {
	// Image is the Envoy image; DefaultImage when empty.
	Image string
	// ImagePullPolicy defaults to IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// XDSAddress is the DNS name (or IP) of the xDS Service and XDSPort its port.
	XDSAddress string
	XDSPort    uint32
	// XDSServerName is the name Envoy sends as SNI and requires among the xDS server
	// certificate's DNS SANs (one of xdscerts.Options.ServiceNames); XDSAddress when
	// empty, which must then be a DNS name.
	XDSServerName string
	// Replicas of each Gateway's Deployment; 1 when 0.
	Replicas int32
	// ServiceType of each Gateway's Service; ClusterIP when empty.
	ServiceType corev1.ServiceType
	// Resources of the Envoy container; requests of 100m CPU and 128Mi memory when nil.
	Resources *corev1.ResourceRequirements
	// LogLevel is Envoy's --log-level; "info" when empty.
	LogLevel string
	// Concurrency is Envoy's worker thread count (--concurrency); 2 when 0. Envoy would
	// otherwise start one worker per CPU of the node, whatever the pod may use.
	Concurrency int32
	// FieldOwner is the server-side apply field manager; DefaultFieldOwner when empty.
	FieldOwner string
	// ClientSecrets, when set (an *xdscerts.Manager), is asked for the namespace's
	// Envoy client Secret, owned by the Gateway, before the pods are applied. When nil
	// the caller must have called xdscerts.Manager.EnsureClientSecret itself.
	ClientSecrets ClientSecretEnsurer
	// APIReader reads from the API server itself (the manager's GetAPIReader): whether
	// an object of a Gateway's names is Portcullis' before it is taken over, and the
	// client certificate the pods load. The client's cache is asked only for object
	// metadata, so the manager caches no Secret, ConfigMap or Deployment data for the
	// provider. The client itself when nil.
	APIReader client.Reader
}

// ClientSecretEnsurer keeps the Secret xdscerts.EnvoyClientSecretName of a namespace.
type ClientSecretEnsurer interface {
	EnsureClientSecret(ctx context.Context, namespace string, owner client.Object) error
}

// Kubernetes runs each Gateway's Envoys as a Deployment behind a Service in the
// Gateway's namespace, with a ServiceAccount and the bootstrap in a ConfigMap, all named
// ResourceName(gateway), labelled Labels and owned by the Gateway. Objects are written
// by server-side apply, so an unchanged Gateway changes nothing.
//
// The pods mount the Secret xdscerts.EnvoyClientSecretName of their namespace (see
// KubernetesOptions.ClientSecrets).
type Kubernetes struct {
	c    client.Client
	api  client.Reader
	opts KubernetesOptions
	// applied is the last complete Ensure of each Gateway (kubernetes_applied.go).
	mu      sync.Mutex
	applied map[string]applied
}

var (
	_ Provider            = (*Kubernetes)(nil)
	_ ClientSecretEnsurer = (*xdscerts.Manager)(nil)
)

// NewKubernetes returns the Kubernetes provider.
func NewKubernetes(c client.Client, opts KubernetesOptions) (*Kubernetes, error) {
	if opts.XDSAddress == "" || opts.XDSPort == 0 {
		return nil, errors.New("infra: the xDS address and port are required")
	}
	if opts.XDSServerName == "" {
		if _, err := netip.ParseAddr(opts.XDSAddress); err == nil {
			return nil, errors.New("infra: the xDS address is an IP address; set XDSServerName to a DNS name of the server's certificate")
		}
		opts.XDSServerName = opts.XDSAddress
	}
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	if opts.ImagePullPolicy == "" {
		opts.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.ServiceType == "" {
		opts.ServiceType = corev1.ServiceTypeClusterIP
	}
	if opts.Resources == nil {
		opts.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}}
	}
	if opts.LogLevel == "" {
		opts.LogLevel = defaultLogLevel
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = defaultConcurrency
	}
	if opts.FieldOwner == "" {
		opts.FieldOwner = DefaultFieldOwner
	}
	api := opts.APIReader
	if api == nil {
		api = c
	}
	return &Kubernetes{c: c, api: api, opts: opts, applied: map[string]applied{}}, nil
}

// Ensure applies the ServiceAccount, ConfigMap, Deployment and Service of gw and
// returns the Service's cluster IPs (type IPAddress), or its DNS name
// "<service>.<namespace>.svc" (type Hostname) when it has none (a headless Service).
// An object of the same name that Portcullis did not make for this Gateway is left
// alone and reported as an error. While gw asks for what the last Ensure applied and
// nothing it applied changed since, Ensure makes no API call (kubernetes_applied.go).
func (k *Kubernetes) Ensure(ctx context.Context, gw Gateway) ([]gwapiv1.GatewayStatusAddress, error) {
	if err := gw.validate(); err != nil {
		return nil, err
	}
	if len(gw.Listeners) == 0 {
		return nil, fmt.Errorf("gateway %s has no listener to expose", gw.key())
	}
	want, err := wantDigest(gw)
	if err != nil {
		return nil, err
	}
	seen, err := k.observe(ctx, gw.Namespace, gw.Name)
	if err != nil {
		return nil, err
	}
	if addrs, ok := k.unchanged(gw, want, seen); ok {
		return addrs, nil
	}
	a, err := k.apply(ctx, gw)
	if err != nil {
		k.forget(gw.Namespace, gw.Name)
		return nil, err
	}
	a.want = want
	k.remember(gw, a)
	return slices.Clone(a.addrs), nil
}

// apply writes every object of gw and reports what it applied.
func (k *Kubernetes) apply(ctx context.Context, gw Gateway) (applied, error) {
	if err := k.checkNotForeign(ctx, gw.Namespace, gw.Name); err != nil {
		return applied{}, err
	}
	boot, err := k.bootstrap(gw)
	if err != nil {
		return applied{}, err
	}
	if err := k.ensureClientSecret(ctx, gw); err != nil {
		return applied{}, err
	}
	certHash, secretVersion, err := k.clientCertHash(ctx, gw.Namespace)
	if err != nil {
		return applied{}, err
	}
	versions := objectVersions{secretKind: secretVersion}
	svc := k.service(gw)
	for _, obj := range []applyObject{k.serviceAccount(gw), k.configMap(gw, boot), k.deployment(gw, hash(boot), certHash), svc} {
		if err := k.applyObject(ctx, obj); err != nil {
			return applied{}, err
		}
		versions[*obj.GetKind()] = appliedVersion(obj)
	}
	return applied{versions: versions, addrs: serviceAddresses(svc, ResourceName(gw.Name), gw.Namespace)}, nil
}

// Delete deletes the objects Ensure made for the Gateway (the garbage collector would
// too, through the owner references, but not every cluster runs one, envtest among
// them). Objects of those names that Portcullis did not make are left alone.
func (k *Kubernetes) Delete(ctx context.Context, namespace, name string) error {
	k.forget(namespace, name)
	var errs []error
	for _, obj := range k.objects(namespace, name) {
		err := k.api.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		case !managedFor(obj.GetLabels(), namespace, name):
			continue
		}
		err = k.c.Delete(ctx, obj, client.PropagationPolicy("Background"), client.Preconditions{UID: ptr.To(obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", kindOf(obj), namespace, obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// objects are empty objects named like those of the Gateway, in deletion order.
func (k *Kubernetes) objects(namespace, name string) []client.Object {
	key := types.NamespacedName{Namespace: namespace, Name: ResourceName(name)}
	objs := []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}}
	for _, o := range objs {
		o.SetNamespace(key.Namespace)
		o.SetName(key.Name)
	}
	return objs
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Service:
		return "Service"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.ServiceAccount:
		return "ServiceAccount"
	case *corev1.Secret:
		return secretKind
	}
	return fmt.Sprintf("%T", obj)
}

// checkNotForeign refuses to take over an object of the Gateway's names that
// Portcullis did not make for this Gateway.
func (k *Kubernetes) checkNotForeign(ctx context.Context, namespace, name string) error {
	for _, obj := range k.objects(namespace, name) {
		err := k.api.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !managedFor(obj.GetLabels(), namespace, name) {
			return fmt.Errorf("%s %s/%s exists and was not made by Portcullis for Gateway %s/%s; rename or delete it",
				kindOf(obj), namespace, obj.GetName(), namespace, name)
		}
	}
	return nil
}

// applyObject server-side applies obj with the provider's field manager, taking over
// fields another manager changed, and fills obj with the result.
func (k *Kubernetes) applyObject(ctx context.Context, obj applyObject) error {
	if err := k.c.Apply(ctx, obj, client.FieldOwner(k.opts.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", *obj.GetKind(), *obj.GetNamespace(), *obj.GetName(), err)
	}
	return nil
}

// applyObject is an apply configuration of a namespaced object.
type applyObject interface {
	runtime.ApplyConfiguration
	GetKind() *string
	GetName() *string
	GetNamespace() *string
}

// bootstrap is the bootstrap of gw's pods.
func (k *Kubernetes) bootstrap(gw Gateway) ([]byte, error) {
	return podBootstrap{
		gateway:       gw.key(),
		xdsAddress:    k.opts.XDSAddress,
		xdsPort:       k.opts.XDSPort,
		serverName:    k.opts.XDSServerName,
		certDir:       XDSClientDir,
		adminPort:     AdminPort,
		readinessPort: ReadinessPort,
		metricsPort:   MetricsPort,
	}.yaml()
}

// ensureClientSecret has ClientSecrets keep the namespace's Envoy client Secret, with
// the Gateway among its owners.
func (k *Kubernetes) ensureClientSecret(ctx context.Context, gw Gateway) error {
	if k.opts.ClientSecrets == nil {
		return nil
	}
	owner := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: gw.Name, Namespace: gw.Namespace, UID: gw.UID}}
	if err := k.opts.ClientSecrets.EnsureClientSecret(ctx, gw.Namespace, owner); err != nil {
		return fmt.Errorf("the xDS client Secret of namespace %s: %w", gw.Namespace, err)
	}
	return nil
}

// clientCertHash hashes the public part (certificate and CA bundle) of the namespace's
// Envoy client Secret, so that the pods restart to load a renewed certificate. It is
// empty while the Secret does not exist (the pods wait for it). The Secret is read from
// the API server, with its resourceVersion: a client's cache of Secret data would hold
// every Secret of the cluster.
func (k *Kubernetes) clientCertHash(ctx context.Context, namespace string) (hashed, version string, err error) {
	s := &corev1.Secret{}
	err = k.api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: xdscerts.EnvoyClientSecretName}, s)
	if apierrors.IsNotFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read the xDS client Secret of namespace %s: %w", namespace, err)
	}
	return hash(s.Data[xdscerts.CertKey], s.Data[xdscerts.BundleKey]), s.ResourceVersion, nil
}

func hash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (k *Kubernetes) serviceAccount(gw Gateway) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(ResourceName(gw.Name), gw.Namespace).
		WithLabels(labelsOf(gw)).
		WithAnnotations(objectAnnotations(gw)).
		WithOwnerReferences(ownerReference(gw)).
		// Envoy never calls the Kubernetes API.
		WithAutomountServiceAccountToken(false)
}

func (k *Kubernetes) configMap(gw Gateway, boot []byte) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(ResourceName(gw.Name), gw.Namespace).
		WithLabels(labelsOf(gw)).
		WithAnnotations(objectAnnotations(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithData(map[string]string{BootstrapKey: string(boot)})
}

// ownerReference makes the Gateway the controller of an object.
func ownerReference(gw Gateway) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(gwapiv1.GroupVersion.String()).
		WithKind("Gateway").
		WithName(gw.Name).
		WithUID(gw.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
