package discovery

import (
	"strings"
	"testing"
)

func TestDefaultListsAreValid(t *testing.T) {
	if err := Validate(Default()); err != nil {
		t.Fatalf("Default: %v", err)
	}
}

func TestDefaultServesTheIssueResources(t *testing.T) {
	want := map[string]bool{ // group/resource -> namespaced
		"/namespaces": false, "/pods": true, "/nodes": false, "/events": true, "/configmaps": true,
		"/secrets": true, "/serviceaccounts": true, "/bindings": true, "/services": true, "/endpoints": true,
		"/podtemplates": true, "/replicationcontrollers": true, "/resourcequotas": true, "/limitranges": true,
		"/persistentvolumes": false, "/persistentvolumeclaims": true,
		"discovery.k8s.io/endpointslices": true, "events.k8s.io/events": true,
		"coordination.k8s.io/leases": true, "certificates.k8s.io/certificatesigningrequests": false,
		"rbac.authorization.k8s.io/roles": true, "rbac.authorization.k8s.io/rolebindings": true,
		"rbac.authorization.k8s.io/clusterroles": false, "rbac.authorization.k8s.io/clusterrolebindings": false,
		"authorization.k8s.io/selfsubjectaccessreviews": false, "authorization.k8s.io/subjectaccessreviews": false,
		"authorization.k8s.io/selfsubjectrulesreviews":                   false,
		"authentication.k8s.io/tokenreviews":                             false,
		"authentication.k8s.io/selfsubjectreviews":                       false,
		"authorization.k8s.io/localsubjectaccessreviews":                 true,
		"node.k8s.io/runtimeclasses":                                     false,
		"policy/poddisruptionbudgets":                                    true,
		"autoscaling/horizontalpodautoscalers":                           true,
		"scheduling.k8s.io/priorityclasses":                              false,
		"storage.k8s.io/storageclasses":                                  false,
		"networking.k8s.io/ingresses":                                    true,
		"networking.k8s.io/ingressclasses":                               false,
		"networking.k8s.io/networkpolicies":                              true,
		"networking.k8s.io/ipaddresses":                                  false,
		"networking.k8s.io/servicecidrs":                                 false,
		"flowcontrol.apiserver.k8s.io/flowschemas":                       false,
		"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations":       false,
		"admissionregistration.k8s.io/validatingwebhookconfigurations":   false,
		"admissionregistration.k8s.io/mutatingwebhookconfigurations":     false,
		"admissionregistration.k8s.io/validatingadmissionpolicies":       false,
		"admissionregistration.k8s.io/validatingadmissionpolicybindings": false,
		"admissionregistration.k8s.io/mutatingadmissionpolicies":         false,
		"admissionregistration.k8s.io/mutatingadmissionpolicybindings":   false,
		"storagemigration.k8s.io/storageversionmigrations":               false,
		"apps/deployments":                                               true, "apps/replicasets": true, "apps/statefulsets": true, "apps/daemonsets": true,
		"apps/controllerrevisions": true, "batch/jobs": true, "batch/cronjobs": true,
		"storage.k8s.io/csidrivers": false, "storage.k8s.io/csinodes": false, "storage.k8s.io/csistoragecapacities": true,
		"storage.k8s.io/volumeattachments": false, "storage.k8s.io/volumeattributesclasses": false,
		"resource.k8s.io/deviceclasses": false, "resource.k8s.io/devicetaintrules": false, "resource.k8s.io/resourceclaims": true,
		"resource.k8s.io/resourceclaimtemplates": true, "resource.k8s.io/resourceslices": false,
		"certificates.k8s.io/clustertrustbundles": false, "certificates.k8s.io/podcertificaterequests": true,
	}
	got := map[string]Resource{}
	for _, r := range Default() {
		got[r.Group+"/"+r.Resource] = r
	}
	for name, namespaced := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("%s missing from Default()", name)
			continue
		}
		if r.Namespaced != namespaced {
			t.Errorf("%s: namespaced=%v, want %v", name, r.Namespaced, namespaced)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Default() has %d resources, want %d: %v", len(got), len(want), got)
	}
	pods := got["/pods"]
	if ev, ok := pods.Subresource("eviction"); !ok || ev.GroupVersionKind(pods).String() != "policy/v1, Kind=Eviction" {
		t.Errorf("pods/eviction = %+v, want a policy/v1 Eviction", ev)
	}
	if st, ok := pods.Subresource("status"); !ok || st.GroupVersionKind(pods).String() != "/v1, Kind=Pod" {
		t.Errorf("pods/status = %+v, want a v1 Pod", st)
	}
}

func TestValidateRejectsBadLists(t *testing.T) {
	pod := Resource{Version: "v1", Resource: "pods", Kind: "Pod", SingularName: "pod", Verbs: []string{"get"}, ShortNames: []string{"po"}}
	cases := map[string]struct {
		list []Resource
		want string
	}{
		"duplicate":       {[]Resource{pod, pod}, "listed twice"},
		"no kind":         {[]Resource{{Version: "v1", Resource: "pods", SingularName: "pod", Verbs: []string{"get"}}}, "required"},
		"no verbs":        {[]Resource{{Version: "v1", Resource: "pods", Kind: "Pod", SingularName: "pod"}}, "no verbs"},
		"shortname clash": {[]Resource{pod, {Version: "v1", Resource: "podtemplates", Kind: "PodTemplate", SingularName: "podtemplate", Verbs: []string{"get"}, ShortNames: []string{"po"}}}, `short name "po"`},
		"bad subresource": {[]Resource{{Version: "v1", Resource: "pods", Kind: "Pod", SingularName: "pod", Verbs: []string{"get"},
			Subresources: []Subresource{{Name: "eviction", Group: "policy", Kind: "Eviction", Verbs: []string{"create"}}}}}, "group but no version"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Validate(tc.list)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
