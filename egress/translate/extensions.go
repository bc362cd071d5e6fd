package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// extensionSpec is one extension type: its known config keys and how it changes a cluster.
type extensionSpec struct {
	keys  []string
	apply func(c *ir.Cluster, cfg config) error
}

// credentialRef is the credential-injection extension's Secret reference, resolved by
// the caller because reading Secrets is not the parser's job.
type credentialRef struct {
	secret, key, header, prefix string
}

var extensionSpecs = map[string]extensionSpec{
	egressv1alpha1.ExtensionConnectionPool: {
		keys: []string{"idleTimeout", "maxConnections", "maxPendingRequests", "maxRequests", "timeout"},
		apply: func(c *ir.Cluster, cfg config) error {
			cb := &ir.CircuitBreaker{}
			if err := cfg.positiveInts(map[string]*uint32{"maxConnections": &cb.MaxConnections, "maxPendingRequests": &cb.MaxPendingRequests, "maxRequests": &cb.MaxRequests}); err != nil {
				return err
			}
			if *cb != (ir.CircuitBreaker{}) {
				c.CircuitBreaker = cb
			}
			return cfg.durations(map[string]*time.Duration{"timeout": &c.ConnectTimeout, "idleTimeout": &c.IdleTimeout})
		},
	},
	egressv1alpha1.ExtensionCircuitBreaker: {
		keys: []string{"baseEjectionTime", "failureThreshold", "interval", "maxEjectionPercent"},
		apply: func(c *ir.Cluster, cfg config) error {
			od := &ir.OutlierDetection{Consecutive5xx: 5, Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionPercent: 10}
			if err := cfg.positiveInts(map[string]*uint32{"failureThreshold": &od.Consecutive5xx, "maxEjectionPercent": &od.MaxEjectionPercent}); err != nil {
				return err
			}
			if od.MaxEjectionPercent > 100 {
				return fmt.Errorf("config.maxEjectionPercent must be between 1 and 100, not %d", od.MaxEjectionPercent)
			}
			c.OutlierDetector = od
			return cfg.durations(map[string]*time.Duration{"interval": &od.Interval, "baseEjectionTime": &od.BaseEjectionTime})
		},
	},
	egressv1alpha1.ExtensionRequestHeaderModifier: {
		keys: []string{"add", "remove", "set"},
		apply: func(c *ir.Cluster, cfg config) error {
			var m ir.HeaderMutation
			if err := cfg.decode(&m); err != nil {
				return err
			}
			for i := range m.Set {
				m.Set[i].Name = strings.ToLower(m.Set[i].Name)
			}
			for i := range m.Add {
				m.Add[i].Name = strings.ToLower(m.Add[i].Name)
			}
			if err := checkHeaderMutation(&m); err != nil {
				return fmt.Errorf("config.%v", err)
			}
			c.RequestHeaders = &m
			return nil
		},
	},
	egressv1alpha1.ExtensionCredentialInjection: {
		keys:  []string{"header", "key", "prefix", "secretRef"},
		apply: func(*ir.Cluster, config) error { return nil }, // resolved by credentialFor
	},
}

// ExtensionKeys returns the config keys each extension type knows, sorted: the
// documentation users read (kubectl explain, the README) is tested against it.
func ExtensionKeys() map[string][]string {
	out := make(map[string][]string, len(extensionSpecs))
	for name, spec := range extensionSpecs {
		out[name] = slices.Sorted(slices.Values(spec.keys))
	}
	return out
}

// supportedExtensions lists the extension types for messages, sorted.
func supportedExtensions() string {
	names := make([]string, 0, len(extensionSpecs))
	for n := range extensionSpecs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// applyExtensions validates every extension and applies it to the cluster template. A
// returned error carries the Accepted reason (UnsupportedExtension or Invalid) and names
// the field.
func applyExtensions(c *ir.Cluster, exts []egressv1alpha1.BackendExtension) (*credentialRef, *refError) {
	var cred *credentialRef
	for i, e := range exts {
		spec, ok := extensionSpecs[e.Type]
		if !ok {
			return nil, newRefError(egressv1alpha1.ReasonUnsupportedExtension, "spec.extensions[%d].type %s is not supported; supported: %s", i, e.Type, supportedExtensions())
		}
		cfg, err := parseConfig(e)
		if err != nil {
			return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.extensions[%d].config: %v", i, err)
		}
		if unknown := cfg.unknownKeys(spec.keys); len(unknown) > 0 {
			return nil, newRefError(egressv1alpha1.ReasonUnsupportedExtension, "spec.extensions[%d].config.%s is not a setting of %s; known: %s", i, unknown[0], e.Type, strings.Join(spec.keys, ", "))
		}
		if err := spec.apply(c, cfg); err != nil {
			return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.extensions[%d] (%s): %v", i, e.Type, err)
		}
		if e.Type == egressv1alpha1.ExtensionCredentialInjection {
			if cred, err = parseCredential(cfg); err != nil {
				return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.extensions[%d] (%s): %v", i, e.Type, err)
			}
		}
	}
	return cred, nil
}

func parseCredential(cfg config) (*credentialRef, error) {
	var raw struct {
		SecretRef struct {
			Name string `json:"name"`
		} `json:"secretRef"`
		Key    string `json:"key"`
		Header string `json:"header"`
		Prefix string `json:"prefix"`
	}
	if err := cfg.decode(&raw); err != nil {
		return nil, err
	}
	if raw.SecretRef.Name == "" || raw.Key == "" {
		return nil, fmt.Errorf("config.secretRef.name and config.key are required")
	}
	if raw.Header == "" {
		raw.Header = "Authorization"
	}
	if err := checkMutableHeaderName(raw.Header); err != nil {
		return nil, fmt.Errorf("config.header: %v", err)
	}
	if err := checkHeaderValue(raw.Prefix); err != nil {
		return nil, fmt.Errorf("config.prefix: %v", err)
	}
	return &credentialRef{secret: raw.SecretRef.Name, key: raw.Key, header: strings.ToLower(raw.Header), prefix: raw.Prefix}, nil
}

// config is an extension's free-form settings.
type config struct {
	raw    []byte
	fields map[string]json.RawMessage
}

func parseConfig(e egressv1alpha1.BackendExtension) (config, error) {
	c := config{raw: []byte("{}"), fields: map[string]json.RawMessage{}}
	if e.Config == nil || len(e.Config.Raw) == 0 {
		return c, nil
	}
	c.raw = e.Config.Raw
	if err := json.Unmarshal(c.raw, &c.fields); err != nil {
		return c, fmt.Errorf("must be an object: %v", err)
	}
	return c, nil
}

func (c config) unknownKeys(known []string) []string {
	var out []string
	for k := range c.fields {
		if !contains(known, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (c config) decode(into any) error {
	dec := json.NewDecoder(strings.NewReader(string(c.raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("config does not match the expected shape: %v", err)
	}
	return nil
}

func (c config) positiveInts(into map[string]*uint32) error {
	for key, dst := range into {
		raw, ok := c.fields[key]
		if !ok {
			continue
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > 1<<31 {
			return fmt.Errorf("config.%s must be a whole number of at least 1, not %s", key, raw)
		}
		*dst = uint32(n)
	}
	return nil
}

func (c config) durations(into map[string]*time.Duration) error {
	for key, dst := range into {
		raw, ok := c.fields[key]
		if !ok {
			continue
		}
		var s string
		d, err := time.Duration(0), json.Unmarshal(raw, &s)
		if err == nil {
			d, err = time.ParseDuration(s)
		}
		if err != nil || d <= 0 {
			return fmt.Errorf("config.%s must be a positive duration such as 30s, not %s", key, raw)
		}
		*dst = d
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
