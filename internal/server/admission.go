package server

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	controlplaneadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"

	"github.com/berth/berth/internal/admission/internalform"
	"github.com/berth/berth/internal/admission/podsecurity"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// admissionPlugins are the admission plugins that read the cluster:
// kube-apiserver's LimitRanger, ServiceAccount, Priority, RuntimeClass,
// ResourceQuota and classAndCertificatePlugins (upstream's own, on the
// internal form) and PodSecurity. Their informers
// come from one factory whose informers read through to the watch cache
// (LocalReads) once the API server exists, and list only once started,
// after it. It is the API server's shared factory too
// (apiserver.Config.Informers): the aggregator finds extension API servers'
// Services and EndpointSlices in it.
type admissionPlugins struct {
	factory            informers.SharedInformerFactory
	namespaceLifecycle admission.Interface
	limitRanger        admission.Interface
	serviceAccount     admission.Interface
	storageInUse       admission.Interface
	nodeTaint          admission.Interface
	podSecurity        *podsecurity.Plugin
	priority           admission.Interface
	runtimeClass       admission.Interface
	// classesAndCertificates are classAndCertificatePlugins.
	classesAndCertificates []admission.Interface
	webhooks               *admissionWebhooks
	policies               *admissionPolicies
	resourceQuota          admission.Interface
	// nodes are the registered nodes, for NodeRestriction.
	nodes corelisters.NodeLister
}

// newAdmissionPlugins builds the plugins; stop ends the quota plugin's
// evaluator workers.
func newAdmissionPlugins(cfg Config, lb *inprocess.Loopback, local *apiserver.LocalReads, authz authorizer.Authorizer, reg prometheus.Registerer,
	stop <-chan struct{}) (*admissionPlugins, error) {
	restCfg, err := loopbackConfig(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("admission plugins: %w", err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("admission plugins: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &corev1.Namespace{}, localOnceServed(local, "namespaces"))
	// Before the quota configuration, whose evaluators ask for the pod
	// lister (DRA's extended resources); PodSecurity reads pods too.
	informeropts.ReadThrough(factory, &corev1.Pod{}, localOnceServed(local, "pods"))
	informeropts.ReadThrough(factory, &corev1.ServiceAccount{}, localOnceServed(local, "serviceaccounts"))
	informeropts.ReadThrough(factory, &corev1.LimitRange{}, localOnceServed(local, "limitranges"))
	informeropts.ReadThrough(factory, &corev1.ResourceQuota{}, localOnceServed(local, "resourcequotas"))
	informeropts.ReadThrough(factory, &nodev1.RuntimeClass{}, localOnceServedGVR(local, nodev1.SchemeGroupVersion.WithResource("runtimeclasses")))
	informeropts.ReadThrough(factory, &schedulingv1.PriorityClass{}, localOnceServedGVR(local, schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")))
	informeropts.ReadThrough(factory, &corev1.Node{}, localOnceServed(local, "nodes"))
	informeropts.ReadThrough(factory, &storagev1.StorageClass{}, localOnceServedGVR(local, storagev1.SchemeGroupVersion.WithResource("storageclasses")))
	informeropts.ReadThrough(factory, &networkingv1.IngressClass{}, localOnceServedGVR(local, networkingv1.SchemeGroupVersion.WithResource("ingressclasses")))
	// Webhooks' Services (admission and CRD conversion webhooks, and
	// APIServices'), and the EndpointSlices the aggregator's availability
	// controller checks.
	informeropts.ReadThrough(factory, &corev1.Service{}, localOnceServed(local, "services"))
	informeropts.ReadThrough(factory, &discoveryv1.EndpointSlice{}, localOnceServedGVR(local, discoveryv1.SchemeGroupVersion.WithResource("endpointslices")))
	quotaConfig, err := quotainstall.NewQuotaConfigurationForAdmission(factory, nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", resourcequota.PluginName, err)
	}
	// kube-apiserver's two initializers, in its order: the generic one,
	// then the control plane's (quota evaluators, excluded resources).
	init := admission.PluginInitializers{
		initializer.New(client, nil, factory, authz, utilfeature.DefaultFeatureGate, nil, stop, nil),
		controlplaneadmission.NewPluginInitializer(quotaConfig, exclusion.Excluded()),
	}
	namespaces, err := newNamespaceLifecycle(init)
	if err != nil {
		return nil, err
	}
	limits, err := newLimitRanger(init)
	if err != nil {
		return nil, err
	}
	quota, err := newResourceQuota(init)
	if err != nil {
		return nil, err
	}
	storageInUse, err := newStorageObjectInUseProtection()
	if err != nil {
		return nil, err
	}
	runtimeClasses, err := newRuntimeClass(init)
	if err != nil {
		return nil, err
	}
	priorities, err := newPriority(init)
	if err != nil {
		return nil, err
	}
	classesAndCertificates, err := newUpstreamPlugins(init, classAndCertificatePlugins)
	if err != nil {
		return nil, err
	}
	sa := serviceaccount.NewServiceAccount()
	if err := initialize(init, serviceaccount.PluginName, sa); err != nil {
		return nil, err
	}
	ps, err := newPodSecurity(cfg, factory, client, reg)
	if err != nil {
		return nil, err
	}
	webhooks, err := newAdmissionWebhooks(client, factory)
	if err != nil {
		return nil, err
	}
	policies, err := newAdmissionPolicies(restCfg, client, factory, authz, stop)
	if err != nil {
		return nil, err
	}
	return &admissionPlugins{factory: factory, namespaceLifecycle: namespaces, limitRanger: limits, serviceAccount: internalform.WrapKinds(sa, podKind), storageInUse: storageInUse,
		nodeTaint: newTaintNodesByCondition(), podSecurity: ps, priority: priorities, runtimeClass: runtimeClasses,
		classesAndCertificates: classesAndCertificates, webhooks: webhooks, policies: policies, resourceQuota: quota,
		nodes: factory.Core().V1().Nodes().Lister()}, nil
}

// podKind is the kind the pod-only plugins act on: other writes skip them,
// and the conversion to the internal form they would need.
var podKind = corev1.SchemeGroupVersion.WithKind("Pod").GroupKind()

// initialize gives plugin what kube-apiserver's generic plugin initializer
// gives it over berth's client, informer factory, authorizer and stop
// channel, and checks that the plugin has everything it needs.
func initialize(init admission.PluginInitializer, name string, plugin admission.Interface) error {
	init.Initialize(plugin)
	if err := admission.ValidateInitialization(plugin); err != nil {
		return fmt.Errorf("admission plugin %s: %w", name, err)
	}
	return nil
}

// newNamespaceLifecycle is upstream's NamespaceLifecycle: new content only
// in a namespace that exists and is not terminating (404, or 403 with the
// NamespaceTerminating cause), and default, kube-system and kube-public
// never deleted. It acts on every kind's metadata, so it needs no
// conversion.
func newNamespaceLifecycle(init admission.PluginInitializer) (admission.Interface, error) {
	plugin, err := lifecycle.NewLifecycle(sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic))
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", lifecycle.PluginName, err)
	}
	if err := initialize(init, lifecycle.PluginName, plugin); err != nil {
		return nil, err
	}
	return plugin, nil
}

// newLimitRanger is upstream's LimitRanger: container and pod defaults and
// bounds from the namespace's LimitRanges.
func newLimitRanger(init admission.PluginInitializer) (admission.Interface, error) {
	plugin, err := limitranger.NewLimitRanger(&limitranger.DefaultLimitRangerActions{})
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", limitranger.PluginName, err)
	}
	if err := initialize(init, limitranger.PluginName, plugin); err != nil {
		return nil, err
	}
	// The plugin acts on pods and claims only (DefaultLimitRangerActions).
	return internalform.WrapKinds(plugin, podKind, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind()), nil
}

// newStorageObjectInUseProtection is upstream's StorageObjectInUseProtection
// plugin: every new claim, volume and attributes class gets its protection
// finalizer (internal/controller/volumeprotection removes it).
func newStorageObjectInUseProtection() (admission.Interface, error) {
	plugins := admission.NewPlugins()
	storageobjectinuseprotection.Register(plugins)
	plugin, err := plugins.InitPlugin(storageobjectinuseprotection.PluginName, nil, admission.PluginInitializers{})
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", storageobjectinuseprotection.PluginName, err)
	}
	return internalform.WrapKinds(plugin, corev1.SchemeGroupVersion.WithKind("PersistentVolume").GroupKind(),
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind(),
		storagev1.SchemeGroupVersion.WithKind("VolumeAttributesClass").GroupKind()), nil
}

// newTaintNodesByCondition is upstream's TaintNodesByCondition plugin: a
// new Node carries the not-ready NoSchedule taint, so that nothing is
// scheduled to it before its agent reports it Ready and the node
// lifecycle controller lifts the taint.
func newTaintNodesByCondition() admission.Interface {
	return internalform.WrapKinds(nodetaint.NewPlugin(), corev1.SchemeGroupVersion.WithKind("Node").GroupKind())
}

// newRuntimeClass is upstream's RuntimeClass plugin: a new pod naming a
// RuntimeClass gets the class's overhead, node selector and tolerations,
// and a pod naming a class that does not exist is refused.
func newRuntimeClass(init admission.PluginInitializer) (admission.Interface, error) {
	plugin := runtimeclass.NewRuntimeClass()
	if err := initialize(init, runtimeclass.PluginName, plugin); err != nil {
		return nil, err
	}
	return internalform.WrapKinds(plugin, podKind), nil
}

// newPriority is upstream's Priority plugin: a new pod's priorityClassName
// (or the global default class, or none) becomes its priority and
// preemption policy, a pod naming a class that does not exist is refused,
// and a second global default class is refused.
func newPriority(init admission.PluginInitializer) (admission.Interface, error) {
	plugin := priority.NewPlugin()
	if err := initialize(init, priority.PluginName, plugin); err != nil {
		return nil, err
	}
	return internalform.WrapKinds(waitForSync(plugin), podKind, schedulingv1.SchemeGroupVersion.WithKind("PriorityClass").GroupKind()), nil
}

// newResourceQuota is upstream's ResourceQuota plugin with upstream's
// evaluators, as kube-apiserver configures it (five evaluator workers, no
// configuration file): it refuses what would exceed a namespace's quota
// and records the new usage in the quota's status. It is not converted to
// the internal form: it counts most kinds by their metadata, and its pod,
// service and claim evaluators take v1 objects as they are.
func newResourceQuota(init admission.PluginInitializer) (admission.Interface, error) {
	plugin, err := resourcequota.NewResourceQuota(nil, 5)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", resourcequota.PluginName, err)
	}
	if err := initialize(init, resourcequota.PluginName, plugin); err != nil {
		return nil, err
	}
	return plugin, nil
}

// chain runs the plugins with berth's own, in kube-apiserver's order:
// NamespaceLifecycle (so a write into a missing namespace is 404 before
// any other plugin judges it), LimitRanger (resource defaults), ServiceAccount (defaults the account,
// checks it exists, mounts kube-api-access-*), NodeRestriction, PodSecurity
// (so it judges the pod as it will run), TaintNodesByCondition, Priority,
// StorageObjectInUseProtection, RuntimeClass (the class's overhead, so that
// quota charges it), classAndCertificatePlugins (DefaultStorageClass to
// PodResizeValidator), RBAC's escalation check, MutatingAdmissionPolicy,
// the mutating admission webhooks, ValidatingAdmissionPolicy, the
// validating admission webhooks, and ResourceQuota last, so that it charges what the
// others let through (a quota scoped to priority classes sees the pod's
// resolved class). The chain runs every plugin's mutation before any
// validation, so validating webhooks see the object as mutating ones left
// it; upstream's plugins share one conversion to the internal form per
// phase (internalform.Chain).
func (p *admissionPlugins) chain(nodeRestriction, escalation admission.Interface) admission.Interface {
	chain := []admission.Interface{p.namespaceLifecycle, p.limitRanger, p.serviceAccount, nodeRestriction, p.podSecurity, p.nodeTaint, p.priority, p.storageInUse, p.runtimeClass}
	chain = append(chain, p.classesAndCertificates...)
	return internalform.Chain(append(chain, escalation, p.policies.mutating, p.webhooks.mutating, p.policies.validating, p.webhooks.validating, p.resourceQuota)...)
}

// start runs the informers until ctx ends; wait returns once they have stopped.
func (p *admissionPlugins) start(ctx context.Context) (wait func()) {
	p.factory.Start(ctx.Done())
	return p.factory.Shutdown
}
