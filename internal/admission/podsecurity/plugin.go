// Package podsecurity is berth's PodSecurity admission plugin: the
// upstream library (k8s.io/pod-security-admission) decides, this package
// feeds it the API server's requests and turns its answers into what
// kube-apiserver's plugin returns: a 403 Forbidden for an enforce
// violation, "Warning:" response headers for warn, and audit annotations
// for audit.
//
// Upstream's plugin (k8s.io/kubernetes/plugin/pkg/admission/security/
// podsecurity) converts internal API types to v1 before asking the library;
// berth's admission attributes already hold v1 objects, so this package is
// that plugin without the conversion.
package podsecurity

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/warning"
	psadmission "k8s.io/pod-security-admission/admission"
	psconfig "k8s.io/pod-security-admission/admission/api"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// PluginName is the plugin's name in an AdmissionConfiguration file.
const PluginName = "PodSecurity"

// Plugin is the PodSecurity validating admission plugin.
type Plugin struct {
	delegate *psadmission.Admission
}

// Config is what the plugin needs.
type Config struct {
	// Configuration is the cluster's defaults and exemptions
	// (LoadConfiguration; nil: Default()).
	Configuration *psconfig.PodSecurityConfiguration
	// Namespaces and Pods read the namespace's policy labels and, when a
	// namespace's enforce level is tightened, its pods (to warn about the
	// ones that would now be refused). Both are required.
	Namespaces psadmission.NamespaceGetter
	Pods       psadmission.PodLister
	// Metrics records evaluations (NewMetrics); nil records none.
	Metrics *Metrics
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New checks cfg and returns the plugin.
func New(cfg Config) (*Plugin, error) {
	if cfg.Configuration == nil {
		cfg.Configuration = Default()
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("pod security checks: %w", err)
	}
	delegate := &psadmission.Admission{
		Configuration:    cfg.Configuration,
		Evaluator:        evaluator,
		Metrics:          cfg.Metrics.recorder(),
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  cfg.Namespaces,
		PodLister:        cfg.Pods,
	}
	if err := delegate.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security admission: %w", err)
	}
	if err := delegate.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security admission: %w", err)
	}
	return &Plugin{delegate: delegate}, nil
}

// Handles implements admission.Interface: creates and updates, as upstream.
func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Validate implements admission.ValidationInterface. Pods (and their
// subresources the library does not ignore, such as ephemeralcontainers)
// are refused when they violate the namespace's enforce level; namespaces
// whose enforce label is tightened get warnings about their pods; objects
// with pod templates only get warnings and audit annotations.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if gr != corev1.Resource("pods") && gr != corev1.Resource("namespaces") && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	result := p.delegate.Validate(ctx, attributes{a})
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if len(result.AuditAnnotations) > 0 {
		kv := make([]string, 0, 2*len(result.AuditAnnotations))
		for k, v := range result.AuditAnnotations {
			kv = append(kv, psapi.AuditAnnotationPrefix+k, v)
		}
		audit.AddAuditAnnotations(ctx, kv...)
	}
	if result.Allowed {
		return nil
	}
	return refusal(a, result.Result)
}

// refusal is kube-apiserver's error for a refused request: a generic
// Forbidden, with the library's message, reason, details and code where it
// gives them (an invalid namespace label is a 422, a failed namespace
// lookup a 500).
func refusal(a admission.Attributes, st *metav1.Status) error {
	//lint:ignore ST1005 upstream's message, word for word
	err := admission.NewForbidden(a, errors.New("Not allowed by PodSecurity")).(*apierrors.StatusError)
	if st == nil {
		return err
	}
	if st.Message != "" {
		err.ErrStatus.Message = st.Message
	}
	if st.Reason != "" {
		err.ErrStatus.Reason = st.Reason
	}
	if st.Details != nil {
		err.ErrStatus.Details = st.Details
	}
	if st.Code != 0 {
		err.ErrStatus.Code = st.Code
	}
	return err
}
