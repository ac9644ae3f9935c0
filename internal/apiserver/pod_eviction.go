package apiserver

import (
	"context"
	"fmt"
	"net/http"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// evictionREST serves POST pods/NAME/eviction. berth serves no
// PodDisruptionBudgets, so an eviction is a delete with the eviction's
// options (graceful as any pod delete).
type evictionREST struct {
	pods *resourceREST
}

var _ rest.NamedCreater = (*evictionREST)(nil)

func (e *evictionREST) New() runtime.Object { return &policyv1.Eviction{} }
func (e *evictionREST) Destroy()            {}

func (e *evictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	eviction, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an Eviction: %T", obj))
	}
	if eviction.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the eviction (%s) does not match the pod name in the URL (%s)", eviction.Name, name))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	deleteOptions := eviction.DeleteOptions
	if deleteOptions == nil {
		deleteOptions = &metav1.DeleteOptions{}
	}
	deleteOptions = deleteOptions.DeepCopy()
	deleteOptions.DryRun = options.DryRun
	if _, _, err := e.pods.Delete(ctx, name, nil, deleteOptions); err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}, nil
}
