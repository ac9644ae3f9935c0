package apiserver

import (
	"context"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// discardSink takes audit events and drops them.
type discardSink struct{}

func (discardSink) ProcessEvents(...*auditinternal.Event) bool { return true }

// With no audit log, requests reach the authorizer with auditing off, so
// the annotations upstream filters add are not kept; with one, on.
func TestRequestsAreNotAuditedWithoutAnAuditLog(t *testing.T) {
	t.Parallel()
	for _, audited := range []bool{false, true} {
		var seen, enabled atomic.Int32
		s := newTestServerWith(t, func(c *Config) {
			c.Authorizer = authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				seen.Add(1)
				if audit.AuditContextFrom(ctx).Enabled() {
					enabled.Add(1)
				}
				return authorizer.DecisionAllow, "", nil
			})
			if audited {
				c.AuditSink = discardSink{}
				c.AuditPolicy = policy.NewPolicyRuleEvaluator(&auditinternal.Policy{Rules: []auditinternal.PolicyRule{{Level: auditinternal.LevelMetadata}}})
			}
		})
		if _, err := s.client.CoreV1().Namespaces().Get(testContext(t), "default", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if seen.Load() == 0 || (enabled.Load() > 0) != audited {
			t.Errorf("audit log %v: %d of %d requests reached the authorizer audited", audited, enabled.Load(), seen.Load())
		}
	}
}
