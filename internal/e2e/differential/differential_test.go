package differential

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
)

// caseResult is one case's answers from both servers.
type caseResult struct {
	ID       string
	Upstream answer
	Berth    answer
}

// aspects are the parts of the answers that differ.
func (r caseResult) aspects() []string {
	u, b := r.Upstream, r.Berth
	var out []string
	if u.Code != b.Code {
		out = append(out, "code")
	}
	if u.Reason != b.Reason {
		out = append(out, "reason")
	}
	if !reflect.DeepEqual(u.Causes, b.Causes) {
		out = append(out, "causes")
	}
	if !reflect.DeepEqual(u.Object, b.Object) {
		out = append(out, "object")
	}
	if !reflect.DeepEqual(u.Keys, b.Keys) {
		out = append(out, "key")
	}
	if !reflect.DeepEqual(u.Stored, b.Stored) {
		out = append(out, "stored-version")
	}
	return out
}

// TestDifferentialAgainstKubeAPIServer sends every case to kube-apiserver
// v1.37.2 and to berth server and fails on any difference that
// testdata/known-differences.txt does not list, and on any listed one that
// no longer occurs.
func TestDifferentialAgainstKubeAPIServer(t *testing.T) {
	began := time.Now()
	cases := loadCases(t)
	known := loadKnown(t)
	dir := t.TempDir()
	upEtcd := startEtcd(t, mkdir(t, dir, "kube-apiserver-etcd"))
	berthEtcd := startEtcd(t, mkdir(t, dir, "berth-etcd"))
	up := newTarget(t, "kube-apiserver", startKubeAPIServer(t, mkdir(t, dir, "kube-apiserver"), upEtcd), upEtcd)
	berth := newTarget(t, "berth", startBerth(t, berthEtcd), berthEtcd)
	ctx := t.Context()
	for _, tg := range []*target{up, berth} {
		prepare(t, ctx, tg, cases.Namespace)
	}
	upDiscovery := discover(t, ctx, up, cases)
	berthDiscovery := discover(t, ctx, berth, cases)

	var results []caseResult
	for _, c := range cases.Cases {
		r := &resourceRun{c: c, ns: cases.Namespace, up: up, berth: berth, upDisc: upDiscovery, berthDisc: berthDiscovery}
		results = append(results, r.run(t, ctx)...)
	}
	report(t, results, known, len(cases.Cases), time.Since(began))
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := osMkdir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// prepare creates the test's namespace and its default ServiceAccount
// (kube-apiserver alone runs no controller that would, and its
// ServiceAccount admission plugin refuses pods without one).
func prepare(t *testing.T, ctx context.Context, tg *target, ns string) {
	t.Helper()
	for _, req := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`},
		{"/api/v1/namespaces/" + ns + "/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`},
	} {
		code, body, err := tg.do(ctx, http.MethodPost, req.path, "application/json", []byte(req.body))
		if err != nil || (code != http.StatusCreated && code != http.StatusConflict) {
			t.Fatalf("%s: POST %s: HTTP %d %v %s", tg.name, req.path, code, err, body)
		}
	}
	wait.UntilCtx(t, time.Minute, tg.name+" to serve the default ServiceAccount of "+ns, func(ctx context.Context) error {
		code, _, err := tg.do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/serviceaccounts/default", "", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("HTTP %d", code)
		}
		return nil
	})
}

// discoveryEntry is what a server's discovery says of one resource.
type discoveryEntry struct {
	Kind         string   `json:"kind"`
	Namespaced   bool     `json:"namespaced"`
	Verbs        []string `json:"verbs"`
	Subresources []string `json:"subresources,omitempty"`
}

// discover reads the APIResourceLists of the cases' group versions.
func discover(t *testing.T, ctx context.Context, tg *target, cases casesFile) map[string]*discoveryEntry {
	t.Helper()
	out := map[string]*discoveryEntry{}
	seen := map[string]bool{}
	for _, c := range cases.Cases {
		if seen[c.basePath()] {
			continue
		}
		seen[c.basePath()] = true
		code, body, err := tg.do(ctx, http.MethodGet, c.basePath(), "", nil)
		if err != nil {
			t.Fatalf("%s: GET %s: %v", tg.name, c.basePath(), err)
		}
		if code != http.StatusOK {
			continue // the group version is not served: each of its resources is missing
		}
		var list struct {
			Resources []struct {
				Name       string   `json:"name"`
				Kind       string   `json:"kind"`
				Namespaced bool     `json:"namespaced"`
				Verbs      []string `json:"verbs"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("%s: GET %s: %v", tg.name, c.basePath(), err)
		}
		for _, r := range list.Resources {
			res, sub, isSub := strings.Cut(r.Name, "/")
			key := c.groupVersion() + "/" + res
			if isSub {
				if e := out[key]; e != nil {
					e.Subresources = append(e.Subresources, sub)
					sort.Strings(e.Subresources)
				}
				continue
			}
			verbs := append([]string(nil), r.Verbs...)
			sort.Strings(verbs)
			out[key] = &discoveryEntry{Kind: r.Kind, Namespaced: r.Namespaced, Verbs: verbs}
		}
	}
	return out
}

// resourceRun runs one resource's cases on both servers, upstream first.
type resourceRun struct {
	c                 upstreamCase
	ns                string
	up, berth         *target
	upDisc, berthDisc map[string]*discoveryEntry
	kind              string
	namespaced        bool
	name              string
}

func (r *resourceRun) collection() string {
	if r.namespaced {
		return r.c.basePath() + "/namespaces/" + r.ns + "/" + r.c.Resource
	}
	return r.c.basePath() + "/" + r.c.Resource
}

func (r *resourceRun) item(name string) string { return r.collection() + "/" + name }

func (r *resourceRun) objectNamespace() string {
	if r.namespaced {
		return r.ns
	}
	return ""
}

// step is one request, made the same way on either server; it returns the
// answer before the stored keys are read.
type step struct {
	id   string
	name string // the object whose keys are read after the step
	run  func(ctx context.Context, tg *target) answer
}

func (r *resourceRun) run(t *testing.T, ctx context.Context) []caseResult {
	t.Helper()
	gvr := r.c.groupVersion() + "/" + r.c.Resource
	disc := r.upDisc[gvr]
	if disc == nil {
		t.Fatalf("kube-apiserver does not serve %s, which upstream's data lists", gvr)
	}
	r.kind, r.namespaced = disc.Kind, disc.Namespaced
	stub := r.c.stub(t)
	md, _ := stub["metadata"].(map[string]any)
	r.name, _ = md["name"].(string)
	id := func(s string) string { return r.c.Resource + "/" + s }

	results := []caseResult{r.discoveryCase(id("discovery"), gvr)}
	steps := r.steps(t, id, stub, disc)
	for _, s := range steps {
		res := caseResult{ID: s.id}
		for _, side := range []struct {
			tg  *target
			out *answer
		}{{r.up, &res.Upstream}, {r.berth, &res.Berth}} {
			*side.out = s.run(ctx, side.tg)
			if err := side.tg.readStored(ctx, side.out, r.objectNamespace(), s.name); err != nil {
				t.Fatalf("%s: %s: read etcd: %v", side.tg.name, s.id, err)
			}
		}
		if s.id == id("create") {
			r.checkUpstreamData(t, res.Upstream)
		}
		results = append(results, res)
	}
	return results
}

// jsonStoredGroups are the groups kube-apiserver stores as JSON whatever
// its --storage-media-type: the apiextensions and aggregator servers open
// their storage with JSON as the media type (upstream's test data, which
// only decodes what it reads, says protobuf for them too).
var jsonStoredGroups = map[string]bool{"apiextensions.k8s.io": true, "apiregistration.k8s.io": true}

// checkUpstreamData fails the test if kube-apiserver itself does not store
// the object where and as upstream's data says: the harness is wrong then.
func (r *resourceRun) checkUpstreamData(t *testing.T, a answer) {
	t.Helper()
	kind := r.c.ExpectedStorageKind
	if kind == "" {
		kind = r.kind
	}
	encoding := "protobuf"
	if jsonStoredGroups[r.c.Group] {
		encoding = "json"
	}
	want := encoding + " " + r.c.ExpectedStorageVersion + "/" + kind
	if a.Code != http.StatusCreated || len(a.Keys) != 1 || a.Keys[0] != r.c.ExpectedEtcdPath || a.Stored[0] != want {
		t.Errorf("kube-apiserver's create of %s: HTTP %d, keys %v stored as %v; upstream's data expects 201, %s as %s",
			r.c.Resource, a.Code, a.Keys, a.Stored, r.c.ExpectedEtcdPath, want)
	}
}

func (r *resourceRun) discoveryCase(id, gvr string) caseResult {
	side := func(d map[string]*discoveryEntry) answer {
		e := d[gvr]
		if e == nil {
			return answer{Code: http.StatusNotFound}
		}
		return answer{Code: http.StatusOK, Object: *e}
	}
	return caseResult{ID: id, Upstream: side(r.upDisc), Berth: side(r.berthDisc)}
}

const (
	jsonType      = "application/json"
	jsonPatch     = "application/json-patch+json"
	mergePatch    = "application/merge-patch+json"
	strategicType = "application/strategic-merge-patch+json"
	applyType     = "application/apply-patch+yaml"
)

// send makes one request whose body is v encoded as JSON (nil: none).
func send(ctx context.Context, tg *target, method, path, contentType string, v any, norm func(map[string]any) any) answer {
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			return answer{Object: "<body: " + err.Error() + ">"}
		}
	}
	code, data, err := tg.do(ctx, method, path, contentType, body)
	if err != nil {
		return answer{Object: "<request: " + err.Error() + ">"}
	}
	return readAnswer(code, data, norm)
}

// steps are the resource's cases after discovery, in the order they run.
func (r *resourceRun) steps(t *testing.T, id func(string) string, stub map[string]any, disc *discoveryEntry) []step {
	t.Helper()
	fresh := func() map[string]any { return r.c.stub(t) }
	item := r.item(r.name)
	withLabel := func(obj map[string]any, key string) map[string]any {
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		labels, _ := md["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			md["labels"] = labels
		}
		labels[key] = "yes"
		return obj
	}
	// current is the object as tg holds it now, or the stub if tg has none.
	current := func(ctx context.Context, tg *target) map[string]any {
		if obj := tg.getObject(ctx, item); obj != nil {
			return obj
		}
		return fresh()
	}
	steps := []step{
		{id("create-dry-run"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodPost, r.collection()+"?dryRun=All", jsonType, fresh(), normaliseObject)
		}},
		{id("create"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodPost, r.collection(), jsonType, fresh(), normaliseObject)
		}},
		{id("get"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodGet, item, "", nil, normaliseObject)
		}},
		{id("list"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodGet, r.collection(), "", nil, normaliseList(r.name))
		}},
		{id("update"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodPut, item, jsonType, withLabel(current(ctx, tg), "differential-update"), normaliseObject)
		}},
		{id("patch-json"), r.name, func(ctx context.Context, tg *target) answer {
			patch := []any{map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]any{"differential/json-patch": "yes"}}}
			return send(ctx, tg, http.MethodPatch, item, jsonPatch, patch, normaliseObject)
		}},
		{id("patch-merge"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodPatch, item, mergePatch, withLabel(map[string]any{}, "differential-merge"), normaliseObject)
		}},
		{id("patch-strategic"), r.name, func(ctx context.Context, tg *target) answer {
			// upstream's mutation of the stub, or a label where it has none
			patch := withLabel(map[string]any{}, "differential-strategic")
			if r.c.MutatedStub != "" {
				patch = mustObject(t, r.c.MutatedStub)
			}
			return send(ctx, tg, http.MethodPatch, item, strategicType, patch, normaliseObject)
		}},
		{id("apply"), r.name, func(ctx context.Context, tg *target) answer {
			obj := withLabel(map[string]any{"apiVersion": r.c.groupVersion(), "kind": r.kind, "metadata": map[string]any{"name": r.name}}, "differential-apply")
			return send(ctx, tg, http.MethodPatch, item+"?fieldManager=differential&force=true", applyType, obj, normaliseObject)
		}},
	}
	if contains(disc.Subresources, "status") {
		steps = append(steps, step{id("status-update"), r.name, func(ctx context.Context, tg *target) answer {
			obj := current(ctx, tg)
			status, _ := obj["status"].(map[string]any)
			if status == nil {
				status = map[string]any{}
			}
			stubStatus, _ := mustObject(t, r.c.StatusStub)["status"].(map[string]any)
			for k, v := range stubStatus {
				status[k] = v
			}
			obj["status"] = status
			return send(ctx, tg, http.MethodPut, item+"/status", jsonType, obj, normaliseObject)
		}}, step{id("status-apply"), r.name, func(ctx context.Context, tg *target) answer {
			obj := mustObject(t, r.c.MutatedStatusStub)
			obj["apiVersion"], obj["kind"], obj["metadata"] = r.c.groupVersion(), r.kind, map[string]any{"name": r.name}
			return send(ctx, tg, http.MethodPatch, item+"/status?fieldManager=differential-status&force=true", applyType, obj, normaliseObject)
		}})
	}

	if contains(disc.Subresources, "resize") {
		// In-place resize of the stub pod (BestEffort): a resize policy
		// may change, a request may not (it would change the QoS class).
		resize := func(field string, value any) func(ctx context.Context, tg *target) answer {
			return func(ctx context.Context, tg *target) answer {
				obj := current(ctx, tg)
				spec, _ := obj["spec"].(map[string]any)
				containers, _ := spec["containers"].([]any)
				if len(containers) > 0 {
					containers[0].(map[string]any)[field] = value
				}
				return send(ctx, tg, http.MethodPut, item+"/resize", jsonType, obj, normaliseObject)
			}
		}
		steps = append(steps,
			step{id("resize"), r.name, resize("resizePolicy", []any{map[string]any{"resourceName": "cpu", "restartPolicy": "RestartContainer"}})},
			step{id("invalid-resize-qos-change"), r.name, resize("resources", map[string]any{"requests": map[string]any{"cpu": "100m"}})},
		)
	}

	// Invalid mutations every resource gets, then the resource's own.
	invalidName := r.name + "-invalid"
	invalid := []invalidCreate{
		{"invalid-name", nil},
		{"invalid-label-key", []mutation{{"metadata.labels", map[string]any{"bad key!": "x"}}}},
		{"invalid-wrong-typed-labels", []mutation{{"metadata.labels", "not-a-map"}}},
	}
	invalid = append(invalid, invalidCreates[r.c.Resource]...)
	for _, inv := range invalid {
		steps = append(steps, step{id(inv.id), invalidName, func(ctx context.Context, tg *target) answer {
			obj := fresh()
			obj["metadata"].(map[string]any)["name"] = invalidName
			if inv.id == "invalid-name" {
				obj["metadata"].(map[string]any)["name"] = "Not_A_Name"
			}
			inv.apply(t, obj)
			return send(ctx, tg, http.MethodPost, r.collection(), jsonType, obj, normaliseObject)
		}})
	}
	steps = append(steps,
		step{id("invalid-update-uid-changed"), r.name, func(ctx context.Context, tg *target) answer {
			patch := []any{map[string]any{"op": "replace", "path": "/metadata/uid", "value": "00000000-0000-0000-0000-000000000000"}}
			return send(ctx, tg, http.MethodPatch, item, jsonPatch, patch, normaliseObject)
		}},
		step{id("invalid-update-name-mismatch"), r.name, func(ctx context.Context, tg *target) answer {
			obj := current(ctx, tg)
			obj["metadata"].(map[string]any)["name"] = "another-name"
			return send(ctx, tg, http.MethodPut, item, jsonType, obj, normaliseObject)
		}},
	)
	if patch, ok := immutableChanges[r.c.Resource]; ok {
		steps = append(steps, step{id("invalid-update-immutable-field"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodPatch, item, jsonPatch, patch, normaliseObject)
		}})
	}
	steps = append(steps,
		step{id("delete"), r.name, func(ctx context.Context, tg *target) answer {
			a := send(ctx, tg, http.MethodDelete, item, "", nil, normaliseObject)
			// A finalized object (a namespace) goes once its finalizers
			// are done; a server that runs no finalizer keeps it.
			_ = wait.Poll(ctx, 10*time.Second, r.c.Resource+" "+r.name+" to leave "+tg.name+"'s etcd", func(ctx context.Context) error {
				keys, _, err := tg.etcd.keysOf(ctx, r.objectNamespace(), r.name)
				if err == nil && len(keys) > 0 {
					err = fmt.Errorf("still stored as %v", keys)
				}
				return err
			})
			return a
		}},
		step{id("get-after-delete"), r.name, func(ctx context.Context, tg *target) answer {
			return send(ctx, tg, http.MethodGet, item, "", nil, normaliseObject)
		}},
	)
	return steps
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
