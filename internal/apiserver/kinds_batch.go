package apiserver

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	batchapi "k8s.io/kubernetes/pkg/apis/batch"
	// The batch group's internal types, defaults and conversions in the
	// legacy scheme, which upstream's batch strategies use.
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
)

// batchResources are batch/v1's Jobs and CronJobs, each prepared and
// validated by upstream's registry strategy and kept under
// kube-apiserver's etcd key (the resource's name); upstream's controllers
// (internal/controller/batch) act on them. As upstream, deleting a batch/v1
// Job without a propagation policy orphans its pods.
func batchResources() []*resource {
	batch := batchv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: batch.WithResource("jobs"), kind: "Job", singular: "job", namespaced: true,
			newObj: newOf[batchv1.Job](), newList: newOf[batchv1.JobList](),
			rules: kindRules{fields: upstreamFields(func() runtime.Object { return &batchapi.Job{} }, job.GetAttrs)},
			registry: &registryKind{strategy: job.Strategy, newInternal: func() runtime.Object { return &batchapi.Job{} },
				subresources: map[string]upstreamStrategy{"status": job.StatusStrategy}},
			subresources: []string{"status"},
			// Upstream's Job storage's warning, word for word.
			orphanWarning: "child pods are preserved by default when jobs are deleted; " +
				"set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning",
		},
		{
			gvr: batch.WithResource("cronjobs"), kind: "CronJob", singular: "cronjob", shortNames: []string{"cj"}, namespaced: true,
			newObj: newOf[batchv1.CronJob](), newList: newOf[batchv1.CronJobList](),
			registry: &registryKind{strategy: cronjob.Strategy, newInternal: func() runtime.Object { return &batchapi.CronJob{} },
				subresources: map[string]upstreamStrategy{"status": cronjob.StatusStrategy}},
			subresources: []string{"status"},
		},
	}
}
