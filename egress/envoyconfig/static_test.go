package envoyconfig

import (
	"reflect"

	"google.golang.org/protobuf/proto"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestStaticMatchesBuild checks, for every golden case, that the static bootstrap serves
// what the xDS resources serve: once the few delivery differences are taken out (RDS vs
// inline routes, EDS vs inline endpoints, SDS over ADS vs static secrets), listeners,
// routes, clusters, endpoints and secrets are identical.
func TestStaticMatchesBuild(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Build(tc.gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := Static(tc.gw, testOptions, 19000)
			if err != nil {
				t.Fatal(err)
			}
			sr := bs.StaticResources
			checkStaticListeners(t, jsonByName(t, asMessages(sr.Listeners)), jsonByName(t, asMessages(res.Listeners)), jsonByName(t, asMessages(res.Routes)))
			checkStaticClusters(t, jsonByName(t, asMessages(sr.Clusters)), jsonByName(t, asMessages(res.Clusters)), endpointsByCluster(t, res))
			if got, want := jsonByName(t, asMessages(sr.Secrets)), jsonByName(t, asMessages(res.Secrets)); !reflect.DeepEqual(got, want) {
				t.Errorf("static secrets differ from SDS secrets:\n%v\n%v", got, want)
			}
			if n := countKey(toJSONValue(t, bs), "sds_config"); n != 0 {
				t.Errorf("static bootstrap has %d sds_config; static secrets must be referenced by name only", n)
			}
			checkSDSOverADS(t, res, tc.gw)
		})
	}
}

func checkStaticListeners(t *testing.T, static, xds, routes map[string]map[string]any) {
	t.Helper()
	if len(static) != len(xds) {
		t.Fatalf("static has %d listeners, xDS %d", len(static), len(xds))
	}
	for name, sl := range static {
		xl := xds[name]
		shcms, xhcms := hcmsOf(t, sl), hcmsOf(t, xl)
		if len(shcms) != len(xhcms) {
			t.Fatalf("listener %s: %d filter chains static, %d xDS", name, len(shcms), len(xhcms))
		}
		for i, xhcm := range xhcms {
			rds, _ := xhcm["rds"].(map[string]any)
			if rds == nil {
				continue // an inline table in both
			}
			table, _ := rds["route_config_name"].(string)
			inline, _ := shcms[i]["route_config"].(map[string]any)
			if !reflect.DeepEqual(inline, routes[table]) {
				t.Errorf("listener %s chain %d: inline route config differs from RDS route config %q:\n%v\n%v", name, i, table, inline, routes[table])
			}
			delete(shcms[i], "route_config")
			delete(xhcm, "rds")
		}
		stripKey(xl, "sds_config")
		if !reflect.DeepEqual(sl, xl) {
			t.Errorf("listener %s differs beyond route and secret delivery:\n%v\n%v", name, sl, xl)
		}
	}
}

func checkStaticClusters(t *testing.T, static, xds, endpoints map[string]map[string]any) {
	t.Helper()
	if len(static) != len(xds) {
		t.Fatalf("static has %d clusters, xDS %d", len(static), len(xds))
	}
	for name, sc := range static {
		xc := xds[name]
		if sc["type"] != "STATIC" || xc["type"] != "EDS" {
			t.Errorf("cluster %s: types %v (static) and %v (xDS), want STATIC and EDS", name, sc["type"], xc["type"])
		}
		if la, _ := sc["load_assignment"].(map[string]any); !reflect.DeepEqual(la, endpoints[name]) {
			t.Errorf("cluster %s: inline endpoints differ from EDS:\n%v\n%v", name, la, endpoints[name])
		}
		for _, k := range []string{"type", "load_assignment"} {
			delete(sc, k)
		}
		for _, k := range []string{"type", "eds_cluster_config"} {
			delete(xc, k)
		}
		stripKey(xc, "sds_config")
		if !reflect.DeepEqual(sc, xc) {
			t.Errorf("cluster %s differs beyond endpoint and secret delivery:\n%v\n%v", name, sc, xc)
		}
	}
}

// checkSDSOverADS checks that every secret reference of the xDS resources fetches it by SDS
// over ADS, and that the static-only shortcut (a bare name) never leaks into them.
func checkSDSOverADS(t *testing.T, res Resources, gw ir.Gateway) {
	t.Helper()
	secretNames := map[string]bool{}
	for _, s := range gw.Secrets {
		secretNames[s.Name] = true
	}
	refs, withADS := 0, 0
	for _, m := range nonSecretMessages(res) {
		walkMaps(toJSONValue(t, m), func(obj map[string]any) {
			name, _ := obj["name"].(string)
			if !secretNames[name] {
				return
			}
			refs++
			src, _ := obj["sds_config"].(map[string]any)
			if _, ads := src["ads"]; ads && src["resource_api_version"] == "V3" {
				withADS++
			}
		})
	}
	if refs != withADS {
		t.Errorf("%d of %d secret references lack sds_config {ads, V3}", refs-withADS, refs)
	}
}

func hcmOf(t *testing.T, listener map[string]any) map[string]any {
	t.Helper()
	return hcmsOf(t, listener)[0]
}

// hcmsOf returns the connection manager of every filter chain, in order.
func hcmsOf(t *testing.T, listener map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, c := range listener["filter_chains"].([]any) {
		filters := c.(map[string]any)["filters"].([]any)
		out = append(out, filters[0].(map[string]any)["typed_config"].(map[string]any))
	}
	return out
}

func endpointsByCluster(t *testing.T, res Resources) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, cla := range res.Endpoints {
		out[cla.GetClusterName()] = toJSONValue(t, cla).(map[string]any)
	}
	return out
}

// jsonByName renders named messages as JSON objects keyed by their name.
func jsonByName(t *testing.T, msgs []proto.Message) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, m := range msgs {
		obj := toJSONValue(t, m).(map[string]any)
		out[obj["name"].(string)] = obj
	}
	return out
}

// walkMaps calls f on every JSON object in v, depth first.
func walkMaps(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, child := range x {
			walkMaps(child, f)
		}
	case []any:
		for _, child := range x {
			walkMaps(child, f)
		}
	}
}

func stripKey(v any, key string) { walkMaps(v, func(m map[string]any) { delete(m, key) }) }

func countKey(v any, key string) int {
	n := 0
	walkMaps(v, func(m map[string]any) {
		if _, ok := m[key]; ok {
			n++
		}
	})
	return n
}
