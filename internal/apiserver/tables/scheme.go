package tables

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// newScheme maps the Go types of served kinds to their kinds, so rows and
// lists of typed objects (whose TypeMeta is usually empty) are named right.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the table scheme: %w", err)
	}
	return scheme, nil
}
