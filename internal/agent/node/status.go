package node

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
)

// Reserved is what the node keeps back from pods (the kubelet's
// system-reserved plus kube-reserved).
type Reserved struct {
	CPU, Memory, Storage resource.Quantity
}

// Observation is one look at the node: the machine, the runtime and the
// reserved amounts. Status turns it into a NodeStatus.
type Observation struct {
	Facts          Facts
	Reserved       Reserved
	Thresholds     Thresholds
	RuntimeName    string // CRI Version: runtime name and version
	RuntimeVersion string
	RuntimeErr     error // non-nil when the runtime or its network is not ready
	AgentVersion   string
	ServerPort     int32 // the node server's port (DaemonEndpoints); 0 when it is off
}

// Status builds the node's status. Condition times are left zero; Merge
// fills them from the previous status so they only move on a change.
func (o Observation) Status() corev1.NodeStatus {
	capacity := o.Facts.Capacity()
	allocatable := capacity.DeepCopy()
	subtract(allocatable, corev1.ResourceCPU, o.Reserved.CPU)
	subtract(allocatable, corev1.ResourceMemory, o.Reserved.Memory)
	subtract(allocatable, corev1.ResourceEphemeralStorage, o.Reserved.Storage)

	var addrs []corev1.NodeAddress
	if o.Facts.InternalIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: o.Facts.InternalIP})
	}
	if o.Facts.Hostname != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: o.Facts.Hostname})
	}
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable,
		Phase:       corev1.NodeRunning,
		Addresses:   addrs,
		Conditions:  o.conditions(),
		DaemonEndpoints: corev1.NodeDaemonEndpoints{
			KubeletEndpoint: corev1.DaemonEndpoint{Port: o.ServerPort},
		},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               o.Facts.MachineID,
			SystemUUID:              o.Facts.MachineID,
			BootID:                  o.Facts.BootID,
			KernelVersion:           o.Facts.KernelVersion,
			OSImage:                 o.Facts.OSImage,
			ContainerRuntimeVersion: o.RuntimeName + "://" + o.RuntimeVersion,
			KubeletVersion:          o.AgentVersion,
			OperatingSystem:         o.Facts.OperatingSystem,
			Architecture:            o.Facts.Architecture,
		},
	}
}

func subtract(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	v := list[name]
	v.Sub(q)
	if v.Sign() < 0 {
		v = *resource.NewQuantity(0, v.Format)
	}
	list[name] = v
}

func (o Observation) conditions() []corev1.NodeCondition {
	f, th := o.Facts, o.Thresholds
	memLow := th.under(evictionapi.SignalMemoryAvailable, f.MemoryAvailable, f.MemoryBytes)
	diskLow := th.under(evictionapi.SignalNodeFsAvailable, f.DiskAvailable, f.DiskBytes)
	pidsHigh := th.under(evictionapi.SignalPIDAvailable, f.PIDMax-f.PIDsInUse, f.PIDMax)
	ready := condition(corev1.NodeReady, true, "KubeletReady", "berth agent is posting ready status")
	if o.RuntimeErr != nil {
		ready = condition(corev1.NodeReady, false, "KubeletNotReady", fmt.Sprintf("container runtime not ready: %v", o.RuntimeErr))
	}
	return []corev1.NodeCondition{
		pressure(corev1.NodeMemoryPressure, memLow, "KubeletHasInsufficientMemory", "KubeletHasSufficientMemory", "memory"),
		pressure(corev1.NodeDiskPressure, diskLow, "KubeletHasDiskPressure", "KubeletHasNoDiskPressure", "disk"),
		pressure(corev1.NodePIDPressure, pidsHigh, "KubeletHasInsufficientPID", "KubeletHasSufficientPID", "PID"),
		ready,
	}
}

func pressure(t corev1.NodeConditionType, under bool, reasonUnder, reasonOK, what string) corev1.NodeCondition {
	if under {
		return condition(t, true, reasonUnder, "agent has "+what+" pressure")
	}
	return condition(t, false, reasonOK, "agent has no "+what+" pressure")
}

func condition(t corev1.NodeConditionType, status bool, reason, message string) corev1.NodeCondition {
	s := corev1.ConditionFalse
	if status {
		s = corev1.ConditionTrue
	}
	return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message}
}

// Merge stamps next's conditions with times: lastHeartbeatTime is now;
// lastTransitionTime carries over from prev unless the status flipped.
func Merge(prev []corev1.NodeCondition, next []corev1.NodeCondition, now metav1.Time) {
	for i := range next {
		next[i].LastHeartbeatTime = now
		next[i].LastTransitionTime = now
		for _, p := range prev {
			if p.Type == next[i].Type && p.Status == next[i].Status && !p.LastTransitionTime.IsZero() {
				next[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
}

// keepExtendedResources carries into next the extended resources (such as
// example.com/dongle) that an administrator or a device manager advertised
// in the node's capacity, which the agent does not measure: as the kubelet
// keeps them, each allocatable in full. next's lists are copied first, so
// the observed status the registrar remembers stays as observed.
func keepExtendedResources(cur corev1.NodeStatus, next *corev1.NodeStatus) {
	next.Capacity, next.Allocatable = next.Capacity.DeepCopy(), next.Allocatable.DeepCopy()
	for name, q := range cur.Capacity {
		if _, measured := next.Capacity[name]; measured || !v1helper.IsExtendedResourceName(name) {
			continue
		}
		if next.Capacity == nil {
			next.Capacity, next.Allocatable = corev1.ResourceList{}, corev1.ResourceList{}
		}
		next.Capacity[name], next.Allocatable[name] = q.DeepCopy(), q.DeepCopy()
	}
}
