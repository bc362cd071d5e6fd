package infra

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestResourceName(t *testing.T) {
	long := strings.Repeat("a", 60)
	tests := []struct {
		name    string
		gateway string
		want    string // empty: only validity and uniqueness are checked
	}{
		{"a short name is prefixed", "egress", "portcullis-egress"},
		{"a name that just fits is kept", strings.Repeat("b", 52), "portcullis-" + strings.Repeat("b", 52)},
		{"a dotted name loses its dots and gains a hash", "egress.team-a", ""},
		{"a name with a dash where another has a dot stays distinct", "egress-team-a", "portcullis-egress-team-a"},
		{"a long name is cut and gains a hash", long + "-one", ""},
		{"another long name with the same start gets another name", long + "-two", ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResourceName(tt.gateway)
			if tt.want != "" && got != tt.want {
				t.Errorf("ResourceName(%q) = %q, want %q", tt.gateway, got, tt.want)
			}
			if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
				t.Errorf("ResourceName(%q) = %q is not a valid Service name: %v", tt.gateway, got, errs)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("%q and %q share the name %q", other, tt.gateway, got)
			}
			seen[got] = tt.gateway
		})
	}
}

func TestLabelValue(t *testing.T) {
	tests := []struct {
		name     string
		gateway  string
		wantSame bool
	}{
		{"a name of up to 63 characters is the label value", "egress.team-a", true},
		{"a longer name is cut and gains a hash", strings.Repeat("c", 100), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LabelValue(tt.gateway)
			if (got == tt.gateway) != tt.wantSame {
				t.Errorf("LabelValue(%q) = %q", tt.gateway, got)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Errorf("LabelValue(%q) = %q is not a label value: %v", tt.gateway, got, errs)
			}
		})
	}
}

func TestServiceAddresses(t *testing.T) {
	tests := []struct {
		name string
		spec *corev1ac.ServiceSpecApplyConfiguration
		want []string
	}{
		{"a single-stack Service gives its cluster IP", corev1ac.ServiceSpec().WithClusterIP("10.0.0.7").WithClusterIPs("10.0.0.7"),
			[]string{"IPAddress 10.0.0.7"}},
		{"a dual-stack Service gives both cluster IPs", corev1ac.ServiceSpec().WithClusterIP("10.0.0.7").WithClusterIPs("10.0.0.7", "fd00::7"),
			[]string{"IPAddress 10.0.0.7", "IPAddress fd00::7"}},
		{"a headless Service gives its DNS name", corev1ac.ServiceSpec().WithClusterIP("None").WithClusterIPs("None"),
			[]string{"Hostname portcullis-egress.team-a.svc"}},
		{"a Service without an IP yet gives its DNS name", corev1ac.ServiceSpec(),
			[]string{"Hostname portcullis-egress.team-a.svc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := corev1ac.Service("portcullis-egress", "team-a").WithSpec(tt.spec)
			got := addressStrings(serviceAddresses(svc, "portcullis-egress", "team-a"))
			if !slices.Equal(got, tt.want) {
				t.Errorf("addresses = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGatewayOf(t *testing.T) {
	gw := &gwapiv1.Gateway{Spec: gwapiv1.GatewaySpec{Listeners: []gwapiv1.Listener{
		{Name: "http", Port: 80}, {Name: "https", Port: 443}, {Name: "high", Port: 8443},
	}}}
	gw.Name, gw.Namespace, gw.UID = "egress", "team-a", "uid-1"
	got := GatewayOf(gw)
	want := []Listener{{"http", 80, 10080}, {"https", 443, 10443}, {"high", 8443, 8443}}
	if got.key() != "team-a/egress" || got.UID != "uid-1" || !slices.Equal(got.Listeners, want) {
		t.Fatalf("GatewayOf = %+v", got)
	}
}

func TestNewKubernetesRefuses(t *testing.T) {
	tests := []struct {
		name string
		opts KubernetesOptions
	}{
		{"no xDS address", KubernetesOptions{XDSPort: 18000}},
		{"no xDS port", KubernetesOptions{XDSAddress: testXDSName}},
		{"an xDS IP address without a server name to verify", KubernetesOptions{XDSAddress: "10.0.0.9", XDSPort: 18000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewKubernetes(nil, tt.opts); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
