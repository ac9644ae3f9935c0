package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func jobTemplate() corev1.PodTemplateSpec {
	t := webTemplate()
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return t
}

// TestBatchKindsUseUpstreamRules creates Jobs and CronJobs valid and
// invalid: the defaults (a generated selector and its labels) and the
// refusals are kube-apiserver's, as is the orphaning default of a batch/v1
// Job's delete.
func TestBatchKindsUseUpstreamRules(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	batch := s.client.BatchV1()

	job, err := batch.Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: jobTemplate()}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create job: %v", err)
	}
	if job.Spec.Selector == nil || job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] != string(job.UID) ||
		job.Spec.Template.Labels[batchv1.JobNameLabel] != "pi" || ptr.Deref(job.Spec.BackoffLimit, 0) != 6 ||
		ptr.Deref(job.Spec.Completions, 0) != 1 || job.Spec.CompletionMode == nil {
		t.Fatalf("job defaults: %+v", job.Spec)
	}
	bad := webTemplate()
	bad.Spec.RestartPolicy = corev1.RestartPolicyAlways
	_, err = batch.Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "always"},
		Spec: batchv1.JobSpec{Template: bad}}, metav1.CreateOptions{})
	wantInvalidOn(t, "job whose pods always restart", err, "spec.template.spec.restartPolicy")
	job.Spec.Completions = ptr.To[int32](3)
	_, err = batch.Jobs("default").Update(ctx, job, metav1.UpdateOptions{})
	wantInvalidOn(t, "job completions change", err, "spec.completions")
	// status.successful is a field selector of Jobs, as upstream.
	list, err := batch.Jobs("default").List(ctx, metav1.ListOptions{FieldSelector: "status.successful=0"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("jobs with status.successful=0: %v, %v", list, err)
	}

	cj, err := batch.CronJobs("default").Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "hourly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate()}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cronjob: %v", err)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || ptr.Deref(cj.Spec.SuccessfulJobsHistoryLimit, 0) != 3 || cj.Spec.Suspend == nil {
		t.Fatalf("cronjob defaults: %+v", cj.Spec)
	}
	_, err = batch.CronJobs("default").Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "never"},
		Spec: batchv1.CronJobSpec{Schedule: "not a schedule", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate()}}}},
		metav1.CreateOptions{})
	wantInvalidOn(t, "cronjob with an invalid schedule", err, "spec.schedule")

	for _, key := range []string{"/registry/jobs/default/pi", "/registry/cronjobs/default/hourly"} {
		if kv, err := s.store.Get(ctx, key); err != nil || len(kv.Value) == 0 {
			t.Errorf("kube-apiserver's key %s: %v", key, err)
		}
	}
}

// TestJobDeleteOrphansByDefault: a batch/v1 Job deleted without a
// propagation policy orphans its pods (upstream's strategy's default for
// batch/v1), so the delete adds the orphan finalizer, and warns as
// upstream's Job storage does.
func TestJobDeleteOrphansByDefault(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	jobs := s.client.BatchV1().Jobs("default")
	if _, err := jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: jobTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As upstream, a delete that names no propagation policy is warned.
	var warned recordedWarnings
	cfg := rest.CopyConfig(s.config)
	cfg.WarningHandler = &warned
	if err := kubernetes.NewForConfigOrDie(cfg).BatchV1().Jobs("default").Delete(ctx, "pi", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "child pods are preserved by default when jobs are deleted") {
		t.Fatalf("warnings of a default delete: %q", warned)
	}
	got, err := jobs.Get(ctx, "pi", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, metav1.FinalizerOrphanDependents) {
		t.Fatalf("job after a default delete: %+v, %v; want it marked with the orphan finalizer", got, err)
	}
	// A Job's status subresource answers like the main resource's.
	if _, err := jobs.UpdateStatus(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("status of a missing job: %v, want NotFound", err)
	}
}

// recordedWarnings keeps the warnings a client is sent (client-go hands
// them over within the request's call).
type recordedWarnings []string

func (w *recordedWarnings) HandleWarningHeader(_ int, _ string, text string) { *w = append(*w, text) }
