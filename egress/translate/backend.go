package translate

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// translatedBackend is one Backend's clusters (one per HTTP, HTTPS or TLS port) and what
// its status needs. It does not depend on the Gateway, so it is computed once.
type translatedBackend struct {
	b    *egressv1alpha1.Backend
	dest destination
	// problem makes Accepted=False; refProblem makes ResolvedRefs=False. Either makes the
	// Backend unusable: routes send its share of traffic to a 500.
	problem, refProblem *refError
	ports               []portCluster // one per HTTP, HTTPS or TLS port
	effective           *egressv1alpha1.EffectiveTLS
	ignoredMsg          string
	referenced          bool
	// tunneled: a forward proxy opens CONNECT tunnels to the Backend.
	tunneled bool
	// streamed: TLSRoutes or TCPRoutes pass connections through to the Backend.
	streamed bool
	// portProblem is the first backendRef that named a port the Backend cannot serve.
	portProblem *refError
	// name is the Backend's "namespace/name" once key computed it.
	name string
	// gateways are the Gateways whose routes use the Backend, in translation order.
	gateways []string
	// unit is the unit the translation is (units.go), nil when it is not kept.
	unit *unitEntry[backendUnit]
}

// portCluster is the cluster of one Backend port, the secrets it needs and the policy
// that set its TLS, if any.
type portCluster struct {
	port    string
	cluster *ir.Cluster
	secrets []ir.Secret
	policy  *gwapiv1.BackendTLSPolicy
}

// port returns the cluster of a port by name (a Backend has at most 16 ports).
func (tb *translatedBackend) port(name string) *portCluster {
	for i := range tb.ports {
		if tb.ports[i].port == name {
			return &tb.ports[i]
		}
	}
	return nil
}

func (tb *translatedBackend) usable() bool { return tb.problem == nil && tb.refProblem == nil }

// fail files an error under Accepted or ResolvedRefs by its reason.
func (tb *translatedBackend) fail(e *refError) {
	switch e.reason {
	case egressv1alpha1.ReasonInvalidCertificateRef, egressv1alpha1.ReasonInvalidCACertificateRef,
		egressv1alpha1.ReasonServiceNotFound, egressv1alpha1.ReasonInvalidCredentialRef:
		if tb.refProblem == nil {
			tb.refProblem = e
		}
	default:
		if tb.problem == nil {
			tb.problem = e
		}
	}
}

// translateBackend validates a Backend and builds its clusters, once per translation,
// reusing an earlier translation's unit from the Cache when nothing it read changed.
func (t *translator) translateBackend(s *backendSlot) *translatedBackend {
	if s.tb != nil {
		return s.tb
	}
	outside := t.validUntil
	t.validUntil = time.Time{}
	defer func() { s.until, t.validUntil = t.validUntil, outside }()
	if tb := t.reuseBackend(s.name, s.b); tb != nil {
		s.tb = tb
		return tb
	}
	if !unitDestination(destinationOf(s.b)) {
		return t.buildBackend(s)
	}
	return t.buildBackendUnit(s)
}

// buildBackend translates a Backend.
func (t *translator) buildBackend(s *backendSlot) *translatedBackend {
	b := s.b
	tb := &translatedBackend{b: b, dest: destinationOf(b)}
	s.tb = tb
	template := ir.Cluster{}
	if e := applyProtocol(&template, tb.dest.protocol, tb.dest.field+".protocol"); e != nil {
		tb.fail(e)
		return tb
	}
	cred, e := applyExtensions(&template, b.Spec.Extensions)
	if e != nil {
		tb.fail(e)
		return tb
	}
	if e := t.resolveDestination(b, &tb.dest); e != nil {
		tb.fail(e)
		return tb
	}
	var credSecret *ir.Secret
	if cred != nil {
		if credSecret, e = t.credentialSecret(b, cred, &template); e != nil {
			tb.fail(e)
			return tb
		}
	}
	for _, port := range b.Spec.Destination.Ports {
		if port.Protocol == egressv1alpha1.PortProtocolTCP {
			continue
		}
		if e := t.buildBackendCluster(tb, template, port, credSecret); e != nil {
			tb.fail(e)
			return tb
		}
	}
	return tb
}

// buildBackendCluster builds the cluster of one Backend port.
func (t *translator) buildBackendCluster(tb *translatedBackend, template ir.Cluster, port egressv1alpha1.BackendPort, cred *ir.Secret) *refError {
	in := tlsInput{backend: tb.b, inline: tb.dest.tls, port: port, defaultSNI: tb.dest.sni}
	if tb.dest.service != nil && tb.dest.service.Spec.Type != corev1.ServiceTypeExternalName {
		in.service, in.servicePort = &tb.dest.svcName, servicePortName(tb.dest.service, port.Port)
	}
	outcome, e := t.backendTLS(in)
	if e != nil {
		return e
	}
	eps, e := t.endpoints(tb.dest, port)
	if e != nil {
		return e
	}
	c := template
	c.Name = "backend/" + nameOf(tb.b).String() + "/" + port.Name
	c.Origin = ir.ClusterOrigin{Kind: ir.OriginBackend, Namespace: tb.b.Namespace, Name: tb.b.Name, Port: uint32(port.Port)}
	c.Endpoints, c.TLS = eps, outcome.tls
	secrets := outcome.secrets
	if cred != nil {
		secrets = append(secrets, *cred)
	}
	pc := portCluster{port: port.Name, cluster: &c, secrets: secrets, policy: outcome.policy}
	if existing := tb.port(port.Name); existing != nil {
		*existing = pc // a repeated port name: the last one wins, as it always did
	} else {
		tb.ports = append(tb.ports, pc)
	}
	if outcome.policy != nil {
		tb.ignoredMsg = ignoredMessage(outcome)
	}
	if tb.effective == nil {
		tb.effective = outcome.effective
	}
	return nil
}

// credentialSecret reads the credential-injection Secret into a Generic secret holding
// the whole header value; only SDS ever carries it to Envoy. A value with a line break
// (often a trailing newline from a file) is refused rather than trimmed: sent as is it
// would end the header and start another.
func (t *translator) credentialSecret(b *egressv1alpha1.Backend, cred *credentialRef, c *ir.Cluster) (*ir.Secret, *refError) {
	ref := types.NamespacedName{Namespace: b.Namespace, Name: cred.secret}
	value, e := t.objectValue(ref, "Secret", cred.key, egressv1alpha1.ReasonInvalidCredentialRef)
	if e != nil {
		e.msg = "credential-injection: " + e.msg
		return nil, e
	}
	header := append([]byte(cred.prefix), value...)
	if err := checkHeaderValue(string(header)); err != nil {
		// The message never quotes the value: it is a credential.
		return nil, newRefError(egressv1alpha1.ReasonInvalidCredentialRef, "credential-injection: Secret %s key %q: as the %s header, %v", ref, cred.key, cred.header, err)
	}
	s := ir.Secret{Name: "credential/" + nameOf(b).String(), Kind: ir.SecretGeneric, Value: header}
	c.Credential = &ir.Credential{Header: cred.header, Secret: s.Name}
	return &s, nil
}

// backendRef resolves an HTTPRoute backendRef to a Backend into the cluster of the chosen port.
func (t *translator) backendRef(g *gatewayContext, n types.NamespacedName, port *gwapiv1.PortNumber) (*ir.Cluster, []ir.Secret, *refError) {
	s, ok := t.backends[n]
	if !ok {
		return nil, nil, newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Backend %s not found", n)
	}
	t.recordAncestorsForBackend(n, g.gw)
	tb := t.translateBackend(s)
	p, e := pickBackendPort(tb.b, port)
	if e != nil {
		// A ref to a port the Backend cannot serve programs nothing: it does not make
		// the Backend referenced, and the Backend's Programmed says so when no other
		// ref does.
		if tb.portProblem == nil {
			tb.portProblem = e
		}
		return nil, nil, e
	}
	tb.referenced = true
	t.noteBackendGateway(tb, g.out.Name)
	if tb.dest.service != nil {
		t.recordAncestorsForService(tb.dest.svcName, g.gw)
	}
	if !tb.usable() {
		cause := tb.problem
		if cause == nil {
			cause = tb.refProblem
		}
		return nil, nil, newRefError(ReasonInvalidBackend, "Backend %s cannot be used (%s): %s", n, cause.reason, cause.msg)
	}
	pc := tb.port(p.Name)
	return pc.cluster, pc.secrets, nil
}

// pickBackendPort finds the port an HTTPRoute's backendRef names. TCP ports cannot carry
// an HTTPRoute.
func pickBackendPort(b *egressv1alpha1.Backend, port *gwapiv1.PortNumber) (egressv1alpha1.BackendPort, *refError) {
	found, e := findBackendPort(b, port)
	if e != nil {
		return egressv1alpha1.BackendPort{}, e
	}
	if found.Protocol == egressv1alpha1.PortProtocolTCP {
		return egressv1alpha1.BackendPort{}, newRefError(ReasonInvalidBackend, "Backend %s port %d is TCP; an HTTPRoute needs an HTTP, HTTPS or TLS port", nameOf(b), found.Port)
	}
	return *found, nil
}

// findBackendPort finds the port a backendRef names; it may be omitted when the Backend
// has exactly one port.
func findBackendPort(b *egressv1alpha1.Backend, port *gwapiv1.PortNumber) (*egressv1alpha1.BackendPort, *refError) {
	ports := b.Spec.Destination.Ports
	switch {
	case port == nil && len(ports) == 1:
		return &ports[0], nil
	case port == nil:
		return nil, newRefError(ReasonInvalidBackend, "Backend %s has %d ports; set backendRef.port", nameOf(b), len(ports))
	}
	var found *egressv1alpha1.BackendPort
	for i := range ports {
		if ports[i].Port == int32(*port) {
			found = &ports[i]
		}
	}
	if found == nil {
		return nil, newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Backend %s has no port %d (its ports: %s)", nameOf(b), *port, portsSummary(b))
	}
	return found, nil
}

// noteBackendGateway records that a Gateway's routes use the Backend; the Backend's
// statuses, once every Gateway is translated, file the list under the Backend's key.
func (t *translator) noteBackendGateway(tb *translatedBackend, gwKey string) {
	if !slices.Contains(tb.gateways, gwKey) {
		tb.gateways = append(tb.gateways, gwKey)
	}
}

// fileBackendGateways puts the Gateways that use the Backend into the Result.
func (t *translator) fileBackendGateways(tb *translatedBackend) {
	if len(tb.gateways) == 0 {
		return
	}
	if t.result.BackendGateways == nil {
		t.result.BackendGateways = make(map[string][]string, len(t.backends))
	}
	t.result.BackendGateways[tb.key()] = tb.gateways
}

// key is the Backend's "namespace/name", computed once per translation.
func (tb *translatedBackend) key() string {
	if tb.name == "" {
		tb.name = nameOf(tb.b).String()
	}
	return tb.name
}
