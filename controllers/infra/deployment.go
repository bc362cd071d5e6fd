package infra

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// Security settings of the Envoy pods: an unprivileged user that owns no file of the
// image, group-readable mounted Secrets (fsGroup), no capability, read-only root.
const (
	envoyUID        int64 = 65532
	containerName         = "envoy"
	bootstrapVolume       = "bootstrap"
	xdsClientVolume       = "xds-client"
)

// Readiness probe timing: a new pod joins the Service within a few seconds of its first
// configuration; three misses take it out.
const (
	probePeriodSeconds    = 5
	probeTimeoutSeconds   = 2
	probeFailureThreshold = 3
	// preStopSeconds is how long a terminating Envoy pod serves on before SIGTERM;
	// well within the 30 s termination grace period.
	preStopSeconds = 5
)

func (k *Kubernetes) deployment(gw Gateway, bootstrapHash, certHash string) *appsv1ac.DeploymentApplyConfiguration {
	annotations := scrapeAnnotations()
	annotations[AnnotationBootstrapHash] = bootstrapHash
	if certHash != "" {
		annotations[AnnotationXDSClientHash] = certHash
	}
	return appsv1ac.Deployment(ResourceName(gw.Name), gw.Namespace).
		WithLabels(labelsOf(gw)).
		WithAnnotations(objectAnnotations(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(k.opts.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(gw.Namespace, gw.Name))).
			// A new pod is ready before an old one goes: no gap with one replica.
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
					WithMaxUnavailable(intstr.FromInt32(0)).
					WithMaxSurge(intstr.FromInt32(1)))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labelsOf(gw)).
				WithAnnotations(podAnnotations(gw, annotations)).
				WithSpec(k.podSpec(gw))))
}

func (k *Kubernetes) podSpec(gw Gateway) *corev1ac.PodSpecApplyConfiguration {
	return corev1ac.PodSpec().
		WithServiceAccountName(ResourceName(gw.Name)).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(envoyUID).
			WithRunAsGroup(envoyUID).
			WithFSGroup(envoyUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(k.container(gw)).
		WithVolumes(
			corev1ac.Volume().WithName(bootstrapVolume).WithConfigMap(corev1ac.ConfigMapVolumeSource().
				WithName(ResourceName(gw.Name)).
				WithDefaultMode(0o440)),
			corev1ac.Volume().WithName(xdsClientVolume).WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(xdscerts.EnvoyClientSecretName).
				WithDefaultMode(0o440)),
		)
}

func (k *Kubernetes) container(gw Gateway) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(containerName).
		WithImage(k.opts.Image).
		WithImagePullPolicy(k.opts.ImagePullPolicy).
		WithCommand("envoy").
		WithArgs(
			"-c", bootstrapDir+"/"+BootstrapKey,
			// The bootstrap is shared by the replicas; each names itself.
			"--service-node", "$(POD_NAME)",
			"--log-level", k.opts.LogLevel,
			"--concurrency", strconv.Itoa(int(k.opts.Concurrency)),
			// Pods are replaced, never hot restarted; no shared memory is needed.
			"--disable-hot-restart",
		).
		WithArgs(bootstrap.LogArgs()...).
		WithEnv(corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(
			corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name")))).
		WithPorts(containerPorts(gw)...).
		// A pod being replaced keeps serving while kube-proxy and the network plugin
		// take it out of the Service: Envoy gets SIGTERM only after preStopSeconds, so
		// no new connection lands on a port nobody listens on.
		WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithSleep(corev1ac.SleepAction().WithSeconds(preStopSeconds)))).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath(ReadinessPath).WithPort(intstr.FromInt32(ReadinessPort))).
			WithPeriodSeconds(probePeriodSeconds).
			WithTimeoutSeconds(probeTimeoutSeconds).
			WithFailureThreshold(probeFailureThreshold)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(k.opts.Resources.Requests).
			WithLimits(k.opts.Resources.Limits)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsNonRoot(true).
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(bootstrapVolume).WithMountPath(bootstrapDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(xdsClientVolume).WithMountPath(XDSClientDir).WithReadOnly(true),
		)
}

// containerPorts lists each Envoy port once, in order, then the readiness and metrics
// ports.
func containerPorts(gw Gateway) []*corev1ac.ContainerPortApplyConfiguration {
	var ports []int32
	for _, l := range gw.Listeners {
		if p := int32(l.EnvoyPort); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	var out []*corev1ac.ContainerPortApplyConfiguration
	for _, p := range ports {
		out = append(out, corev1ac.ContainerPort().WithContainerPort(p).WithProtocol(corev1.ProtocolTCP))
	}
	return append(out,
		corev1ac.ContainerPort().WithName("readiness").WithContainerPort(ReadinessPort).WithProtocol(corev1.ProtocolTCP),
		corev1ac.ContainerPort().WithName("metrics").WithContainerPort(MetricsPort).WithProtocol(corev1.ProtocolTCP))
}
