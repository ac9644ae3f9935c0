package tables

import (
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	admissionregistrationapi "k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	appsapi "k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	autoscalingapi "k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	batchapi "k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	certificatesapi "k8s.io/kubernetes/pkg/apis/certificates"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	api "k8s.io/kubernetes/pkg/apis/core"
	// The internal types and conversions upstream's printers take.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	discoveryapi "k8s.io/kubernetes/pkg/apis/discovery"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	flowcontrolapi "k8s.io/kubernetes/pkg/apis/flowcontrol"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	networkingapi "k8s.io/kubernetes/pkg/apis/networking"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	nodeapi "k8s.io/kubernetes/pkg/apis/node"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	policyapi "k8s.io/kubernetes/pkg/apis/policy"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	resourceapi "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	storageapi "k8s.io/kubernetes/pkg/apis/storage"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	svmapi "k8s.io/kubernetes/pkg/apis/storagemigration"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
	kubeprinters "k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
)

// upstreamPrinters are kinds printed by kube-apiserver's own printers
// (pkg/printers/internalversion), which take the internal types: each v1
// object is converted for them. Their AGE cells are upstream's, from the
// clock at the time of printing.
func upstreamPrinters() map[schema.GroupKind]printer {
	return map[schema.GroupKind]printer{
		{Kind: "Service"}: upstreamPrinter[*corev1.Service](func() runtime.Object { return &api.Service{} }),
		//lint:ignore SA1019 kube-apiserver v1.37 still serves core/v1 Endpoints
		{Kind: "Endpoints"}: upstreamPrinter[*corev1.Endpoints](func() runtime.Object { return &api.Endpoints{} }),
		{Group: "discovery.k8s.io", Kind: "EndpointSlice"}: upstreamPrinter[*discoveryv1.EndpointSlice](func() runtime.Object { return &discoveryapi.EndpointSlice{} }),
		{Kind: "PodTemplate"}:                              upstreamPrinter[*corev1.PodTemplate](func() runtime.Object { return &api.PodTemplate{} }),
		{Kind: "ReplicationController"}:                    upstreamPrinter[*corev1.ReplicationController](func() runtime.Object { return &api.ReplicationController{} }),
		{Kind: "ResourceQuota"}:                            upstreamPrinter[*corev1.ResourceQuota](func() runtime.Object { return &api.ResourceQuota{} }),
		{Kind: "PersistentVolume"}:                         upstreamPrinter[*corev1.PersistentVolume](func() runtime.Object { return &api.PersistentVolume{} }),
		{Kind: "PersistentVolumeClaim"}:                    upstreamPrinter[*corev1.PersistentVolumeClaim](func() runtime.Object { return &api.PersistentVolumeClaim{} }),
		{Group: "apps", Kind: "Deployment"}:                upstreamPrinter[*appsv1.Deployment](func() runtime.Object { return &appsapi.Deployment{} }),
		{Group: "apps", Kind: "ReplicaSet"}:                upstreamPrinter[*appsv1.ReplicaSet](func() runtime.Object { return &appsapi.ReplicaSet{} }),
		{Group: "apps", Kind: "StatefulSet"}:               upstreamPrinter[*appsv1.StatefulSet](func() runtime.Object { return &appsapi.StatefulSet{} }),
		{Group: "apps", Kind: "DaemonSet"}:                 upstreamPrinter[*appsv1.DaemonSet](func() runtime.Object { return &appsapi.DaemonSet{} }),
		{Group: "apps", Kind: "ControllerRevision"}:        upstreamPrinter[*appsv1.ControllerRevision](func() runtime.Object { return &appsapi.ControllerRevision{} }),
		// Either version: both convert to the one internal type.
		{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: upstreamPrinter[runtime.Object](func() runtime.Object {
			return &autoscalingapi.HorizontalPodAutoscaler{}
		}),
		{Group: "batch", Kind: "Job"}:                       upstreamPrinter[*batchv1.Job](func() runtime.Object { return &batchapi.Job{} }),
		{Group: "batch", Kind: "CronJob"}:                   upstreamPrinter[*batchv1.CronJob](func() runtime.Object { return &batchapi.CronJob{} }),
		{Group: "node.k8s.io", Kind: "RuntimeClass"}:        upstreamPrinter[*nodev1.RuntimeClass](func() runtime.Object { return &nodeapi.RuntimeClass{} }),
		{Group: "policy", Kind: "PodDisruptionBudget"}:      upstreamPrinter[*policyv1.PodDisruptionBudget](func() runtime.Object { return &policyapi.PodDisruptionBudget{} }),
		{Group: "networking.k8s.io", Kind: "Ingress"}:       upstreamPrinter[*networkingv1.Ingress](func() runtime.Object { return &networkingapi.Ingress{} }),
		{Group: "networking.k8s.io", Kind: "IngressClass"}:  upstreamPrinter[*networkingv1.IngressClass](func() runtime.Object { return &networkingapi.IngressClass{} }),
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: upstreamPrinter[*networkingv1.NetworkPolicy](func() runtime.Object { return &networkingapi.NetworkPolicy{} }),
		{Group: "networking.k8s.io", Kind: "IPAddress"}:     upstreamPrinter[*networkingv1.IPAddress](func() runtime.Object { return &networkingapi.IPAddress{} }),
		{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:   upstreamPrinter[*networkingv1.ServiceCIDR](func() runtime.Object { return &networkingapi.ServiceCIDR{} }),
		{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}: upstreamPrinter[*svmv1.StorageVersionMigration](func() runtime.Object {
			return &svmapi.StorageVersionMigration{}
		}),
		{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}: upstreamPrinter[*flowcontrolv1.FlowSchema](func() runtime.Object { return &flowcontrolapi.FlowSchema{} }),
		{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}: upstreamPrinter[*flowcontrolv1.PriorityLevelConfiguration](func() runtime.Object {
			return &flowcontrolapi.PriorityLevelConfiguration{}
		}),
		{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: upstreamPrinter[*admissionregistrationv1.ValidatingWebhookConfiguration](func() runtime.Object {
			return &admissionregistrationapi.ValidatingWebhookConfiguration{}
		}),
		{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}: upstreamPrinter[*admissionregistrationv1.MutatingWebhookConfiguration](func() runtime.Object {
			return &admissionregistrationapi.MutatingWebhookConfiguration{}
		}),
		{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}: upstreamPrinter[*admissionregistrationv1.ValidatingAdmissionPolicy](func() runtime.Object {
			return &admissionregistrationapi.ValidatingAdmissionPolicy{}
		}),
		{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: upstreamPrinter[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](func() runtime.Object {
			return &admissionregistrationapi.ValidatingAdmissionPolicyBinding{}
		}),
		{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}: upstreamPrinter[*admissionregistrationv1.MutatingAdmissionPolicy](func() runtime.Object {
			return &admissionregistrationapi.MutatingAdmissionPolicy{}
		}),
		{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}: upstreamPrinter[*admissionregistrationv1.MutatingAdmissionPolicyBinding](func() runtime.Object {
			return &admissionregistrationapi.MutatingAdmissionPolicyBinding{}
		}),
		{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}: upstreamPrinter[*certificatesv1.ClusterTrustBundle](func() runtime.Object {
			return &certificatesapi.ClusterTrustBundle{}
		}),
		{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}: upstreamPrinter[*certificatesv1.PodCertificateRequest](func() runtime.Object {
			return &certificatesapi.PodCertificateRequest{}
		}),
		{Group: "storage.k8s.io", Kind: "StorageClass"}: upstreamPrinter[*storagev1.StorageClass](func() runtime.Object { return &storageapi.StorageClass{} }),
		{Group: "storage.k8s.io", Kind: "CSIDriver"}:    upstreamPrinter[*storagev1.CSIDriver](func() runtime.Object { return &storageapi.CSIDriver{} }),
		{Group: "storage.k8s.io", Kind: "CSINode"}:      upstreamPrinter[*storagev1.CSINode](func() runtime.Object { return &storageapi.CSINode{} }),
		{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}: upstreamPrinter[*storagev1.CSIStorageCapacity](func() runtime.Object {
			return &storageapi.CSIStorageCapacity{}
		}),
		{Group: "storage.k8s.io", Kind: "VolumeAttachment"}: upstreamPrinter[*storagev1.VolumeAttachment](func() runtime.Object { return &storageapi.VolumeAttachment{} }),
		{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}: upstreamPrinter[*storagev1.VolumeAttributesClass](func() runtime.Object {
			return &storageapi.VolumeAttributesClass{}
		}),
		{Group: "resource.k8s.io", Kind: "DeviceClass"}: upstreamPrinter[*resourcev1.DeviceClass](func() runtime.Object { return &resourceapi.DeviceClass{} }),
		{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}: upstreamPrinter[*resourcev1.DeviceTaintRule](func() runtime.Object {
			return &resourceapi.DeviceTaintRule{}
		}),
		{Group: "resource.k8s.io", Kind: "ResourceClaim"}: upstreamPrinter[*resourcev1.ResourceClaim](func() runtime.Object { return &resourceapi.ResourceClaim{} }),
		{Group: "resource.k8s.io", Kind: "ResourceClaimTemplate"}: upstreamPrinter[*resourcev1.ResourceClaimTemplate](func() runtime.Object {
			return &resourceapi.ResourceClaimTemplate{}
		}),
		{Group: "resource.k8s.io", Kind: "ResourceSlice"}: upstreamPrinter[*resourcev1.ResourceSlice](func() runtime.Object { return &resourceapi.ResourceSlice{} }),
		{Group: "scheduling.k8s.io", Kind: "PriorityClass"}: upstreamPrinter[*schedulingv1.PriorityClass](func() runtime.Object {
			return &schedulingapi.PriorityClass{}
		}),
	}
}

func upstreamPrinter[T runtime.Object](newInternal func() runtime.Object) printer {
	generator := kubeprinters.NewTableGenerator().With(printersinternal.AddHandlers)
	// kube-apiserver's table convertor asks for the wide columns too;
	// kubectl hides those of priority 1 unless -o wide.
	options := kubeprinters.GenerateOptions{Wide: true}
	header, err := generator.GenerateTable(newInternal(), options)
	if err != nil {
		panic(fmt.Sprintf("upstream printer of %T: %v", newInternal(), err)) // registered handlers print an empty object
	}
	return printer{columns: header.ColumnDefinitions, row: func(obj runtime.Object, _ time.Time) (metav1.TableRow, error) {
		t, err := as[T](obj)
		if err != nil {
			return metav1.TableRow{}, err
		}
		in := newInternal()
		if err := legacyscheme.Scheme.Convert(t, in, nil); err != nil {
			return metav1.TableRow{}, err
		}
		table, err := generator.GenerateTable(in, options)
		if err != nil || len(table.Rows) != 1 {
			return metav1.TableRow{}, fmt.Errorf("printing a %T: %v (%d rows)", obj, err, len(table.Rows))
		}
		row := table.Rows[0]
		row.Object = runtime.RawExtension{}
		return row, nil
	}}
}
