package server_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/promscrape"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestPriorityAndFairnessClassifiesAndLimits runs kube-apiserver's API
// priority and fairness filter and configuration controller in the server:
// an admin's requests are exempt; a user's are classified by a FlowSchema
// into its priority level (the response headers name both by UID); a level
// that rejects refuses requests beyond its seats with 429 while other users'
// requests go on; watches give their seat back once started; a FlowSchema
// naming a missing level is marked Dangling; the debug dump lists the level.
func TestPriorityAndFairnessClassifiesAndLimits(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	fc := cs.FlowcontrolV1()

	admin := newRawClient(t, srv, "")
	var exempt *flowcontrolv1.FlowSchema
	wait.UntilCtx(t, time.Minute, "an admin's request classified as exempt", func(ctx context.Context) error {
		var err error
		if exempt, err = fc.FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{}); err != nil {
			return err
		}
		resp := admin.do(t, http.MethodGet, "/api/v1/namespaces/default", "")
		if got := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID); got != string(exempt.UID) {
			return fmt.Errorf("FlowSchema UID header %q, want exempt's %q", got, exempt.UID)
		}
		return nil
	})

	level, schema := limitedLevelFor(t, cs, "apf-test")
	wait.UntilCtx(t, time.Minute, "the FlowSchema marked not dangling and one naming a missing level marked dangling", func(ctx context.Context) error {
		for name, want := range map[string]flowcontrolv1.ConditionStatus{"apf-test": flowcontrolv1.ConditionFalse, "apf-dangling": flowcontrolv1.ConditionTrue} {
			fs, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := danglingStatus(fs); got != want {
				return fmt.Errorf("FlowSchema %s Dangling %q, want %q", name, got, want)
			}
		}
		return nil
	})
	user := newRawClient(t, srv, "apf-test")
	wait.UntilCtx(t, time.Minute, "apf-test's requests classified into its level", func(ctx context.Context) error {
		resp := user.do(t, http.MethodGet, "/api/v1/namespaces/apf/configmaps", "")
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("list as apf-test: %d %s", resp.StatusCode, resp.body)
		}
		fsUID, plUID := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID), resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
		if fsUID != string(schema.UID) || plUID != string(level.UID) {
			return fmt.Errorf("classified as FlowSchema %q and level %q, want %q and %q", fsUID, plUID, schema.UID, level.UID)
		}
		return nil
	})

	// More watches than the level has seats all start: each gives its seat
	// back once its initial events are sent.
	for i := range 10 {
		watch := user.watch(t, "/api/v1/namespaces/apf/configmaps?watch=1")
		if watch.StatusCode != http.StatusOK {
			t.Fatalf("watch %d as apf-test: %d, want 200 (earlier watches must not hold their seats)", i, watch.StatusCode)
		}
	}

	hook := newHoldingWebhook(t, cs)
	defer hook.release()
	held := 0
	results := make(chan *rawResponse, 20)
	var rejected *rawResponse
	fillDeadline := time.After(time.Minute)
	for i := 0; rejected == nil; i++ {
		if i == 20 {
			t.Fatalf("20 requests in a level of a few seats, %d held by the webhook, none refused", held)
		}
		go func() {
			results <- user.do(t, http.MethodPost, "/api/v1/namespaces/apf/configmaps",
				fmt.Sprintf(`{"metadata":{"name":"held-%d","labels":{"apf":"hold"}}}`, i))
		}()
		select {
		case <-hook.arrived:
			held++
		case resp := <-results:
			rejected = resp
		case <-fillDeadline:
			t.Fatalf("request %d neither reached the webhook nor was answered within a minute of the first", i)
		}
	}
	if rejected.StatusCode != http.StatusTooManyRequests || rejected.Header.Get("Retry-After") == "" || held == 0 {
		t.Fatalf("with %d requests held: %d %q (Retry-After %q), want 429 with Retry-After after at least one held",
			held, rejected.StatusCode, rejected.body, rejected.Header.Get("Retry-After"))
	}
	if _, err := cs.CoreV1().ConfigMaps("apf").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "admin-while-full"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("an admin's create while apf-test's level is full: %v", err)
	}
	dump := admin.do(t, http.MethodGet, "/debug/api_priority_and_fairness/dump_priority_levels", "")
	if dump.StatusCode != http.StatusOK || !strings.Contains(dump.body, "\napf-test,") {
		t.Fatalf("priority level dump: %d %q, want a row for apf-test", dump.StatusCode, dump.body)
	}
	// kube-apiserver's priority-and-fairness metrics show it too.
	metrics, err := promscrape.Get(admin.client, admin.url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for name, atLeast := range map[string]float64{
		"apiserver_flowcontrol_rejected_requests_total":   1,
		"apiserver_flowcontrol_dispatched_requests_total": float64(held),
		"apiserver_flowcontrol_current_executing_seats":   float64(held),
	} {
		if got, _ := metrics.Value(name, map[string]string{"priority_level": "apf-test"}); got < atLeast {
			t.Errorf("%s{priority_level=apf-test} = %v with %d creates held and one refused, want at least %v", name, got, held, atLeast)
		}
	}
	hook.release()
	releaseDeadline := time.After(30 * time.Second)
	for range held {
		select {
		case resp := <-results:
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("a held create once released: %d %s", resp.StatusCode, resp.body)
			}
		case <-releaseDeadline:
			t.Fatal("held creates not answered within 30s of their release")
		}
	}
}

// TestMaxInFlightLimitsWithoutPriorityAndFairness turns API priority and
// fairness off, as kube-apiserver's --enable-priority-and-fairness=false:
// a mutating request beyond --max-mutating-requests-inflight is refused with
// 429, while reads, limited apart, go on; no request is classified.
// (The server's own controllers also write, so the held create retries
// until it has the one mutating slot.)
func TestMaxInFlightLimitsWithoutPriorityAndFairness(t *testing.T) {
	t.Parallel()
	srv := startServiceServerWith(t, func(cfg *server.Config) {
		cfg.DisablePriorityAndFairness, cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight = true, 400, 1
	})
	cs := srv.Admin
	namespaceEditableBy(t, cs, "apf", "apf-test")
	hook := newHoldingWebhook(t, cs)
	defer hook.release()
	// kube-apiserver's in-flight limits never apply to system:masters.
	user := newRawClient(t, srv, "apf-test")
	held := make(chan *rawResponse, 1)
	wait.UntilCtx(t, time.Minute, "a create held by the webhook", func(ctx context.Context) error {
		resp := make(chan *rawResponse, 1)
		go func() {
			resp <- user.do(t, http.MethodPost, "/api/v1/namespaces/apf/configmaps", `{"metadata":{"name":"held","labels":{"apf":"hold"}}}`)
		}()
		select {
		case <-hook.arrived:
			go func() { held <- <-resp }()
			return nil
		case r := <-resp:
			return fmt.Errorf("answered %d %s before reaching the webhook", r.StatusCode, r.body)
		}
	})
	second := user.do(t, http.MethodPost, "/api/v1/namespaces/apf/configmaps", `{"metadata":{"name":"second"}}`)
	if second.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second create while one is held: %d %s, want 429", second.StatusCode, second.body)
	}
	read := user.do(t, http.MethodGet, "/api/v1/namespaces/apf/configmaps", "")
	if read.StatusCode != http.StatusOK || read.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "" {
		t.Fatalf("a read while the mutating slot is taken: %d %s, FlowSchema header %q; want 200 and none", read.StatusCode, read.body,
			read.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID))
	}
	hook.release()
	select {
	case resp := <-held:
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("the held create once released: %d %s", resp.StatusCode, resp.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held create not answered within 30s of its release")
	}
}

// limitedLevelFor makes a priority level with one share of the server's
// seats that lends and borrows none and rejects what it cannot serve, a
// FlowSchema sending every request of user to it, one naming a level that
// does not exist, and namespace apf where user may edit.
func limitedLevelFor(t *testing.T, cs kubernetes.Interface, user string) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	t.Helper()
	ctx := context.Background()
	fc := cs.FlowcontrolV1()
	level, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create priority level: %v", err)
	}
	rules := []flowcontrolv1.PolicyRulesWithSubjects{{
		Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
	}}
	schema, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: user},
			MatchingPrecedence: 100, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: rules}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create FlowSchema: %v", err)
	}
	if _, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "apf-dangling"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "missing"},
			MatchingPrecedence: 200, Rules: rules}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create dangling FlowSchema: %v", err)
	}
	namespaceEditableBy(t, cs, "apf", user)
	return level, schema
}

// namespaceEditableBy creates namespace ns and lets user edit in it.
func namespaceEditableBy(t *testing.T, cs kubernetes.Interface, ns, user string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func danglingStatus(fs *flowcontrolv1.FlowSchema) flowcontrolv1.ConditionStatus {
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
			return c.Status
		}
	}
	return ""
}

// rawClient sends requests as the admin, or as the admin impersonating
// user, without client-go's retries (it retries 429s).
type rawClient struct {
	client *http.Client
	url    string
}

type rawResponse struct {
	*http.Response
	body string
}

func newRawClient(t *testing.T, srv *cluster.Server, user string) rawClient {
	t.Helper()
	cfg := rest.CopyConfig(srv.RESTConfig(t))
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rawClient{client: client, url: srv.URL}
}

func (c rawClient) do(t *testing.T, method, path, body string) *rawResponse {
	req, err := http.NewRequestWithContext(t.Context(), method, c.url+path, strings.NewReader(body))
	if err != nil {
		panic(err) // a malformed path in the test itself
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return &rawResponse{Response: &http.Response{StatusCode: 0, Header: http.Header{}}, body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &rawResponse{Response: resp, body: string(b)}
}

// watch starts a watch that lasts until the test ends and returns its
// response once its headers arrive.
func (c rawClient) watch(t *testing.T, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, c.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// holdingWebhook is a validating webhook for ConfigMaps labelled apf: it
// holds those labelled apf=hold until released, and answers the others at
// once.
type holdingWebhook struct {
	arrived  chan struct{}
	released chan struct{}
	once     bool
}

func newHoldingWebhook(t *testing.T, cs kubernetes.Interface) *holdingWebhook {
	t.Helper()
	h := &holdingWebhook{arrived: make(chan struct{}, 20), released: make(chan struct{})}
	server := httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(server.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hold"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "hold.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: ptr.To(server.URL), CABundle: caBundle},
			TimeoutSeconds: ptr.To[int32](30),
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "apf", Operator: metav1.LabelSelectorOpExists}}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the webhook configuration: %v", err)
	}
	// The plugin calls the webhook once its informer has the configuration.
	wait.UntilCtx(t, time.Minute, "the webhook to see a ConfigMap labelled apf=probe", func(ctx context.Context) error {
		if _, err := cs.CoreV1().ConfigMaps("apf").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-",
			Labels: map[string]string{"apf": "probe"}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		select {
		case <-h.arrived:
			return nil
		default:
			return fmt.Errorf("not called")
		}
	})
	return h
}

func (h *holdingWebhook) release() {
	if !h.once {
		h.once = true
		close(h.released)
	}
}

func (h *holdingWebhook) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	var cm corev1.ConfigMap
	_ = json.Unmarshal(review.Request.Object.Raw, &cm)
	h.arrived <- struct{}{}
	if cm.Labels["apf"] == "hold" {
		select {
		case <-h.released:
		case <-r.Context().Done():
		}
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}
