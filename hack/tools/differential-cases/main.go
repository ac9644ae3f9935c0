//go:build upstream

// Command differential-cases writes the differential test's cases
// (internal/e2e/differential/testdata/cases.json) from upstream's own
// storage test data: k8s.io/kubernetes/test/integration/etcd's
// GetEtcdStorageDataForNamespace, the stub object, its mutations, the etcd
// key and the storage version kube-apiserver's integration tests expect per
// resource. It keeps the core group (core/v1), apps/v1, batch/v1,
// discovery.k8s.io/v1 EndpointSlices, node.k8s.io/v1 RuntimeClasses,
// policy/v1 PodDisruptionBudgets, scheduling.k8s.io/v1 PriorityClasses,
// storage.k8s.io/v1 StorageClasses, admissionregistration.k8s.io/v1 webhook
// configurations and validating admission policies, networking.k8s.io/v1 and flowcontrol.apiserver.k8s.io/v1,
// autoscaling's HorizontalPodAutoscalers, CustomResourceDefinitions and
// APIServices, in the namespace the test uses.
//
//	go run -tags upstream ./hack/tools/differential-cases > internal/e2e/differential/testdata/cases.json
//
// hack/verify.sh runs it and fails if the checked-in file differs. Built
// only with -tags upstream, so that go vet, staticcheck and the unit tests
// over ./... do not compile the upstream test packages it imports.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
	etcddata "k8s.io/kubernetes/test/integration/etcd"
)

// namespace is the differential test's namespace for namespaced resources.
const namespace = "differential"

// Case is one resource's upstream data, as the test reads it.
type Case struct {
	Group             string `json:"group"`
	Version           string `json:"version"`
	Resource          string `json:"resource"`
	Stub              string `json:"stub"`
	MutatedStub       string `json:"mutatedStub,omitempty"`
	StatusStub        string `json:"statusStub"`
	MutatedStatusStub string `json:"mutatedStatusStub"`
	ExpectedEtcdPath  string `json:"expectedEtcdPath"`
	// ExpectedStorageVersion is "group/version" (or "version" for the core
	// group) the stored object's apiVersion must be.
	ExpectedStorageVersion string `json:"expectedStorageVersion"`
	ExpectedStorageKind    string `json:"expectedStorageKind,omitempty"`
}

// File is cases.json.
type File struct {
	Source    string `json:"source"`
	Namespace string `json:"namespace"`
	Cases     []Case `json:"cases"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "differential-cases:", err)
		os.Exit(1)
	}
}

// kept reports whether gvr is one of the non-core resources berth serves
// that the test compares.
func kept(gvr schema.GroupVersionResource) bool {
	switch gvr {
	case schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
		schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"},
		schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
		schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
		schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
		schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"},
		schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"},
		schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "clustertrustbundles"},
		schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "podcertificaterequests"},
		schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"},
		schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
		schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
		schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}:
		return true
	}
	switch gvr.GroupVersion() {
	case schema.GroupVersion{Group: "apps", Version: "v1"}, schema.GroupVersion{Group: "batch", Version: "v1"},
		schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}:
		return true
	}
	return gvr.Group == ""
}

func run() error {
	f := File{Source: "k8s.io/kubernetes/test/integration/etcd GetEtcdStorageDataForNamespace", Namespace: namespace}
	for gvr, d := range etcddata.GetEtcdStorageDataForNamespace(namespace) {
		if !kept(gvr) {
			continue
		}
		if d.RemovedVersion != "" || len(d.Prerequisites) > 0 {
			return fmt.Errorf("%s: prerequisites or a removed version, which the test does not handle", gvr)
		}
		c := Case{
			Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource,
			Stub: d.Stub, MutatedStub: d.MutatedStub,
			StatusStub: d.GetStatusStub(), MutatedStatusStub: d.GetMutatedStatusStub(),
			ExpectedEtcdPath:       d.ExpectedEtcdPath,
			ExpectedStorageVersion: gvr.GroupVersion().String(),
		}
		if d.ExpectedGVK != nil {
			c.ExpectedStorageVersion = d.ExpectedGVK.GroupVersion().String()
			c.ExpectedStorageKind = d.ExpectedGVK.Kind
		}
		f.Cases = append(f.Cases, c)
	}
	sort.Slice(f.Cases, func(i, j int) bool {
		a, b := f.Cases[i], f.Cases[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		// One resource served in two versions (HorizontalPodAutoscalers):
		// the data comes from a map, so the version settles the order.
		return a.Version < b.Version
	})
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}
