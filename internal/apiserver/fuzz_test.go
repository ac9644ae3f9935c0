package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"sigs.k8s.io/yaml"

	"github.com/berth/berth/internal/testkit/etcdtest"
)

// fuzzNamespace holds the namespaced objects the fuzzer writes against.
const fuzzNamespace = "fuzz"

// fuzzExisting names the object of each kind that updates and patches
// change (with dryRun: it never actually changes); existingName makes it
// unique per kind (events.k8s.io Events are stored as core Events).
const fuzzExisting = "fuzz-existing"

func existingName(res *resource) string {
	if res.kind == "IPAddress" {
		return "192.0.2.44" // named by the address it holds
	}
	if res.gvr.Group == "" {
		return fuzzExisting
	}
	// A DNS label: StatefulSets' and others' names may hold no dots. A
	// kind served in two versions of one group has one object per version.
	name := fuzzExisting + "-" + strings.ReplaceAll(res.gvr.Group, ".", "-")
	if _, perVersion := fuzzFixtures[fixtureKey(res)]; perVersion && fixtureKey(res) != res.gvr.Group+"/"+res.kind {
		name += "-" + res.gvr.Version
	}
	return name
}

// fixtureKey is res's key in fuzzFixtures: "group/version/Kind" for a kind
// served in several versions, "group/Kind" otherwise.
func fixtureKey(res *resource) string {
	if key := res.gvr.Group + "/" + res.gvr.Version + "/" + res.kind; fuzzFixtures[key] != "" {
		return key
	}
	return res.gvr.Group + "/" + res.kind
}

// fuzzFixtures are one valid object per served kind, by fixtureKey, as
// JSON with the name left as %[1]s: the objects PUT and PATCH target, and
// the seeds every body starts from.
var fuzzFixtures = map[string]string{
	"/Namespace": `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%[1]q,"labels":{"a":"b"}}}`,
	"/Pod": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%[1]q,"labels":{"app":"web"},"annotations":{"x":"y"}},
		"spec":{"containers":[{"name":"c","image":"busybox","command":["sh"],"env":[{"name":"A","value":"1"}],
		"ports":[{"containerPort":80}],"resources":{"requests":{"cpu":"100m","memory":"1Mi"}},
		"volumeMounts":[{"name":"v","mountPath":"/v"}],"readinessProbe":{"exec":{"command":["true"]}}}],
		"volumes":[{"name":"v","emptyDir":{}}],"tolerations":[{"key":"k","operator":"Exists"}]}}`,
	"/Node": `{"apiVersion":"v1","kind":"Node","metadata":{"name":%[1]q,"labels":{"kubernetes.io/hostname":"n"}},
		"spec":{"podCIDR":"10.1.0.0/24","taints":[{"key":"k","effect":"NoSchedule"}]},
		"status":{"capacity":{"cpu":"2","memory":"1Gi","pods":"110"},"allocatable":{"cpu":"2","memory":"1Gi","pods":"110"}}}`,
	"/Event": `{"apiVersion":"v1","kind":"Event","metadata":{"name":%[1]q},"involvedObject":{"kind":"Pod","namespace":"fuzz","name":"p"},
		"reason":"Started","message":"m","type":"Normal","source":{"component":"c"},"count":1,
		"firstTimestamp":"2026-12-01T00:00:00Z","lastTimestamp":"2026-12-01T00:00:00Z"}`,
	"events.k8s.io/Event": `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":%[1]q},
		"eventTime":"2026-12-01T00:00:00.000000Z","reportingController":"c","reportingInstance":"i","action":"Start",
		"reason":"Started","regarding":{"kind":"Pod","namespace":"fuzz","name":"p"},"type":"Normal","note":"n"}`,
	"/ConfigMap": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%[1]q},"data":{"k":"v"},"binaryData":{"b":"AAE="}}`,
	"/Service": `{"apiVersion":"v1","kind":"Service","metadata":{"name":%[1]q},"spec":{"type":"NodePort","selector":{"app":"web"},
		"ports":[{"name":"http","port":80,"targetPort":8080}]}}`,
	"/Endpoints": `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":%[1]q},
		"subsets":[{"addresses":[{"ip":"192.0.2.10"}],"ports":[{"name":"http","port":8080}]}]}`,
	"discovery.k8s.io/EndpointSlice": `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":%[1]q,
		"labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4",
		"endpoints":[{"addresses":["192.0.2.10"],"conditions":{"ready":true}}],"ports":[{"name":"http","port":8080}]}`,
	"/Secret": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":%[1]q},"type":"Opaque","data":{"k":"dg=="},"stringData":{"s":"v"}}`,
	"/PodTemplate": `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":%[1]q,"labels":{"a":"b"}},
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}`,
	"/ReplicationController": `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":%[1]q},
		"spec":{"replicas":0,"selector":{"app":"web"},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/Deployment": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%[1]q},
		"spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/ReplicaSet": `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":%[1]q},
		"spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/StatefulSet": `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":%[1]q},
		"spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/DaemonSet": `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":%[1]q},
		"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"batch/Job": `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":%[1]q},"spec":{"suspend":true,"template":{"metadata":{"labels":{"app":"web"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`,
	"batch/CronJob": `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":%[1]q},
		"spec":{"schedule":"*/5 * * * *","suspend":true,"jobTemplate":{"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`,
	"apps/ControllerRevision": `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":%[1]q},"revision":1,"data":{"a":1}}`,
	"/ResourceQuota":          `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":%[1]q},"spec":{"hard":{"pods":"10","requests.cpu":"2"}}}`,
	"/LimitRange": `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":%[1]q},
		"spec":{"limits":[{"type":"Container","default":{"cpu":"200m"},"defaultRequest":{"cpu":"100m"}}]}}`,
	"/PersistentVolume": `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":%[1]q},
		"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/pv"}}}`,
	"/PersistentVolumeClaim": `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":%[1]q},
		"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
	"/ServiceAccount": `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":%[1]q},"secrets":[{"name":"s"}]}`,
	"coordination.k8s.io/Lease": `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%[1]q},
		"spec":{"holderIdentity":"h","leaseDurationSeconds":40,"renewTime":"2026-12-01T00:00:00.000000Z"}}`,
	"certificates.k8s.io/CertificateSigningRequest": `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":%[1]q},
		"spec":{"request":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==",
		"signerName":"kubernetes.io/kube-apiserver-client-kubelet","usages":["client auth"]}}`,
	"rbac.authorization.k8s.io/Role": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":%[1]q},
		"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`,
	"rbac.authorization.k8s.io/ClusterRole": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":%[1]q},
		"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]},{"nonResourceURLs":["/healthz"],"verbs":["get"]}],
		"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b"}}]}}`,
	"rbac.authorization.k8s.io/RoleBinding": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":%[1]q},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},
		"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"fuzz"},{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"u"}]}`,
	"rbac.authorization.k8s.io/ClusterRoleBinding": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":%[1]q},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"r"},
		"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"g"}]}`,
	"node.k8s.io/RuntimeClass": `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":%[1]q},"handler":"test-handler",
		"overhead":{"podFixed":{"cpu":"10m"}},"scheduling":{"nodeSelector":{"a":"b"}}}`,
	"autoscaling/v2/HorizontalPodAutoscaler": `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":%[1]q},
		"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":3,
		"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]}}`,
	"autoscaling/v1/HorizontalPodAutoscaler": `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":%[1]q},
		"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":3,"targetCPUUtilizationPercentage":50}}`,
	"policy/PodDisruptionBudget": `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":%[1]q},
		"spec":{"maxUnavailable":"25%%","selector":{"matchLabels":{"app":"web"}},"unhealthyPodEvictionPolicy":"AlwaysAllow"}}`,
	"scheduling.k8s.io/PriorityClass": `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":%[1]q},"value":1000,
		"preemptionPolicy":"Never","description":"d"}`,
	"networking.k8s.io/Ingress": `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":%[1]q},
		"spec":{"ingressClassName":"web","defaultBackend":{"service":{"name":"web","port":{"number":80}}},
		"rules":[{"host":"example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"name":"http"}}}}]}}],
		"tls":[{"hosts":["example.com"],"secretName":"tls"}]}}`,
	"networking.k8s.io/IngressClass": `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":%[1]q},
		"spec":{"controller":"example.com/ingress","parameters":{"apiGroup":"example.com","kind":"Params","name":"p","scope":"Cluster"}}}`,
	"networking.k8s.io/NetworkPolicy": `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":%[1]q},
		"spec":{"podSelector":{"matchLabels":{"app":"web"}},"policyTypes":["Ingress","Egress"],
		"ingress":[{"from":[{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}}],"ports":[{"protocol":"TCP","port":80,"endPort":90}]}],
		"egress":[{"to":[{"namespaceSelector":{"matchLabels":{"team":"a"}}}]}]}}`,
	"networking.k8s.io/IPAddress": `{"apiVersion":"networking.k8s.io/v1","kind":"IPAddress","metadata":{"name":%[1]q},
		"spec":{"parentRef":{"resource":"services","namespace":"fuzz","name":"web"}}}`,
	"networking.k8s.io/ServiceCIDR": `{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":%[1]q},
		"spec":{"cidrs":["10.200.0.0/16","fd00:10::/112"]}}`,
	"flowcontrol.apiserver.k8s.io/FlowSchema": `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":%[1]q},
		"spec":{"priorityLevelConfiguration":{"name":"workload-low"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
		"rules":[{"subjects":[{"kind":"Group","group":{"name":"system:authenticated"}}],
		"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["*"]}],
		"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}]}}`,
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration": `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":%[1]q},
		"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"lendablePercent":10,
		"limitResponse":{"type":"Queue","queuing":{"queues":16,"handSize":4,"queueLengthLimit":50}}}}}`,
	"storagemigration.k8s.io/StorageVersionMigration": `{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":%[1]q},
		"spec":{"resource":{"group":"apps","resource":"deployments"}}}`,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":%[1]q},
		"webhooks":[{"name":"deny.example.com","clientConfig":{"url":"https://192.0.2.1:9443/validate"},"failurePolicy":"Ignore","sideEffects":"None",
		"admissionReviewVersions":["v1"],"timeoutSeconds":1,"rules":[{"operations":["CREATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]}]}`,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":%[1]q},
		"webhooks":[{"name":"label.example.com","clientConfig":{"service":{"namespace":"fuzz","name":"hook","port":443}},"failurePolicy":"Ignore","sideEffects":"None",
		"admissionReviewVersions":["v1"],"reinvocationPolicy":"IfNeeded","rules":[{"operations":["CREATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]}]}`,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":%[1]q},
		"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]},
		"validations":[{"expression":"object.metadata.name != 'forbidden'","message":"no"}]}}`,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":%[1]q},
		"spec":{"policyName":"widgets","validationActions":["Deny"]}}`,
	"admissionregistration.k8s.io/MutatingAdmissionPolicy": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":%[1]q},
		"spec":{"failurePolicy":"Fail","reinvocationPolicy":"Never","matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]},
		"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'fuzzed': 'true'}}}"}}]}}`,
	"admissionregistration.k8s.io/MutatingAdmissionPolicyBinding": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":%[1]q},
		"spec":{"policyName":"widgets"}}`,
	// A bundle without a signer, whose name may be anything; the request
	// is upstream's storage test data's (its proof of possession holds).
	"certificates.k8s.io/ClusterTrustBundle": `{"apiVersion":"certificates.k8s.io/v1","kind":"ClusterTrustBundle","metadata":{"name":%[1]q},
		"spec":{"trustBundle":"-----BEGIN CERTIFICATE-----\nMIIBBDCBt6ADAgECAgEAMAUGAytlcDAQMQ4wDAYDVQQDEwVyb290MTAiGA8wMDAx\nMDEwMTAwMDAwMFoYDzAwMDEwMTAxMDAwMDAwWjAQMQ4wDAYDVQQDEwVyb290MTAq\nMAUGAytlcAMhAF2MoFeGa97gK2NGT1h6p1/a1GlMXAXbcjI/OShyIobPozIwMDAP\nBgNVHRMBAf8EBTADAQH/MB0GA1UdDgQWBBTWDdK2CNQiHqRjPaAWYPPtIykQgjAF\nBgMrZXADQQCtom9WGl7m2SAa4tXM9Soo/mbInBsRhn187BMoqTAHInHchKup5/3y\nl1tYJSZZsEXnXrCvw2qLCBNif6+2YYgE\n-----END CERTIFICATE-----\n"}}`,
	"certificates.k8s.io/PodCertificateRequest": `{"apiVersion":"certificates.k8s.io/v1","kind":"PodCertificateRequest","metadata":{"name":%[1]q},
		"spec":{"signerName":"example.com/signer","podName":"pod-1","podUID":"pod-uid-1","serviceAccountName":"sa-1","serviceAccountUID":"sa-uid-1",
		"nodeName":"node-1","nodeUID":"node-uid-1","maxExpirationSeconds":86400,
		"stubPKCS10Request":"MIGNMEECAQAwDjEMMAoGA1UEAxMDZm9vMCowBQYDK2VwAyEA33notc99UJwFQmOojmMx5+OHh3eSxnCXPD8y4+3fCOigADAFBgMrZXADQQB201a14Mlk73XPyT7Ff/Ln0SIDL/YO4MIqPDYnpO1pA2s3vyo0H8qkvxo9WMNLeY5MZa2uG3gqZzXjjyWV38QA"}}`,
	"storage.k8s.io/StorageClass": `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":%[1]q},"provisioner":"example.com/local",
		"parameters":{"path":"/srv"},"reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer","allowVolumeExpansion":true}`,
	"storage.k8s.io/CSIDriver": `{"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":%[1]q},
		"spec":{"attachRequired":false,"podInfoOnMount":true,"volumeLifecycleModes":["Persistent","Ephemeral"]}}`,
	"storage.k8s.io/CSINode": `{"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":%[1]q},
		"spec":{"drivers":[{"name":"csi.example.com","nodeID":"node-a","topologyKeys":["zone"],"allocatable":{"count":8}}]}}`,
	"storage.k8s.io/CSIStorageCapacity": `{"apiVersion":"storage.k8s.io/v1","kind":"CSIStorageCapacity","metadata":{"name":%[1]q},
		"storageClassName":"local","capacity":"10Gi","nodeTopology":{"matchLabels":{"zone":"a"}}}`,
	"storage.k8s.io/VolumeAttachment": `{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttachment","metadata":{"name":%[1]q},
		"spec":{"attacher":"csi.example.com","nodeName":"node-a","source":{"persistentVolumeName":"pv-1"}}}`,
	"storage.k8s.io/VolumeAttributesClass": `{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttributesClass","metadata":{"name":%[1]q},
		"driverName":"csi.example.com","parameters":{"iops":"3000"}}`,
	"resource.k8s.io/DeviceClass": `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":%[1]q},
		"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.example.com'"}}]}}`,
	"resource.k8s.io/DeviceTaintRule": `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":%[1]q},
		"spec":{"deviceSelector":{"driver":"gpu.example.com"},"taint":{"key":"example.com/broken","effect":"NoSchedule"}}}`,
	"resource.k8s.io/ResourceClaim": `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":%[1]q},
		"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com","count":2,"allocationMode":"ExactCount"}}]}}}`,
	"resource.k8s.io/ResourceClaimTemplate": `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":%[1]q},
		"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}}}`,
	"resource.k8s.io/ResourceSlice": `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":%[1]q},
		"spec":{"driver":"gpu.example.com","nodeName":"node-a","pool":{"name":"node-a","generation":1,"resourceSliceCount":1},
		"devices":[{"name":"gpu-0","attributes":{"model":{"string":"x1"}}}]}}`,
}

// The write requests the fuzzer makes: the body's encoding and the verb.
const (
	fuzzCreate = iota // POST, body as the format says
	fuzzUpdate        // PUT of fuzzExisting, body as the format says
	fuzzPatch         // PATCH of fuzzExisting, patch type from fuzzPatchTypes
	fuzzVerbs
)

var fuzzFormats = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}

var fuzzPatchTypes = []string{
	"application/json-patch+json", "application/merge-patch+json",
	"application/strategic-merge-patch+json", "application/apply-patch+yaml",
}

var fuzzFieldValidation = []string{"Strict", "Warn", "Ignore"}

// fuzzServer is a berth API server over a real embedded etcd, called
// in-process (no listener), with fuzzExisting of every kind in place.
type fuzzServer struct {
	handler   http.Handler
	resources []*resource
	revision  func() (int64, error)
	codecs    codecs
}

func newFuzzServer(f *testing.F) *fuzzServer {
	st := etcdtest.New(f)
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	handler, err := New(ctx, Config{
		Store:         st,
		Authenticator: adminAuthenticator,
		Authorizer:    authorizerfactory.NewAlwaysAllowAuthorizer(),
		Logger:        slog.New(slog.DiscardHandler),
		Metrics:       prometheus.NewRegistry(),
		LocalReads:    NewLocalReads(),
	})
	if err != nil {
		f.Fatalf("New: %v", err)
	}
	resources := servedResources()
	scheme, err := newScheme(resources)
	if err != nil {
		f.Fatal(err)
	}
	s := &fuzzServer{handler: handler, resources: resources, codecs: newCodecs(scheme),
		revision: func() (int64, error) { return st.CurrentRevision(context.Background()) }}
	if code, body := s.do("POST", "/api/v1/namespaces", "application/json", []byte(fmt.Sprintf(fuzzFixtures["/Namespace"], fuzzNamespace))); code != http.StatusCreated {
		f.Fatalf("create namespace %s: %d %s", fuzzNamespace, code, body)
	}
	for _, res := range resources {
		code, body := s.do("POST", s.collectionPath(res), "application/json", s.fixture(f, res, existingName(res)))
		if code != http.StatusCreated {
			f.Fatalf("create %s %s: %d %s", res.gvr.Resource, existingName(res), code, body)
		}
	}
	return s
}

func (s *fuzzServer) fixture(tb testing.TB, res *resource, name string) []byte {
	tb.Helper()
	tmpl, ok := fuzzFixtures[fixtureKey(res)]
	if !ok {
		tb.Fatalf("no fuzz fixture for %s: add one to fuzzFixtures", fixtureKey(res))
	}
	return []byte(fmt.Sprintf(tmpl, name))
}

// encode renders a JSON fixture in the given format.
func (s *fuzzServer) encode(tb testing.TB, res *resource, jsonBody []byte, format string) []byte {
	tb.Helper()
	switch format {
	case "application/yaml":
		out, err := yaml.JSONToYAML(jsonBody)
		if err != nil {
			tb.Fatal(err)
		}
		return out
	case "application/vnd.kubernetes.protobuf":
		obj := res.newObj()
		if err := json.Unmarshal(jsonBody, obj); err != nil {
			tb.Fatal(err)
		}
		var buf bytes.Buffer
		if err := protobuf.NewSerializer(s.codecs.scheme, s.codecs.scheme).Encode(obj, &buf); err != nil {
			tb.Fatal(err)
		}
		return buf.Bytes()
	}
	return jsonBody
}

func (s *fuzzServer) collectionPath(res *resource) string {
	p := "/api/" + res.gvr.Version
	if res.gvr.Group != "" {
		p = "/apis/" + res.gvr.Group + "/" + res.gvr.Version
	}
	if res.namespaced {
		p += "/namespaces/" + fuzzNamespace
	}
	return p + "/" + res.gvr.Resource
}

func (s *fuzzServer) do(method, path, contentType string, body []byte) (int, []byte) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// FuzzWriteBody sends arbitrary bodies as dry-run creates, updates and
// patches of every served kind, in every encoding and patch type berth
// accepts, through the whole handler chain: decoding, the patch appliers,
// managedFields, defaulting, validation and admission. Whatever the body,
// the answer is a success with an object of the kind, or a 4xx Status with
// the same code; never a 5xx or a panic, and never a write.
//
// kind picks the resource, verb the request (see fuzzCreate), format the
// encoding (fuzzFormats) or patch type (fuzzPatchTypes), options the
// fieldValidation and whether the request goes to the status subresource.
func FuzzWriteBody(f *testing.F) {
	s := newFuzzServer(f)
	for i, res := range s.resources {
		k := uint8(i)
		seed := s.fixture(f, res, "fuzz-seed")
		existing := s.fixture(f, res, existingName(res))
		for j, format := range fuzzFormats {
			f.Add(k, uint8(fuzzCreate), uint8(j), uint8(0), s.encode(f, res, seed, format))
			f.Add(k, uint8(fuzzUpdate), uint8(j), uint8(1), s.encode(f, res, existing, format))
		}
		f.Add(k, uint8(fuzzPatch), uint8(0), uint8(0), []byte(`[{"op":"add","path":"/metadata/annotations","value":{"x":"y"}},{"op":"test","path":"/metadata/name","value":"`+existingName(res)+`"}]`))
		f.Add(k, uint8(fuzzPatch), uint8(0), uint8(0), []byte(`[{"op":"move","from":"/metadata/labels","path":"/metadata/annotations"},{"op":"remove","path":"/metadata/name"}]`))
		f.Add(k, uint8(fuzzPatch), uint8(1), uint8(0), []byte(`{"metadata":{"labels":{"x":"y","a":null}}}`))
		f.Add(k, uint8(fuzzPatch), uint8(2), uint8(0), []byte(`{"metadata":{"labels":{"x":"y"},"$setElementOrder/finalizers":["a"]},"spec":{"$patch":"replace"}}`))
		f.Add(k, uint8(fuzzPatch), uint8(3), uint8(4), s.encode(f, res, existing, "application/yaml"))
	}
	f.Fuzz(func(t *testing.T, kind, verb, format, options uint8, body []byte) {
		res := s.resources[int(kind)%len(s.resources)]
		method, path, contentType := s.request(res, verb, format, options)
		before, err := s.revision()
		if err != nil {
			t.Fatal(err)
		}
		code, out := s.do(method, path, contentType, body)
		if !s.upstreamPatchError(res, contentType, body, code, out) {
			checkWriteAnswer(t, res, method+" "+path+" "+contentType, code, out)
		}
		after, err := s.revision()
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Fatalf("%s %s: a dry run moved the store's revision %d -> %d", method, path, before, after)
		}
	})
}

// request maps the fuzzer's selectors to a dry-run request.
func (s *fuzzServer) request(res *resource, verb, format, options uint8) (method, path, contentType string) {
	query := "?dryRun=All&fieldManager=fuzz&fieldValidation=" + fuzzFieldValidation[int(options&3)%len(fuzzFieldValidation)]
	path = s.collectionPath(res)
	switch int(verb) % fuzzVerbs {
	case fuzzCreate:
		return "POST", path + query, fuzzFormats[int(format)%len(fuzzFormats)]
	case fuzzUpdate:
		method, contentType = "PUT", fuzzFormats[int(format)%len(fuzzFormats)]
	default:
		method, contentType = "PATCH", fuzzPatchTypes[int(format)%len(fuzzPatchTypes)]
		if strings.HasPrefix(contentType, "application/apply-patch") && options&8 != 0 {
			query += "&force=true"
		}
	}
	path += "/" + existingName(res)
	if options&4 != 0 {
		for _, sub := range res.subresources {
			if sub == "status" {
				path += "/status"
			}
		}
	}
	return method, path + query, contentType
}

// upstreamPatchError says a 500 is kube-apiserver's own answer to a
// strategic merge patch that strategicpatch cannot apply (a directive of
// the wrong JSON type, a "$setElementOrder/" naming no field), or to an
// apply patch with a field the schema does not declare: upstream's patch
// handler maps only some of strategicpatch's errors to 4xx and passes the
// others, and the field manager's, through as internal errors. berth serves that handler
// unchanged, so it answers the same. For a strategic merge patch it holds
// only when applying the patch to the stored object with strategicpatch
// itself fails with the message the server gave; the seeds in
// testdata/fuzz keep the cases found.
func (s *fuzzServer) upstreamPatchError(res *resource, contentType string, patch []byte, code int, out []byte) bool {
	var st metav1.Status
	if code != http.StatusInternalServerError || json.Unmarshal(out, &st) != nil {
		return false
	}
	if contentType == "application/apply-patch+yaml" {
		// The field manager's own error for an applied configuration
		// that does not fit the kind's schema (an undeclared field).
		return strings.HasPrefix(st.Message, "failed to create typed patch object (")
	}
	if contentType != "application/strategic-merge-patch+json" {
		return false
	}
	getCode, current := s.do("GET", s.collectionPath(res)+"/"+existingName(res), "", nil)
	if getCode != http.StatusOK {
		return false
	}
	_, err := strategicpatch.StrategicMergePatch(current, patch, res.newObj())
	return err != nil && err.Error() == st.Message
}

// checkWriteAnswer holds the invariants of every answer to a write.
func checkWriteAnswer(t *testing.T, res *resource, request string, code int, out []byte) {
	t.Helper()
	if code >= 500 {
		t.Fatalf("%s: %d %s", request, code, out)
	}
	if code >= 400 {
		var st metav1.Status
		if err := json.Unmarshal(out, &st); err != nil || st.Kind != "Status" || int(st.Code) != code || st.Status != metav1.StatusFailure {
			t.Fatalf("%s: %d with a body that is not its Status (%v): %s", request, code, err, out)
		}
		return
	}
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("%s: unexpected %d %s", request, code, out)
	}
	obj := res.newObj()
	if err := json.Unmarshal(out, obj); err != nil {
		t.Fatalf("%s: %d with a body that is not a %s: %v", request, code, res.kind, err)
	}
	if obj.GetObjectKind().GroupVersionKind() != res.gvk() {
		t.Fatalf("%s: answered with %v, want %v", request, obj.GetObjectKind().GroupVersionKind(), res.gvk())
	}
	if name := obj.(metav1.Object).GetName(); name == "" {
		t.Fatalf("%s: accepted an object without a name: %s", request, out)
	}
}
