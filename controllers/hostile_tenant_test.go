package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// hostileDeadline is how soon tenant B's change must be seen in traffic, whatever
// tenant A wrote.
const hostileDeadline = 2 * time.Second

// TestHostileTenantHoldsNoOneBack: for each way a tenant found to freeze a whole
// Gateway, tenant A does it on a shared Gateway, then tenant B deletes a route and
// rotates the token its Backend injects. B's change reaches Envoy within
// hostileDeadline, and A's object carries a condition naming what is wrong. A's objects
// stay, so each later case runs with every earlier trigger still there.
//
// The NACK case needs something Envoy rejects that translation lets through. Each such
// value found is refused at translation (that is the fix), so none can stay in a test:
// a test-only hook (mutateForTest) gives A's route a regex Envoy cannot compile, the
// cluster of a Backend with a 7s connect timeout a negative one (which the xDS server's
// proto checks refuse) and that of a Backend with a 9s one a static address Envoy
// cannot parse, after translation. Nothing in production sets the hook.
func TestHostileTenantHoldsNoOneBack(t *testing.T) {
	routes := poisonRoutes(map[string]bool{"hostile-a/nacked": true})
	mutateForTest = func(gw string, res envoyconfig.Resources) envoyconfig.Resources {
		return poisonClusters(gw, routes(gw, res))
	}
	t.Cleanup(func() { mutateForTest = nil })
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("hostile-gw/egress")
	up := testupstream.Start(t, testupstream.Options{Name: "tenant-b"})
	w.dns.Set("api.b.test", "api.b.test. 60 IN A 127.0.0.1")
	w.apply(egressGatewayYAML("hostile-gw", w.port, "All") + hostileTenantsYAML(up.Port()))
	waitAnswer(t, w.port, hostAddr, "keep.b.test", 200, "hello from tenant-b")

	for i, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			w := w.in(t)
			doomed := fmt.Sprintf("doomed-%d", i)
			w.apply(hostileRouteYAML("hostile-b", doomed, doomed+".b.test", "api"))
			waitAnswer(t, w.port, hostAddr, doomed+".b.test", 200, "hello from tenant-b")

			w.apply(tc.yaml)
			waitWants(t, w, tc.wants, 30*time.Second)
			if tc.refused.host != "" {
				waitAnswer(t, w.port, hostAddr, tc.refused.host, 503, tc.refused.body)
			}

			token := fmt.Sprintf("token-%d", i)
			start := time.Now()
			route := &gwapiv1.HTTPRoute{}
			route.Namespace, route.Name = "hostile-b", doomed
			if err := w.c.Delete(context.Background(), route); err != nil {
				t.Fatal(err)
			}
			bump(t, w, &corev1.Secret{}, types.NamespacedName{Namespace: "hostile-b", Name: "token"}, func(o client.Object) {
				o.(*corev1.Secret).Data = map[string][]byte{"token": []byte(token)}
			})
			deleted, rotated := waitTenantB(t, w.port, up, doomed+".b.test", "Bearer "+token, start)
			t.Logf("%s: B's route deletion served after %s, its rotated token after %s",
				tc.name, deleted.Round(time.Millisecond), rotated.Round(time.Millisecond))
		})
	}
}

type hostileCase struct {
	name  string
	yaml  string
	wants []want
	// refused, when set, is A's host that must answer 503 with this body: A's own
	// route to the object left out.
	refused struct{ host, body string }
}

func hostileCases() []hostileCase {
	const ns = "hostile-a"
	route := func(name string) want { return on("HTTPRoute", ns, name).at("egress") }
	return []hostileCase{{
		name:  "a path regex that does not compile",
		yaml:  hostileRegexRouteYAML("unclosed", "/(unclosed"),
		wants: []want{route("unclosed").is("Accepted=False/UnsupportedValue").with("rules[0].matches[0].path.value", "missing closing )")},
	}, {
		name:  "a path regex over Envoy's RE2 program size",
		yaml:  hostileRegexRouteYAML("huge", "/[a-z]{1,1000}x"),
		wants: []want{route("huge").is("Accepted=False/UnsupportedValue").with("rules[0].matches[0].path.value", "too large")},
	}, {
		name: "a credential header name with a space",
		yaml: `
apiVersion: v1
kind: Secret
metadata: {name: a-token, namespace: hostile-a}
stringData: {token: a}
---` + hostileBackendYAML("bad-header", `{type: portcullis.io/credential-injection, config: {secretRef: {name: a-token}, key: token, header: "bad header"}}`) +
			hostileRouteYAML(ns, "bad-header", "bad-header.a.test", "bad-header"),
		wants: []want{on("Backend", ns, "bad-header").is("Accepted=False/Invalid").with("config.header", `"bad header" is not a valid header name`)},
	}, {
		name: "an EndpointSlice of addressType FQDN on a Service a route uses",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: names, namespace: hostile-a}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: names-1, namespace: hostile-a, labels: {kubernetes.io/service-name: names}}
addressType: FQDN
ports: [{name: http, port: 80}]
endpoints:
- addresses: [metadata.google.internal]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: names, namespace: hostile-a}
spec:
  destination:
    type: Service
    kubernetesService: {name: names}
    ports: [{name: http, port: 80, protocol: HTTP}]
---` + hostileRouteYAML(ns, "names", "names.a.test", "names"),
		wants: []want{on("Backend", ns, "names").is("Accepted=False/ForbiddenDestination").with("addressType FQDN")},
	}, {
		name:  "a route Envoy rejects (NACK)",
		yaml:  hostileRouteYAML(ns, "nacked", "nacked.a.test", "a-api"),
		wants: []want{route("nacked").is("Accepted=False/UnsupportedValue").with("Envoy rejected the configuration of this route", "(unclosed")},
	}, {
		name:    "a Backend whose cluster fails the proto constraints",
		yaml:    hostileTimedBackendYAML("invalid", "7s"),
		wants:   []want{on("Backend", ns, "invalid").is("Programmed=False/Rejected").with("could not be built", "ConnectTimeout")},
		refused: struct{ host, body string }{"invalid-backend.a.test", "Envoy could not take the configuration of this destination"},
	}, {
		name:    "a Backend Envoy rejects (NACK)",
		yaml:    hostileTimedBackendYAML("nacked", "9s"),
		wants:   []want{on("Backend", ns, "nacked").is("Programmed=False/Rejected").with("Envoy rejected this Backend's new settings")},
		refused: struct{ host, body string }{"nacked-backend.a.test", "no healthy upstream"},
	}}
}

// hostileTimedBackendYAML is A's Backend name with a connect timeout (poisonClusters'
// marker) and a route to it.
func hostileTimedBackendYAML(name, timeout string) string {
	return hostileBackendYAML(name, "{type: portcullis.io/connection-pool, config: {timeout: "+timeout+"}}") +
		hostileRouteYAML("hostile-a", name+"-backend", name+"-backend.a.test", name)
}

// hostileBackendYAML is A's Backend name to api.b.test:80 with one extension, and a
// document separator.
func hostileBackendYAML(name, extension string) string {
	return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %s, namespace: hostile-a}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.b.test}
    ports: [{name: http, port: 80, protocol: HTTP}]
  extensions: [%s]
---`, name, extension)
}

// waitTenantB waits until B's deleted route answers "no route" and its upstream sees the
// new token, failing after hostileDeadline; it returns when each was first seen.
func waitTenantB(t *testing.T, port uint32, up *testupstream.Server, doomedHost, authorization string, start time.Time) (deleted, rotated time.Duration) {
	t.Helper()
	for deleted == 0 || rotated == 0 {
		if time.Since(start) > hostileDeadline {
			t.Fatalf("after %s: route deletion seen after %s, token rotation after %s (0: not yet); want both within %s",
				time.Since(start).Round(time.Millisecond), deleted, rotated, hostileDeadline)
		}
		if deleted == 0 && answerIs(hostAddr, port, doomedHost, 403, "denied: no route") == nil {
			deleted = time.Since(start)
		}
		if rotated == 0 && answerIs(hostAddr, port, "keep.b.test", 200, "hello from tenant-b") == nil {
			seen := up.Requests()
			if seen[len(seen)-1].Header.Get("Authorization") == authorization {
				rotated = time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return deleted, rotated
}

// hostileTenantsYAML: tenant B's Backend injects a token; tenant A has a Backend to the
// same service.
func hostileTenantsYAML(port uint32) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: hostile-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: hostile-b}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: a-api, namespace: hostile-a}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.b.test}
    ports: [{name: http, port: %[1]d, protocol: HTTP}]
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: hostile-b}
stringData: {token: token-initial}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: hostile-b}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.b.test}
    ports: [{name: http, port: %[1]d, protocol: HTTP}]
  extensions:
  - type: portcullis.io/credential-injection
    config: {secretRef: {name: token}, key: token, prefix: "Bearer "}
---`, port) + hostileRouteYAML("hostile-b", "keep", "keep.b.test", "api")
}

func hostileRouteYAML(ns, name, host, backend string) string {
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: %s}
spec:
  parentRefs: [{name: egress, namespace: hostile-gw}]
  hostnames: [%s]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: %s}]}]
`, name, ns, host, backend)
}

func hostileRegexRouteYAML(name, regex string) string {
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: hostile-a}
spec:
  parentRefs: [{name: egress, namespace: hostile-gw}]
  hostnames: [%s.a.test]
  rules: [{matches: [{path: {type: RegularExpression, value: %q}}], backendRefs: [{group: egress.portcullis.io, kind: Backend, name: a-api}]}]
`, name, name, regex)
}

// poisonClusters is a mutateForTest that breaks clusters by their connect timeout, in
// copies: 7s becomes negative (the proto constraints refuse it), 9s turns the cluster
// HTTP protocol options of the wrong type (only Envoy refuses that).
const httpProtocolOptions = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

func poisonClusters(_ string, res envoyconfig.Resources) envoyconfig.Resources {
	clusters := make([]*clusterv3.Cluster, len(res.Clusters))
	for i, c := range res.Clusters {
		clusters[i] = c
		switch c.GetConnectTimeout().AsDuration() {
		case 7 * time.Second:
			clusters[i] = proto.Clone(c).(*clusterv3.Cluster)
			clusters[i].ConnectTimeout = durationpb.New(-time.Second)
		case 9 * time.Second:
			wrong, err := anypb.New(&clusterv3.Cluster{Name: "not protocol options"})
			if err != nil {
				panic(err)
			}
			clusters[i] = proto.Clone(c).(*clusterv3.Cluster)
			clusters[i].TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOptions: wrong}
		}
	}
	res.Clusters = clusters
	return res
}

// poisonRoutes is a mutateForTest that gives the routes of the named HTTPRoutes a path
// regex Envoy's RE2 refuses, in copies of the route tables (published resources are
// shared with the build cache).
func poisonRoutes(httpRoutes map[string]bool) func(string, envoyconfig.Resources) envoyconfig.Resources {
	return func(_ string, res envoyconfig.Resources) envoyconfig.Resources {
		routes := make([]*routev3.RouteConfiguration, len(res.Routes))
		for i, rc := range res.Routes {
			routes[i] = rc
			var poisoned *routev3.RouteConfiguration
			for j, vh := range rc.GetVirtualHosts() {
				for k, r := range vh.GetRoutes() {
					if !httpRoutes[ir.HTTPRouteOf(r.GetName())] {
						continue
					}
					if poisoned == nil {
						poisoned = proto.Clone(rc).(*routev3.RouteConfiguration)
					}
					poisoned.VirtualHosts[j].Routes[k].Match.PathSpecifier = &routev3.RouteMatch_SafeRegex{
						SafeRegex: &matcherv3.RegexMatcher{Regex: "/(unclosed"}}
				}
			}
			if poisoned != nil {
				routes[i] = poisoned
			}
		}
		res.Routes = routes
		return res
	}
}
