package differential

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"
)

// The normalisations, applied alike to both servers' objects, drop or mask
// what differs between any two runs of the same server:
//
//   - metadata.uid, metadata.resourceVersion, metadata.creationTimestamp,
//     and a Status's details.uid: assigned per object and write;
//   - metadata.deletionTimestamp: the time of the delete, kept as "<time>"
//     so its presence still counts;
//   - metadata.managedFields[].time: the time of each manager's write; and
//     with it the entries' order, which upstream's field manager sorts by
//     operation, then the second of the write, then manager, API version
//     and subresource. Two writes that straddle a second boundary on one
//     server and not on the other swap places, so the entries are put in
//     that order without the time;
//   - a list's metadata.resourceVersion and continue token, and every item
//     but the case's object (the servers hold different other objects);
//   - timestamps the servers set in status (lastTransitionTime,
//     lastHeartbeatTime, lastProbeTime, lastUpdateTime, startTime,
//     firstTimestamp, lastTimestamp, eventTime, a PersistentVolume's
//     lastPhaseTransitionTime), kept as "<time>";
//   - names generated with a random suffix (kube-api-access-XXXXX, the
//     ServiceAccount admission plugin's token volume), kept as the prefix
//     and "<random>";
//   - addresses and ports allocated from a range (a Service's clusterIP,
//     clusterIPs, ports[].nodePort, healthCheckNodePort), kept as
//     "<allocated>".
var generatedName = regexp.MustCompile(`^(kube-api-access-)[a-z0-9]{5}$`)

var serverTimes = map[string]bool{
	"lastTransitionTime": true, "lastHeartbeatTime": true, "lastProbeTime": true, "lastUpdateTime": true,
	"startTime": true, "firstTimestamp": true, "lastTimestamp": true, "eventTime": true,
	"lastPhaseTransitionTime": true,
}

var allocated = map[string]bool{"clusterIP": true, "clusterIPs": true, "nodePort": true, "healthCheckNodePort": true}

// normaliseObject normalises one object (not a list).
func normaliseObject(obj map[string]any) any {
	if details, ok := obj["details"].(map[string]any); ok && obj["kind"] == "Status" {
		delete(details, "uid")
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "uid")
		delete(md, "resourceVersion")
		delete(md, "creationTimestamp")
		if _, ok := md["deletionTimestamp"]; ok {
			md["deletionTimestamp"] = "<time>"
		}
		if mf, ok := md["managedFields"].([]any); ok {
			normaliseManagedFields(mf)
		}
	}
	return maskValues(obj, "")
}

// normaliseManagedFields drops each entry's time and sorts the entries as
// upstream's field manager does, less the time.
func normaliseManagedFields(mf []any) {
	for _, e := range mf {
		if m, ok := e.(map[string]any); ok {
			delete(m, "time")
		}
	}
	key := func(e any) [4]string {
		m, _ := e.(map[string]any)
		var k [4]string
		for i, f := range []string{"operation", "manager", "apiVersion", "subresource"} {
			k[i], _ = m[f].(string)
		}
		return k
	}
	sort.SliceStable(mf, func(i, j int) bool {
		a, b := key(mf[i]), key(mf[j])
		return slices.Compare(a[:], b[:]) < 0
	})
}

// normaliseList keeps a list's type and the items named name.
func normaliseList(name string) func(map[string]any) any {
	return func(list map[string]any) any {
		out := map[string]any{"apiVersion": list["apiVersion"], "kind": list["kind"]}
		items, _ := list["items"].([]any)
		var kept []any
		for _, it := range items {
			m, _ := it.(map[string]any)
			md, _ := m["metadata"].(map[string]any)
			if md["name"] == name {
				kept = append(kept, normaliseObject(m))
			}
		}
		out["items"] = kept
		return out
	}
}

// maskValues replaces server-set times, generated names and allocated
// addresses below v (key is v's key in its parent).
func maskValues(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskValues(e, k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskValues(e, key)
		}
		return x
	case string:
		switch {
		case serverTimes[key] && x != "":
			return "<time>"
		case allocated[key] && x != "" && x != "None":
			return "<allocated>"
		case generatedName.MatchString(x):
			return generatedName.FindStringSubmatch(x)[1] + "<random>"
		}
		return x
	case float64:
		if allocated[key] {
			return "<allocated>"
		}
		return x
	}
	return v
}

// Two servers that wrote the same entries, one across a second boundary,
// normalise to the same list; entries that differ in more than time do not.
func TestNormaliseManagedFieldsIgnoresWriteSecond(t *testing.T) {
	entry := func(manager, subresource, time string) any {
		m := map[string]any{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": time}
		if subresource != "" {
			m["subresource"] = subresource
		}
		return m
	}
	sameSecond := []any{entry("kubectl", "", "2026-12-05T22:05:31Z"), entry("kubectl", "status", "2026-12-05T22:05:31Z")}
	nextSecond := []any{entry("kubectl", "status", "2026-12-05T22:05:31Z"), entry("kubectl", "", "2026-12-05T22:05:32Z")}
	normaliseManagedFields(sameSecond)
	normaliseManagedFields(nextSecond)
	if !reflect.DeepEqual(sameSecond, nextSecond) {
		t.Fatalf("entries written in one second and across two normalise differently:\n%v\n%v", sameSecond, nextSecond)
	}
	other := []any{entry("kubectl", "", ""), entry("kube-controller-manager", "status", "")}
	normaliseManagedFields(other)
	if reflect.DeepEqual(sameSecond, other) {
		t.Fatalf("entries of different managers normalise alike: %v", other)
	}
}
