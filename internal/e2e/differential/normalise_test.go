package differential

import "regexp"

// The normalisations, applied alike to both servers' objects, drop or mask
// what differs between any two runs of the same server:
//
//   - metadata.uid, metadata.resourceVersion, metadata.creationTimestamp,
//     and a Status's details.uid: assigned per object and write;
//   - metadata.deletionTimestamp: the time of the delete, kept as "<time>"
//     so its presence still counts;
//   - metadata.managedFields[].time: the time of each manager's write;
//   - a list's metadata.resourceVersion and continue token, and every item
//     but the case's object (the servers hold different other objects);
//   - timestamps the servers set in status (lastTransitionTime,
//     lastHeartbeatTime, lastProbeTime, lastUpdateTime, startTime,
//     firstTimestamp, lastTimestamp, eventTime), kept as "<time>";
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
			for _, e := range mf {
				if m, ok := e.(map[string]any); ok {
					delete(m, "time")
				}
			}
		}
	}
	return maskValues(obj, "")
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
