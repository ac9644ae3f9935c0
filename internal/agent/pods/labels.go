// Package pods runs the pods bound to this node through a CRI runtime: one
// worker per pod converges sandbox and containers to the pod's spec and
// reports the pod's status. Everything the agent must remember across a
// restart lives in the runtime, as labels and annotations on sandboxes and
// containers (the kubelet's keys), so a restarted agent carries on from CRI.
package pods

// Labels and annotations the kubelet puts on CRI objects; berth uses the
// same keys so tools that read them (crictl, log collectors) work unchanged.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"

	annotationRestartCount = "io.kubernetes.container.restartCount"
	// annotationHash is the kubelet's hash of the container's spec
	// (kubecontainer.HashContainer): a running container whose hash no
	// longer matches its pod's spec is replaced.
	annotationHash                   = "io.kubernetes.container.hash"
	annotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	annotationGracePeriod            = "io.kubernetes.pod.terminationGracePeriod"
	// annotationInit marks init containers, so a restarted agent knows which
	// exited containers must not be restarted once they succeeded.
	annotationInit = "berth.dev/init-container"
)

func podLabels(uid, name, namespace string) map[string]string {
	return map[string]string{labelPodUID: uid, labelPodName: name, labelPodNamespace: namespace}
}
