package node

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

type runtimeObject = runtime.Object

func conflictErr() error {
	return apierrors.NewConflict(corev1.Resource("nodes"), "node-a", nil)
}
