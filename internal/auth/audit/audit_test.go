package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/audit"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// usersByToken authenticates "Bearer admin" and "Bearer viewer".
var usersByToken = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
	switch req.Header.Get("Authorization") {
	case "Bearer admin":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}}, true, nil
	case "Bearer viewer":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "viewer", Groups: []string{user.AllAuthenticated}}}, true, nil
	}
	return nil, false, nil
})

// adminOrReads lets the admin do anything and the viewer read configmaps.
var adminOrReads = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "admin" || (a.GetResource() == "configmaps" && a.IsReadOnly()) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func TestAuditLogRecordsDeniedAndMutatingRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(path, audit.Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, log)
	admin, viewer, anonymous := client(url, "admin"), client(url, "viewer"), client(url, "")
	ctx := context.Background()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "b"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("an allowed read: %v", err)
	}
	if _, err := viewer.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("viewer reading a secret: %v, want 403", err)
	}
	if _, err := anonymous.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("anonymous list: %v, want 401", err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	events := readEvents(t, path)
	type line struct {
		user, verb, resource, name string
		code                       int32
	}
	var got []line
	for _, ev := range events {
		l := line{user: ev.User.Username, verb: ev.Verb}
		if ev.ObjectRef != nil {
			l.resource, l.name = ev.ObjectRef.Resource, ev.ObjectRef.Name
		}
		if ev.ResponseStatus != nil {
			l.code = ev.ResponseStatus.Code
		}
		got = append(got, l)
		if ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" || ev.AuditID == "" || ev.RequestReceivedTimestamp.IsZero() {
			t.Errorf("event is not a complete audit.k8s.io/v1 Event: %+v", ev)
		}
		if ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Errorf("event carries bodies (the log is Metadata level): %+v", ev)
		}
	}
	want := []line{
		{user: "admin", verb: "create", resource: "configmaps", name: "settings", code: 201},
		{user: "viewer", verb: "get", resource: "secrets", name: "db", code: 403},
		{user: "", verb: "list", resource: "pods", code: 401},
	}
	if len(got) != len(want) {
		t.Fatalf("audit log has %d events, want %d (the allowed read must be absent):\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if events[0].Stage != auditv1.StageResponseComplete || events[1].Stage != auditv1.StageResponseComplete {
		t.Errorf("stages %s, %s; want ResponseComplete", events[0].Stage, events[1].Stage)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode: %v, %v; want 0600", info.Mode(), err)
	}
}

func serve(t *testing.T, log *audit.Log) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	handler, err := apiserver.New(ctx, apiserver.Config{
		Store: etcdtest.New(t), Authenticator: usersByToken, Authorizer: adminOrReads,
		AuditSink: log.Sink(), AuditPolicy: log.Policy(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	t.Cleanup(cancel)
	return srv.URL
}

func client(url, token string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: url, BearerToken: token, Timeout: 30 * time.Second})
}

func readEvents(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditv1.Event
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %v: %s", err, scanner.Text())
		}
		events = append(events, ev)
	}
	return events
}

// With a 1 MB limit and one backup kept, enough refused requests rotate the
// log more than once: every file left holds whole audit events, the old
// ones beyond the limit are removed, and the newest file still receives.
func TestAuditLogRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	log, err := audit.Open(path, audit.Rotation{MaxSizeMB: 1, MaxBackups: 1})
	if err != nil {
		t.Fatal(err)
	}
	viewer := kubernetes.NewForConfigOrDie(&rest.Config{Host: serve(t, log), BearerToken: "viewer", Timeout: 30 * time.Second, QPS: -1})
	ctx := context.Background()

	// Each refused read of a long secret name is an event of about 1 KB;
	// 2600 of them fill the log more than twice over.
	const requests, workers = 2600, 4
	long := strings.Repeat("x", 250)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < requests; i += workers {
				_, err := viewer.CoreV1().Secrets("default").Get(ctx, fmt.Sprintf("%s-%d", long, i), metav1.GetOptions{})
				if !apierrors.IsForbidden(err) {
					errs <- fmt.Errorf("request %d: %v, want 403", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	// Old files are removed in the background after a rotation.
	var files []string
	wait.Until(t, time.Minute, "one rotated file besides the current one", func() bool {
		files, err = filepath.Glob(filepath.Join(dir, "audit*.log"))
		if err != nil {
			t.Fatal(err)
		}
		return len(files) == 2
	})
	total := 0
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 1<<20 || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v; want at most 1 MB, 0600", f, info.Size(), info.Mode())
		}
		events := readEvents(t, f)
		for _, ev := range events {
			if ev.Kind != "Event" || ev.AuditID == "" || ev.Verb != "get" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 403 {
				t.Fatalf("%s holds an unexpected event: %+v", f, ev)
			}
		}
		total += len(events)
	}
	// More than a file's worth was written, and some of it was dropped with the oldest file.
	if kept := len(readEvents(t, path)); kept == 0 || total >= requests {
		t.Errorf("current file has %d events, %d kept of %d: want a non-empty current file and the oldest events rotated away", kept, total, requests)
	}
}

func TestRotationRefusesNegativeLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	for _, r := range []audit.Rotation{{MaxSizeMB: -1}, {MaxBackups: -1}, {MaxAgeDays: -1}} {
		if _, err := audit.Open(path, r); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("Open(%+v) = %v, want a refusal", r, err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a refused Open created the file: %v", err)
	}
}
