package discovery

import "strings"

// Verb lists as kube-apiserver advertises them.
var (
	// crudVerbs is every verb of an ordinary stored resource.
	crudVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	// statusVerbs are the verbs of a status-like subresource.
	statusVerbs = []string{"get", "patch", "update"}
	// proxyVerbs are the proxy subresources' verbs.
	proxyVerbs = []string{"create", "delete", "get", "patch", "update"}
)

// Default is the list of resources berth serves, in the order discovery
// advertises them. Adding a resource is adding one entry here (and its
// storage in the REST core).
func Default() []Resource {
	var all []Resource
	for _, group := range [][]Resource{core(), appsV1(), autoscaling(), batchV1(), eventsV1(), coordinationV1(), discoveryV1(), certificatesV1(), networkingV1(), RBAC(), authenticationV1(), Authorization(), nodeV1(), policyV1(), schedulingV1(), storageV1(), resourceV1(), admissionRegistrationV1(), flowControlV1(), storageMigrationV1()} {
		all = append(all, group...)
	}
	return all
}

func core() []Resource {
	return []Resource{
		{Version: "v1", Resource: "bindings", Kind: "Binding", SingularName: "binding", Namespaced: true,
			Verbs: []string{"create"}},
		{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", SingularName: "configmap", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"cm"}},
		{Version: "v1", Resource: "endpoints", Kind: "Endpoints", SingularName: "endpoints", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"ep"}},
		{Version: "v1", Resource: "events", Kind: "Event", SingularName: "event", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"ev"}},
		{Version: "v1", Resource: "limitranges", Kind: "LimitRange", SingularName: "limitrange", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"limits"}},
		{Version: "v1", Resource: "namespaces", Kind: "Namespace", SingularName: "namespace",
			// Upstream does not offer deletecollection on namespaces.
			Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}, ShortNames: []string{"ns"},
			Subresources: []Subresource{
				{Name: "finalize", Kind: "Namespace", Verbs: []string{"update"}},
				{Name: "status", Kind: "Namespace", Verbs: statusVerbs},
			}},
		{Version: "v1", Resource: "nodes", Kind: "Node", SingularName: "node",
			Verbs: crudVerbs, ShortNames: []string{"no"},
			Subresources: []Subresource{
				{Name: "proxy", Connect: true, Kind: "NodeProxyOptions", Verbs: proxyVerbs},
				{Name: "status", Kind: "Node", Verbs: statusVerbs},
			}},
		{Version: "v1", Resource: "persistentvolumeclaims", Kind: "PersistentVolumeClaim", SingularName: "persistentvolumeclaim", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"pvc"},
			Subresources: []Subresource{{Name: "status", Kind: "PersistentVolumeClaim", Verbs: statusVerbs}}},
		{Version: "v1", Resource: "persistentvolumes", Kind: "PersistentVolume", SingularName: "persistentvolume",
			Verbs: crudVerbs, ShortNames: []string{"pv"},
			Subresources: []Subresource{{Name: "status", Kind: "PersistentVolume", Verbs: statusVerbs}}},
		{Version: "v1", Resource: "pods", Kind: "Pod", SingularName: "pod", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"po"}, Categories: []string{"all"},
			Subresources: []Subresource{
				{Name: "attach", Connect: true, Kind: "PodAttachOptions", Verbs: []string{"create", "get"}},
				{Name: "binding", Kind: "Binding", Verbs: []string{"create"}},
				{Name: "ephemeralcontainers", Kind: "Pod", Verbs: statusVerbs},
				{Name: "eviction", Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}},
				{Name: "exec", Connect: true, Kind: "PodExecOptions", Verbs: []string{"create", "get"}},
				{Name: "log", Connect: true, Kind: "Pod", Verbs: []string{"get"}},
				{Name: "portforward", Connect: true, Kind: "PodPortForwardOptions", Verbs: []string{"create", "get"}},
				{Name: "proxy", Connect: true, Kind: "PodProxyOptions", Verbs: proxyVerbs},
				{Name: "resize", Kind: "Pod", Verbs: statusVerbs},
				{Name: "status", Kind: "Pod", Verbs: statusVerbs},
			}},
		{Version: "v1", Resource: "podtemplates", Kind: "PodTemplate", SingularName: "podtemplate", Namespaced: true,
			Verbs: crudVerbs},
		{Version: "v1", Resource: "replicationcontrollers", Kind: "ReplicationController", SingularName: "replicationcontroller", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"rc"}, Categories: []string{"all"},
			Subresources: []Subresource{
				{Name: "scale", Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: statusVerbs},
				{Name: "status", Kind: "ReplicationController", Verbs: statusVerbs},
			}},
		{Version: "v1", Resource: "resourcequotas", Kind: "ResourceQuota", SingularName: "resourcequota", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"quota"},
			Subresources: []Subresource{{Name: "status", Kind: "ResourceQuota", Verbs: statusVerbs}}},
		{Version: "v1", Resource: "secrets", Kind: "Secret", SingularName: "secret", Namespaced: true,
			Verbs: crudVerbs},
		{Version: "v1", Resource: "services", Kind: "Service", SingularName: "service", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"svc"}, Categories: []string{"all"},
			Subresources: []Subresource{
				{Name: "proxy", Connect: true, Kind: "ServiceProxyOptions", Verbs: proxyVerbs},
				{Name: "status", Kind: "Service", Verbs: statusVerbs},
			}},
		{Version: "v1", Resource: "serviceaccounts", Kind: "ServiceAccount", SingularName: "serviceaccount", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"sa"},
			Subresources: []Subresource{{Name: "token", Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: []string{"create"}}}},
	}
}

// appsV1 is apps/v1 as kube-apiserver v1.37 advertises it.
func appsV1() []Resource {
	workload := func(resource, kind string, shortName string, subresources ...string) Resource {
		r := Resource{Group: "apps", Version: "v1", Resource: resource, Kind: kind, SingularName: singular(resource), Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{shortName}, Categories: []string{"all"}}
		for _, sub := range subresources {
			switch sub {
			case "scale":
				r.Subresources = append(r.Subresources, Subresource{Name: "scale", Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: statusVerbs})
			case "status":
				r.Subresources = append(r.Subresources, Subresource{Name: "status", Kind: kind, Verbs: statusVerbs})
			}
		}
		return r
	}
	return []Resource{
		{Group: "apps", Version: "v1", Resource: "controllerrevisions", Kind: "ControllerRevision", SingularName: "controllerrevision",
			Namespaced: true, Verbs: crudVerbs},
		workload("daemonsets", "DaemonSet", "ds", "status"),
		workload("deployments", "Deployment", "deploy", "scale", "status"),
		workload("replicasets", "ReplicaSet", "rs", "scale", "status"),
		workload("statefulsets", "StatefulSet", "sts", "scale", "status"),
	}
}

// autoscaling is autoscaling/v2 (preferred) and v1 as kube-apiserver v1.37
// advertises them.
func autoscaling() []Resource {
	var out []Resource
	for _, version := range []string{"v2", "v1"} {
		out = append(out, Resource{Group: "autoscaling", Version: version, Resource: "horizontalpodautoscalers",
			Kind: "HorizontalPodAutoscaler", SingularName: "horizontalpodautoscaler", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"hpa"}, Categories: []string{"all"},
			Subresources: []Subresource{{Name: "status", Kind: "HorizontalPodAutoscaler", Verbs: statusVerbs}}})
	}
	return out
}

// batchV1 is batch/v1 as kube-apiserver v1.37 advertises it.
func batchV1() []Resource {
	return []Resource{
		{Group: "batch", Version: "v1", Resource: "cronjobs", Kind: "CronJob", SingularName: "cronjob", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"cj"}, Categories: []string{"all"},
			Subresources: []Subresource{{Name: "status", Kind: "CronJob", Verbs: statusVerbs}}},
		{Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job", SingularName: "job", Namespaced: true,
			Verbs: crudVerbs, Categories: []string{"all"},
			Subresources: []Subresource{{Name: "status", Kind: "Job", Verbs: statusVerbs}}},
	}
}

func discoveryV1() []Resource {
	return []Resource{
		{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Kind: "EndpointSlice", SingularName: "endpointslice", Namespaced: true,
			Verbs: crudVerbs},
	}
}

func eventsV1() []Resource {
	return []Resource{
		{Group: "events.k8s.io", Version: "v1", Resource: "events", Kind: "Event", SingularName: "event", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"ev"}},
	}
}

func coordinationV1() []Resource {
	return []Resource{
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", SingularName: "lease", Namespaced: true,
			Verbs: crudVerbs},
	}
}

func certificatesV1() []Resource {
	return []Resource{
		{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests", Kind: "CertificateSigningRequest",
			SingularName: "certificatesigningrequest", Verbs: crudVerbs, ShortNames: []string{"csr"},
			Subresources: []Subresource{
				{Name: "approval", Kind: "CertificateSigningRequest", Verbs: statusVerbs},
				{Name: "status", Kind: "CertificateSigningRequest", Verbs: statusVerbs},
			}},
		{Group: "certificates.k8s.io", Version: "v1", Resource: "clustertrustbundles", Kind: "ClusterTrustBundle",
			SingularName: "clustertrustbundle", Verbs: crudVerbs},
		{Group: "certificates.k8s.io", Version: "v1", Resource: "podcertificaterequests", Kind: "PodCertificateRequest",
			SingularName: "podcertificaterequest", Namespaced: true, Verbs: crudVerbs,
			Subresources: []Subresource{{Name: "status", Kind: "PodCertificateRequest", Verbs: statusVerbs}}},
	}
}

func networkingV1() []Resource {
	networking := func(resource, kind string, namespaced bool, shortNames ...string) Resource {
		return Resource{Group: "networking.k8s.io", Version: "v1", Resource: resource, Kind: kind,
			SingularName: singular(resource), Namespaced: namespaced, Verbs: crudVerbs, ShortNames: shortNames}
	}
	ingresses := networking("ingresses", "Ingress", true, "ing")
	ingresses.SingularName = "ingress"
	ingresses.Subresources = []Subresource{{Name: "status", Kind: "Ingress", Verbs: statusVerbs}}
	ingressClasses := networking("ingressclasses", "IngressClass", false)
	ingressClasses.SingularName = "ingressclass"
	networkPolicies := networking("networkpolicies", "NetworkPolicy", true, "netpol")
	networkPolicies.SingularName = "networkpolicy"
	ipAddresses := networking("ipaddresses", "IPAddress", false, "ip")
	ipAddresses.SingularName = "ipaddress"
	serviceCIDRs := networking("servicecidrs", "ServiceCIDR", false)
	serviceCIDRs.Subresources = []Subresource{{Name: "status", Kind: "ServiceCIDR", Verbs: statusVerbs}}
	return []Resource{ingressClasses, ingresses, ipAddresses, networkPolicies, serviceCIDRs}
}

// admissionRegistrationV1 is admissionregistration.k8s.io/v1.
func admissionRegistrationV1() []Resource {
	return []Resource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies", Kind: "MutatingAdmissionPolicy",
			SingularName: "mutatingadmissionpolicy", Verbs: crudVerbs, Categories: []string{"api-extensions"}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings", Kind: "MutatingAdmissionPolicyBinding",
			SingularName: "mutatingadmissionpolicybinding", Verbs: crudVerbs, Categories: []string{"api-extensions"}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations", Kind: "MutatingWebhookConfiguration",
			SingularName: "mutatingwebhookconfiguration", Verbs: crudVerbs, Categories: []string{"api-extensions"}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies", Kind: "ValidatingAdmissionPolicy",
			SingularName: "validatingadmissionpolicy", Verbs: crudVerbs, Categories: []string{"api-extensions"},
			Subresources: []Subresource{{Name: "status", Kind: "ValidatingAdmissionPolicy", Verbs: statusVerbs}}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings", Kind: "ValidatingAdmissionPolicyBinding",
			SingularName: "validatingadmissionpolicybinding", Verbs: crudVerbs, Categories: []string{"api-extensions"}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations", Kind: "ValidatingWebhookConfiguration",
			SingularName: "validatingwebhookconfiguration", Verbs: crudVerbs, Categories: []string{"api-extensions"}},
	}
}

func flowControlV1() []Resource {
	return []Resource{
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas", Kind: "FlowSchema", SingularName: "flowschema",
			Verbs: crudVerbs, Subresources: []Subresource{{Name: "status", Kind: "FlowSchema", Verbs: statusVerbs}}},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations", Kind: "PriorityLevelConfiguration",
			SingularName: "prioritylevelconfiguration", Verbs: crudVerbs,
			Subresources: []Subresource{{Name: "status", Kind: "PriorityLevelConfiguration", Verbs: statusVerbs}}},
	}
}

func storageMigrationV1() []Resource {
	return []Resource{
		{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations", Kind: "StorageVersionMigration",
			SingularName: "storageversionmigration", Verbs: crudVerbs,
			Subresources: []Subresource{{Name: "status", Kind: "StorageVersionMigration", Verbs: statusVerbs}}},
	}
}

func nodeV1() []Resource {
	return []Resource{
		{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses", Kind: "RuntimeClass", SingularName: "runtimeclass",
			Verbs: crudVerbs},
	}
}

func policyV1() []Resource {
	return []Resource{
		{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Kind: "PodDisruptionBudget", SingularName: "poddisruptionbudget", Namespaced: true,
			Verbs: crudVerbs, ShortNames: []string{"pdb"},
			Subresources: []Subresource{{Name: "status", Kind: "PodDisruptionBudget", Verbs: statusVerbs}}},
	}
}

func schedulingV1() []Resource {
	return []Resource{
		{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses", Kind: "PriorityClass", SingularName: "priorityclass",
			Verbs: crudVerbs, ShortNames: []string{"pc"}},
	}
}

func storageV1() []Resource {
	storage := func(resource, kind string, namespaced bool, shortNames ...string) Resource {
		return Resource{Group: "storage.k8s.io", Version: "v1", Resource: resource, Kind: kind,
			SingularName: strings.ToLower(kind), Namespaced: namespaced, Verbs: crudVerbs, ShortNames: shortNames}
	}
	csiNodes := storage("csinodes", "CSINode", false)
	csiNodes.Subresources = []Subresource{{Name: "status", Kind: "CSINode", Verbs: statusVerbs}}
	volumeAttachments := storage("volumeattachments", "VolumeAttachment", false)
	volumeAttachments.Subresources = []Subresource{{Name: "status", Kind: "VolumeAttachment", Verbs: statusVerbs}}
	return []Resource{
		storage("csidrivers", "CSIDriver", false), csiNodes, storage("csistoragecapacities", "CSIStorageCapacity", true),
		storage("storageclasses", "StorageClass", false, "sc"), volumeAttachments,
		storage("volumeattributesclasses", "VolumeAttributesClass", false, "vac"),
	}
}

// resourceV1 is resource.k8s.io/v1, dynamic resource allocation.
func resourceV1() []Resource {
	dra := func(resource, kind string, namespaced bool, subresources ...string) Resource {
		r := Resource{Group: "resource.k8s.io", Version: "v1", Resource: resource, Kind: kind,
			SingularName: strings.ToLower(kind), Namespaced: namespaced, Verbs: crudVerbs}
		for _, name := range subresources {
			r.Subresources = append(r.Subresources, Subresource{Name: name, Kind: kind, Verbs: statusVerbs})
		}
		return r
	}
	return []Resource{
		dra("deviceclasses", "DeviceClass", false),
		dra("devicetaintrules", "DeviceTaintRule", false, "status"),
		dra("resourceclaims", "ResourceClaim", true, "status"),
		dra("resourceclaimtemplates", "ResourceClaimTemplate", true),
		dra("resourceslices", "ResourceSlice", false),
	}
}

// RBAC is rbac.authorization.k8s.io/v1.
func RBAC() []Resource {
	rbac := func(resource, kind string, namespaced bool) Resource {
		return Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource, Kind: kind,
			SingularName: singular(resource), Namespaced: namespaced, Verbs: crudVerbs}
	}
	return []Resource{
		rbac("clusterrolebindings", "ClusterRoleBinding", false),
		rbac("clusterroles", "ClusterRole", false),
		rbac("rolebindings", "RoleBinding", true),
		rbac("roles", "Role", true),
	}
}

// authenticationV1 is authentication.k8s.io/v1's reviews, create-only and
// never stored.
func authenticationV1() []Resource {
	return []Resource{
		{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews", Kind: "SelfSubjectReview",
			SingularName: "selfsubjectreview", Verbs: []string{"create"}},
		{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews", Kind: "TokenReview",
			SingularName: "tokenreview", Verbs: []string{"create"}},
	}
}

// Authorization is authorization.k8s.io/v1's access and rules reviews,
// which are create-only and never stored.
func Authorization() []Resource {
	review := func(resource, kind string, namespaced bool) Resource {
		return Resource{Group: "authorization.k8s.io", Version: "v1", Resource: resource, Kind: kind,
			SingularName: singular(resource), Namespaced: namespaced, Verbs: []string{"create"}}
	}
	return []Resource{
		review("localsubjectaccessreviews", "LocalSubjectAccessReview", true),
		review("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
		review("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
		review("subjectaccessreviews", "SubjectAccessReview", false),
	}
}

// singular is the singular name of a plural resource whose plural only adds
// an "s", which holds for every resource in these lists.
func singular(plural string) string { return plural[:len(plural)-1] }
