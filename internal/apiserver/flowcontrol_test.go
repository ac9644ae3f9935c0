package apiserver

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestFlowControlKindsAsKubeAPIServer serves flowcontrol.apiserver.k8s.io/v1
// as kube-apiserver does: upstream's defaults (a Limited level's lendable
// percent and queuing), its validation with field paths, status only
// through the status subresource, kube-apiserver's keys and kubectl's
// columns.
func TestFlowControlKindsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	fc := s.client.FlowcontrolV1()

	level, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create priority level: %v", err)
	}
	if l := level.Spec.Limited; l.NominalConcurrencyShares == nil || *l.NominalConcurrencyShares != 30 || l.LimitResponse.Queuing == nil ||
		l.LimitResponse.Queuing.Queues != 64 || l.LendablePercent == nil || *l.LendablePercent != 0 {
		t.Errorf("limited %+v, want upstream's defaults (30 shares, 64 queues, 0%% lendable)", l)
	}
	if kv, err := s.store.Get(ctx, "/registry/prioritylevelconfigurations/batch"); err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key: %q, %v", kv.Value, err)
	}

	_, err = fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 20000, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: "ByColour"}}}, metav1.CreateOptions{})
	expectInvalidFields(t, "a FlowSchema without a level, with a precedence too high and an unknown distinguisher", err,
		"spec.priorityLevelConfiguration.name", "spec.matchingPrecedence", "spec.distinguisherMethod.type")

	schema, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "jobs"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "batch"},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ci", Name: "runner"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"create"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Namespaces: []string{"ci"}}},
			}}},
		Status: flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling", Status: "True"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create FlowSchema: %v", err)
	}
	if schema.Spec.MatchingPrecedence != 1000 || len(schema.Status.Conditions) != 0 {
		t.Errorf("matchingPrecedence %d, conditions %+v; want upstream's default 1000 and the status dropped", schema.Spec.MatchingPrecedence, schema.Status.Conditions)
	}
	patched, err := fc.FlowSchemas().Patch(ctx, "jobs", types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"Dangling","status":"False","reason":"Found","message":"ok"}]}}`), metav1.PatchOptions{}, "status")
	if err != nil || len(patched.Status.Conditions) != 1 {
		t.Fatalf("patch status: %v, %+v", err, patched)
	}
	if _, err := fc.FlowSchemas().Patch(ctx, "jobs", types.MergePatchType, []byte(`{"spec":{"matchingPrecedence":10001}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("matchingPrecedence 10001: %v, want Invalid", err)
	}

	cols, rows := tableOf(t, s, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/jobs")
	if cols != "Name PriorityLevel MatchingPrecedence DistinguisherMethod Age MissingPL" || len(rows) != 1 || rows[0].Cells[1] != "batch" {
		t.Fatalf("FlowSchema table columns %q rows %+v, want upstream's", cols, rows)
	}
}
