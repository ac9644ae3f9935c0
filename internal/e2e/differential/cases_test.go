package differential

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// upstreamCase is one resource's data from testdata/cases.json (see
// hack/tools/differential-cases).
type upstreamCase struct {
	Group                  string `json:"group"`
	Version                string `json:"version"`
	Resource               string `json:"resource"`
	Stub                   string `json:"stub"`
	MutatedStub            string `json:"mutatedStub"`
	StatusStub             string `json:"statusStub"`
	MutatedStatusStub      string `json:"mutatedStatusStub"`
	ExpectedEtcdPath       string `json:"expectedEtcdPath"`
	ExpectedStorageVersion string `json:"expectedStorageVersion"`
	ExpectedStorageKind    string `json:"expectedStorageKind"`
}

type casesFile struct {
	Namespace string         `json:"namespace"`
	Cases     []upstreamCase `json:"cases"`
}

func loadCases(t *testing.T) casesFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f casesFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	if len(f.Cases) == 0 || f.Namespace == "" {
		t.Fatal("testdata/cases.json holds no cases")
	}
	return f
}

// groupVersion is the case's "group/version" ("v1" for the core group).
func (c upstreamCase) groupVersion() string {
	if c.Group == "" {
		return c.Version
	}
	return c.Group + "/" + c.Version
}

// basePath is the group version's API root.
func (c upstreamCase) basePath() string {
	if c.Group == "" {
		return "/api/" + c.Version
	}
	return "/apis/" + c.Group + "/" + c.Version
}

// stub decodes the case's stub object.
func (c upstreamCase) stub(t *testing.T) map[string]any {
	t.Helper()
	return mustObject(t, c.Stub)
}

func mustObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("stub %s: %v", s, err)
	}
	return m
}

// mutation sets (or, with a nil value, removes) the value at a dotted path
// of an object; numeric segments index lists.
type mutation struct {
	path  string
	value any
}

// invalidCreate is an invalid variant of a resource's stub, created under
// the stub's name with "-invalid" appended.
type invalidCreate struct {
	id        string
	mutations []mutation
}

// invalidCreates are, per resource, the invalid stubs beyond the ones every
// resource gets (a bad name, a bad label, a wrong-typed field): a required
// field cleared or a field out of its range.
var invalidCreates = map[string][]invalidCreate{
	"configmaps":             {{"invalid-data-key", []mutation{{"data", map[string]any{"bad key!": "x"}}}}},
	"endpoints":              {{"invalid-address-ip", []mutation{{"subsets.0.addresses.0.ip", "not-an-ip"}}}},
	"events":                 {{"invalid-involved-namespace", []mutation{{"involvedObject.namespace", "elsewhere"}}}},
	"limitranges":            {{"invalid-limit-type-cleared", []mutation{{"spec.limits.0.type", ""}}}},
	"namespaces":             {{"invalid-finalizer", []mutation{{"spec.finalizers", []any{"bad/fin/alizer"}}}}},
	"nodes":                  {{"invalid-pod-cidr", []mutation{{"spec.podCIDR", "not-a-cidr"}}}},
	"persistentvolumeclaims": {{"invalid-access-modes-cleared", []mutation{{"spec.accessModes", []any{}}}}},
	"persistentvolumes":      {{"invalid-capacity-cleared", []mutation{{"spec.capacity", nil}}}},
	"podtemplates":           {{"invalid-containers-cleared", []mutation{{"template.spec.containers", []any{}}}}},
	"replicationcontrollers": {{"invalid-selector-mismatch", []mutation{{"spec.selector", map[string]any{"other": "x"}}}}},
	"resourcequotas":         {{"invalid-negative-hard", []mutation{{"spec.hard.cpu", "-1"}}}},
	"secrets":                {{"invalid-tls-without-keys", []mutation{{"type", "kubernetes.io/tls"}}}},
	"serviceaccounts":        {{"invalid-automount-wrong-type", []mutation{{"automountServiceAccountToken", "yes"}}}},
	"services":               {{"invalid-ports-cleared", []mutation{{"spec.ports", []any{}}}}},
	"endpointslices":         {{"invalid-address-type", []mutation{{"addressType", "bogus"}}}},
	"runtimeclasses":         {{"invalid-handler", []mutation{{"handler", "Not_A_Label"}}}},
	"poddisruptionbudgets":   {{"invalid-min-available-negative", []mutation{{"spec.minAvailable", -1}}}},
	"priorityclasses":        {{"invalid-value-above-user-maximum", []mutation{{"value", 1000000001}}}},
	"pods": {
		{"invalid-containers-cleared", []mutation{{"spec.containers", []any{}}}},
		{"invalid-image-cleared", []mutation{{"spec.containers.0.image", nil}}},
		// The invalid pod fields upstream validates, as
		// TestInvalidPodsAreRefusedAsUpstreamRefusesThem (internal/apiserver) sends them.
		{"invalid-probe-without-handler", []mutation{{"spec.containers.0.livenessProbe", map[string]any{"periodSeconds": 5}}}},
		{"invalid-probe-negative-period", []mutation{{"spec.containers.0.readinessProbe", map[string]any{"periodSeconds": -1, "exec": map[string]any{"command": []any{"true"}}}}}},
		{"invalid-volume-two-sources", []mutation{{"spec.volumes", []any{map[string]any{"name": "v", "emptyDir": map[string]any{}, "hostPath": map[string]any{"path": "/tmp"}}}}}},
		{"invalid-mount-of-missing-volume", []mutation{{"spec.containers.0.volumeMounts", []any{map[string]any{"name": "nowhere", "mountPath": "/x"}}}}},
		{"invalid-subpath-escaping", []mutation{
			{"spec.volumes", []any{map[string]any{"name": "v", "emptyDir": map[string]any{}}}},
			{"spec.containers.0.volumeMounts", []any{map[string]any{"name": "v", "mountPath": "/x", "subPath": "../etc"}}}}},
		{"invalid-run-as-user-negative", []mutation{{"spec.containers.0.securityContext", map[string]any{"runAsUser": -1}}}},
		{"invalid-privileged-escalation-off", []mutation{{"spec.containers.0.securityContext", map[string]any{"privileged": true, "allowPrivilegeEscalation": false}}}},
		{"invalid-env-field-ref", []mutation{{"spec.containers.0.env", []any{map[string]any{"name": "X", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "spec.nothing"}}}}}}},
		{"invalid-env-secret-without-name", []mutation{{"spec.containers.0.env", []any{map[string]any{"name": "X", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"key": "k"}}}}}}},
		{"invalid-env-two-sources", []mutation{{"spec.containers.0.env", []any{map[string]any{"name": "X", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}, "configMapKeyRef": map[string]any{"name": "c", "key": "k"}}}}}}},
		{"invalid-toleration-exists-with-value", []mutation{{"spec.tolerations", []any{map[string]any{"key": "k", "operator": "Exists", "value": "v"}}}}},
		{"invalid-toleration-effect", []mutation{{"spec.tolerations", []any{map[string]any{"key": "k", "operator": "Equal", "value": "v", "effect": "Sometimes"}}}}},
		{"invalid-affinity-without-topology-key", []mutation{{"spec.affinity", map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}}}}}}},
		{"invalid-node-affinity-operator", []mutation{{"spec.affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Near"}}}}}}}}}},
		{"invalid-host-port-out-of-range", []mutation{{"spec.containers.0.ports", []any{map[string]any{"containerPort": 80, "hostPort": 70000}}}}},
		{"invalid-restart-policy", []mutation{{"spec.restartPolicy", "Sometimes"}}},
		{"invalid-dns-policy", []mutation{{"spec.dnsPolicy", "Elsewhere"}}},
		{"invalid-container-name", []mutation{{"spec.containers.0.name", "Not_A_Name"}}},
		{"invalid-cpu-request-over-limit", []mutation{{"spec.containers.0.resources", map[string]any{"limits": map[string]any{"cpu": "1"}, "requests": map[string]any{"cpu": "2"}}}}},
		{"invalid-configmap-volume-without-name", []mutation{{"spec.volumes", []any{map[string]any{"name": "v", "configMap": map[string]any{}}}}}},
	},
}

// immutableChanges are, per resource, a JSON patch of an existing object
// that changes a field upstream does not let change.
var immutableChanges = map[string][]any{
	"pods":                   {map[string]any{"op": "replace", "path": "/spec/containers/0/name", "value": "renamed"}},
	"persistentvolumeclaims": {map[string]any{"op": "add", "path": "/spec/storageClassName", "value": "other"}},
	"endpointslices":         {map[string]any{"op": "replace", "path": "/addressType", "value": "IPv6"}},
	"runtimeclasses":         {map[string]any{"op": "replace", "path": "/handler", "value": "other"}},
	"priorityclasses":        {map[string]any{"op": "replace", "path": "/value", "value": 2000}},
	"services":               {map[string]any{"op": "replace", "path": "/spec/clusterIP", "value": "10.96.0.99"}},
	"persistentvolumes":      {map[string]any{"op": "replace", "path": "/spec/hostPath/path", "value": "/tmp/other/"}},
}

// apply sets or removes each mutation's path in obj.
func (ms invalidCreate) apply(t *testing.T, obj map[string]any) {
	t.Helper()
	for _, m := range ms.mutations {
		if err := setPath(obj, strings.Split(m.path, "."), m.value); err != nil {
			t.Fatalf("%s: %s: %v", ms.id, m.path, err)
		}
	}
}

func setPath(v any, path []string, value any) error {
	switch x := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			if value == nil {
				delete(x, path[0])
			} else {
				x[path[0]] = value
			}
			return nil
		}
		next, ok := x[path[0]]
		if !ok {
			next = map[string]any{}
			x[path[0]] = next
		}
		return setPath(next, path[1:], value)
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(x) {
			return &pathError{path[0]}
		}
		if len(path) == 1 {
			x[i] = value
			return nil
		}
		return setPath(x[i], path[1:], value)
	}
	return &pathError{path[0]}
}

type pathError struct{ segment string }

func (e *pathError) Error() string { return "no " + e.segment + " on the way" }
