package differential

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// target is one of the two servers: where to send requests and the etcd it
// stores in.
type target struct {
	name string
	host string
	http *http.Client
	etcd *etcdMember
}

func newTarget(t *testing.T, name string, cfg *rest.Config, etcd *etcdMember) *target {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &target{name: name, host: strings.TrimRight(cfg.Host, "/"), http: client, etcd: etcd}
}

// do sends one request and returns the HTTP code and the body.
func (c *target) do(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// getObject returns the object at path as a map, or nil if the GET fails.
func (c *target) getObject(ctx context.Context, path string) map[string]any {
	code, body, err := c.do(ctx, http.MethodGet, path, "", nil)
	if err != nil || code != http.StatusOK {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	return obj
}

// answer is what a step observed on one server, normalised for comparison.
type answer struct {
	Code   int      `json:"code"`
	Reason string   `json:"reason,omitempty"`
	Causes []string `json:"causes,omitempty"` // sorted field paths of the Status's causes
	Object any      `json:"object,omitempty"` // the returned object, normalised
	Keys   []string `json:"keys"`             // the etcd keys of the case's object after the step
	Stored []string `json:"stored,omitempty"` // apiVersion/kind of each stored value
}

// readAnswer fills code, reason, causes and object from a response.
func readAnswer(code int, body []byte, norm func(map[string]any) any) answer {
	a := answer{Code: code}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		a.Object = fmt.Sprintf("<not JSON: %.80q>", body)
		return a
	}
	if obj["kind"] == "Status" && obj["status"] == "Failure" {
		a.Reason, _ = obj["reason"].(string)
		set := map[string]bool{}
		if details, ok := obj["details"].(map[string]any); ok {
			causes, _ := details["causes"].([]any)
			for _, c := range causes {
				if m, ok := c.(map[string]any); ok {
					field, _ := m["field"].(string)
					set[field] = true
				}
			}
		}
		for f := range set {
			a.Causes = append(a.Causes, f)
		}
		sort.Strings(a.Causes)
		return a
	}
	a.Object = norm(obj)
	return a
}

// readStored records the keys of namespace/name in the target's etcd and
// the apiVersion/kind of each stored value.
func (c *target) readStored(ctx context.Context, a *answer, namespace, name string) error {
	keys, values, err := c.etcd.keysOf(ctx, namespace, name)
	if err != nil {
		return err
	}
	sort.Strings(keys)
	a.Keys = keys
	a.Stored = nil
	for _, k := range keys {
		a.Stored = append(a.Stored, storedTypeOf(values[k]))
	}
	return nil
}

// protobufPrefix starts every value kube-apiserver stores as protobuf
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufPrefix = []byte("k8s\x00")

// storedTypeOf decodes a stored value's envelope, protobuf
// (runtime.Unknown after the prefix) or JSON, to "apiVersion/kind" with its
// encoding.
func storedTypeOf(value []byte) string {
	if rest, ok := bytes.CutPrefix(value, protobufPrefix); ok {
		var u runtime.Unknown
		if err := u.Unmarshal(rest); err != nil {
			return "protobuf, undecodable: " + err.Error()
		}
		return "protobuf " + u.APIVersion + "/" + u.Kind
	}
	var tm struct{ APIVersion, Kind string }
	if err := json.Unmarshal(value, &tm); err != nil {
		return fmt.Sprintf("neither protobuf nor JSON: %.20q", value)
	}
	return "json " + tm.APIVersion + "/" + tm.Kind
}
