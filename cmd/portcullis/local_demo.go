package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/localenv"
	"github.com/portcullis-io/portcullis/internal/localenv/demo"
)

// startDemo starts the demo API and DNS server and points the DNS guard at that
// server, with the loopback exception the demo needs, said loudly.
func startDemo(f *localFlags, out printer) (*demo.Demo, error) {
	listener := int(translate.EnvoyPort(demo.GatewayPort))
	if err := localenv.CheckPortsFree(localenv.Port{Port: listener, What: "the demo Gateway's listener"}); err != nil {
		return nil, err
	}
	// Names other than the demo's go where the guard would have asked.
	upstream, _ := f.manager.guard.Servers()
	d, err := demo.Start(upstream)
	if err != nil {
		return nil, err
	}
	applyDemoGuard(&f.manager.guard.DNSServers, &f.manager.guard.AllowCIDRs, d.DNS.Addr)
	out.block(demoWarning())
	out.linef("demo API https://%s:%d on 127.0.0.1 (its own CA, client certificate required)", demo.Hostname, demo.APIPort)
	out.linef("demo DNS server %s answers %s with 127.0.0.1 and forwards other names to %s", d.DNS.Addr, demo.Hostname, orNone(upstream))
	return d, nil
}

// applyDemoGuard makes the demo DNS server the guard's only server and adds the
// loopback exception.
func applyDemoGuard(servers, allow *[]string, dnsAddr string) {
	*servers = []string{dnsAddr}
	*allow = append(*allow, demo.AllowCIDR)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "(none: they are refused)"
	}
	return strings.Join(list, ", ")
}

// setUpDemo applies the demo's objects and waits until a request through the gateway
// gets the demo API's answer.
func setUpDemo(ctx context.Context, c client.Client, d *demo.Demo, timeout time.Duration, out printer) error {
	objs, err := d.Objects()
	if err != nil {
		return err
	}
	if err := localenv.Apply(ctx, c, objs); err != nil {
		return err
	}
	out.linef("applied samples/demo (namespace %s: Gateway %s, HTTPRoute and Backend %s) with ConfigMap %s (demo CA) and Secret %s (client certificate)",
		demo.Namespace, demo.Gateway, demo.Backend, demo.CAConfigMap, demo.ClientSecret)
	return waitDemo(ctx, c, timeout)
}

// waitDemo polls until the Gateway and the Backend are Programmed and the demo answers
// through Envoy; on timeout it names what was still missing.
func waitDemo(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		last := demoReady(ctx, c)
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo is not ready after %s: %v", timeout, last)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func demoReady(ctx context.Context, c client.Client) error {
	var gw gwapiv1.Gateway
	if err := c.Get(ctx, types.NamespacedName{Namespace: demo.Namespace, Name: demo.Gateway}, &gw); err != nil {
		return err
	}
	if err := conditionsTrue("Gateway "+demo.Namespace+"/"+demo.Gateway, gw.Status.Conditions, "Programmed"); err != nil {
		return err
	}
	var b egressv1alpha1.Backend
	if err := c.Get(ctx, types.NamespacedName{Namespace: demo.Namespace, Name: demo.Backend}, &b); err != nil {
		return err
	}
	if err := conditionsTrue("Backend "+demo.Namespace+"/"+demo.Backend, b.Status.Conditions, "Accepted", "AddressesResolved", "Programmed"); err != nil {
		return err
	}
	return probeDemo(ctx)
}

// conditionsTrue names the first condition that is not True, with its reason and message.
func conditionsTrue(what string, conds []metav1.Condition, types ...string) error {
	for _, t := range types {
		c := meta.FindStatusCondition(conds, t)
		if c == nil {
			return fmt.Errorf("%s has no %s condition yet", what, t)
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("%s: %s=%s (%s: %s)", what, t, c.Status, c.Reason, c.Message)
		}
	}
	return nil
}

// probeDemo sends the README's request through Envoy, without any proxy.
func probeDemo(ctx context.Context) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/hello", translate.EnvoyPort(demo.GatewayPort))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = demo.Hostname
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("request through the gateway: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "hello from ") {
		return fmt.Errorf("request through the gateway: %s: %q", resp.Status, body)
	}
	return nil
}
