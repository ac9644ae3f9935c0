package server_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestAdmissionWebhooksAreCalled runs kube-apiserver's webhook admission
// plugins in the server against a webhook over TLS: a mutating webhook's
// JSON patch is applied, a validating webhook's refusal is the answer (with
// its message, nothing stored), and objects the webhooks' rules do not
// name, or that a namespace selector leaves out, are not sent.
func TestAdmissionWebhooksAreCalled(t *testing.T) {
	t.Parallel()
	hook := httptest.NewTLSServer(http.HandlerFunc(serveAdmissionReview))
	defer hook.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})

	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	onlyHooked := &metav1.LabelSelector{MatchLabels: map[string]string{"hooked": "yes"}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "label.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/mutate"), CABundle: caBundle},
			Rules:        rules, NamespaceSelector: onlyHooked,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the mutating webhook configuration: %v", err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/validate"), CABundle: caBundle},
			Rules:        rules, NamespaceSelector: onlyHooked,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the validating webhook configuration: %v", err)
	}
	for name, labels := range map[string]map[string]string{"hooked": {"hooked": "yes"}, "plain": nil} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The plugins see a configuration once their informers have it.
	wait.UntilCtx(t, time.Minute, "the mutating webhook to label a new ConfigMap", func(ctx context.Context) error {
		cm, err := cs.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if cm.Labels["mutated"] != "yes" {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		return nil
	})
	_, err := cs.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "refused"},
		Data: map[string]string{"forbidden": "x"}}, metav1.CreateOptions{})
	// A refusal without a code is a 400, as upstream's plugin answers it.
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `admission webhook "deny.example.com" denied the request: the key "forbidden" is not allowed`) {
		t.Fatalf("a ConfigMap the validating webhook refuses: %v, want 400 with its message", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("hooked").Get(ctx, "refused", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused ConfigMap: %v, want not found", err)
	}
	plain, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "free"},
		Data: map[string]string{"forbidden": "x"}}, metav1.CreateOptions{})
	if err != nil || plain.Labels["mutated"] != "" {
		t.Fatalf("a ConfigMap in a namespace the selectors leave out: %v, labels %v; want it stored untouched", err, plain)
	}
}

// serveAdmissionReview is the test's webhook: /mutate labels the object
// mutated=yes, /validate refuses a ConfigMap holding the key "forbidden".
func serveAdmissionReview(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	switch r.URL.Path {
	case "/mutate":
		var cm corev1.ConfigMap
		_ = json.Unmarshal(review.Request.Object.Raw, &cm)
		patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
		if cm.Labels != nil {
			patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		}
		resp.Patch = []byte(patch)
		resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	case "/validate":
		var cm corev1.ConfigMap
		_ = json.Unmarshal(review.Request.Object.Raw, &cm)
		if _, ok := cm.Data["forbidden"]; ok {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: `the key "forbidden" is not allowed`}
		}
	}
	review.Response = resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}
