package main

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	benchNamespace = "bench"
	podPrefix      = "pod-"
)

func nodeName(i int) string { return "node-" + strconv.Itoa(i) }

func podName(i int) string { return podPrefix + strconv.Itoa(i) }

// benchNode is a Node as the kubelet registers it: capacity and
// allocatable in its status, Ready, with an internal address.
func benchNode(i int) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	name := nodeName(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", 1+i>>16, i>>8&255, i&255)}},
		},
	}
}

// benchPod is pod i, already bound to its node (round-robin), with one
// container and resource requests.
func benchPod(i, nodes int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: benchNamespace, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			NodeName: nodeName(i % nodes),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
		},
	}
}

// runningStatusPatch is the strategic merge patch of pod i's status that a
// kubelet sends once its sandbox and container run.
func runningStatusPatch(i int) []byte {
	now := metav1.Now().UTC().Format("2006-01-02T15:04:05Z")
	ip := fmt.Sprintf("10.%d.%d.%d", 128+i>>16, i>>8&255, i&255)
	return fmt.Appendf(nil, `{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}],"startTime":%q,`+
		`"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q},{"type":"ContainersReady","status":"True","lastTransitionTime":%q}],`+
		`"containerStatuses":[{"name":"app","image":"registry.k8s.io/pause:3.10","imageID":"","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":%q}}}]}}`,
		ip, ip, now, now, now, now)
}
