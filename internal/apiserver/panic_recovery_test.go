package apiserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth/berth/internal/testkit/testio"
)

// panickingAuthorizer panics on every request for the ConfigMap named
// "boom" and allows the rest: a bug inside the handler chain.
var panickingAuthorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "configmaps" && a.GetName() == "boom" {
		var m map[string]bool
		//lint:ignore SA5000 the runtime panic is the point
		m["boom"] = true // a real runtime panic: assignment to a nil map
	}
	return authorizer.DecisionAllow, "", nil
})

// TestHandlerPanicIsA500StatusAndServingGoesOn: a request whose handler
// panics gets kube-apiserver's 500 Status, and the server keeps serving,
// also on the same client connection pool.
func TestHandlerPanicIsA500StatusAndServingGoesOn(t *testing.T) {
	t.Parallel()
	ts := newTestServerWith(t, func(cfg *Config) { cfg.Authorizer = panickingAuthorizer })
	ctx := testContext(t)
	cms := ts.jsonCli.CoreV1().ConfigMaps("default")

	_, err := cms.Get(ctx, "boom", metav1.GetOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("get of the panicking request = %v, want a Status", err)
	}
	s := status.Status()
	if s.Code != http.StatusInternalServerError || s.Reason != metav1.StatusReasonInternalError || !strings.Contains(s.Message, panicAnswer) {
		t.Fatalf("Status = %d %s %q, want 500 InternalError with %q", s.Code, s.Reason, s.Message, panicAnswer)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fine"}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after a recovered panic: %v", err)
	}
	if _, err := cms.Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get after a recovered panic: %v", err)
	}
}

// TestPanicRecoveryLeavesAbortsAndStartedResponsesCut: http.ErrAbortHandler
// and a panic after the response began cut the connection (the client
// sees an error, never a success or a Status glued onto half a body); a
// panic before any output is a 500 Status; the panic is logged with the
// request and its stack.
func TestPanicRecoveryLeavesAbortsAndStartedResponsesCut(t *testing.T) {
	t.Parallel()
	var logs testio.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	scheme, err := newScheme(servedResources())
	if err != nil {
		t.Fatal(err)
	}
	codecs := newCodecs(scheme)
	mux := http.NewServeMux()
	mux.HandleFunc("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	mux.HandleFunc("/half", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"kind":"ConfigMap",`))
		w.(http.Flusher).Flush()
		panic("half-way")
	})
	mux.HandleFunc("/early", func(http.ResponseWriter, *http.Request) { panic("early") })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	srv := httptest.NewServer(withPanicRecovery(mux, codecs.negotiated, log))
	t.Cleanup(srv.Close)

	for _, path := range []string{"/abort", "/half"} {
		resp, err := http.Get(srv.URL + path)
		if err == nil {
			_, err = readAll(resp)
		}
		if err == nil {
			t.Errorf("%s: the response completed, want it cut", path)
		}
	}
	resp, err := http.Get(srv.URL + "/early")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := readAll(resp)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, `"kind":"Status"`) || !strings.Contains(body, panicAnswer) {
		t.Fatalf("/early = %d %s, want a 500 Status", resp.StatusCode, body)
	}
	resp, err = http.Get(srv.URL + "/ok")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/ok after panics: %v %v", resp, err)
	}
	resp.Body.Close()
	out := logs.String()
	for _, want := range []string{"uri=/early", "uri=/half", "panic_recovery_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "uri=/abort") {
		t.Errorf("an abort was logged as a panic:\n%s", out)
	}
}

// readAll reads and closes a response body.
func readAll(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
