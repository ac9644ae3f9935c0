package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

func errNoMeta(obj runtime.Object) error {
	return fmt.Errorf("%T has no object metadata", obj)
}
