package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestValidatingAdmissionPolicyIsEnforced runs kube-apiserver's
// ValidatingAdmissionPolicy plugin in the server: a bound policy's CEL
// validation refuses what it should with the policy's message (422, as
// upstream), with its parameters read from a ConfigMap the binding names;
// what the binding's namespace selector leaves out is admitted.
func TestValidatingAdmissionPolicyIsEnforced(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	for name, labels := range map[string]map[string]string{"guarded": {"policy": "on"}, "free": nil} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("guarded").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Data: map[string]string{"maxKeys": "2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "few-keys"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.data) || size(object.data) <= int(params.data.maxKeys)",
				Message:    "too many keys",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the policy: %v", err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "few-keys"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "few-keys",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"policy": "on"}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the binding: %v", err)
	}

	big := map[string]string{"a": "1", "b": "2", "c": "3"}
	// The plugin sees the policy once its informers have it.
	wait.UntilCtx(t, time.Minute, "the policy to refuse a ConfigMap with three keys", func(ctx context.Context) error {
		_, err := cs.CoreV1().ConfigMaps("guarded").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "big-"}, Data: big}, metav1.CreateOptions{})
		switch {
		case err == nil:
			return errors.New("admitted")
		case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "too many keys"):
			return err
		}
		return nil
	})
	if _, err := cs.CoreV1().ConfigMaps("guarded").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "small"},
		Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ConfigMap within the policy's limit: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("free").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: big}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ConfigMap in a namespace the binding leaves out: %v", err)
	}
}

// TestValidatingAdmissionPolicyStatusIsTypeChecked runs kube-controller-
// manager's policy status controller in the server: each policy's
// expressions are type checked against the schemas of the kinds it
// matches, and status.typeChecking says where one cannot hold.
func TestValidatingAdmissionPolicyStatusIsTypeChecked(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	policies := srv.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	ctx := context.Background()
	for name, expression := range map[string]string{"sound": "size(object.data) < 10", "unsound": "object.data.count > 1"} {
		if _, err := policies.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: expression}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create policy %s: %v", name, err)
		}
	}
	warnings := map[string]int{"sound": 0, "unsound": 1}
	for name, want := range warnings {
		wait.UntilCtx(t, time.Minute, "policy "+name+" to be type checked", func(ctx context.Context) error {
			policy, err := policies.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if policy.Status.TypeChecking == nil {
				return errors.New("no typeChecking yet")
			}
			if got := len(policy.Status.TypeChecking.ExpressionWarnings); got != want {
				return fmt.Errorf("%d warnings (%+v), want %d", got, policy.Status.TypeChecking.ExpressionWarnings, want)
			}
			return nil
		})
	}
}

// TestMutatingAdmissionPolicyIsEnforced runs kube-apiserver's
// MutatingAdmissionPolicy plugin in the server: a bound policy's
// apply-configuration mutation sets a label from the parameters the
// binding names, and its JSON patch adds a data key, before the object is
// validated and stored; what the binding's namespace selector leaves out
// is stored as sent.
func TestMutatingAdmissionPolicyIsEnforced(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	for name, labels := range map[string]map[string]string{"mutated": {"policy": "on"}, "untouched": nil} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("mutated").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		Data: map[string]string{"team": "storage"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "label-owner"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			ParamKind:          &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Mutations: []admissionregistrationv1.Mutation{
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"team": params.data.team}}}`}},
				{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
					Expression: `[JSONPatch{op: "add", path: "/data/stamped", value: "yes"}]`}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the policy: %v", err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "label-owner"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: "label-owner",
			ParamRef:   &admissionregistrationv1.ParamRef{Name: "owner", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"policy": "on"}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the binding: %v", err)
	}

	data := map[string]string{"a": "1"}
	// The plugin sees the policy once its informers have it.
	wait.UntilCtx(t, time.Minute, "the policy to label and stamp a new ConfigMap", func(ctx context.Context) error {
		cm, err := cs.CoreV1().ConfigMaps("mutated").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-"}, Data: data}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if cm.Labels["team"] != "storage" || cm.Data["stamped"] != "yes" || cm.Data["a"] != "1" {
			return fmt.Errorf("stored labels %v data %v", cm.Labels, cm.Data)
		}
		return nil
	})
	cm, err := cs.CoreV1().ConfigMaps("untouched").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: data}, metav1.CreateOptions{})
	if err != nil || len(cm.Labels) != 0 || len(cm.Data) != 1 {
		t.Fatalf("a ConfigMap in a namespace the binding leaves out: %v, labels %v data %v; want it as sent", err, cm.Labels, cm.Data)
	}
}
