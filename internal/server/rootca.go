package server

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"

	"github.com/berth/berth/internal/informeropts"
)

// publishRootCA runs kube-controller-manager's root-CA publisher until ctx
// ends, its informers over informerClient and its writes through client: every namespace gets the kube-root-ca.crt ConfigMap holding
// rootCA, the bundle that verifies the API server, kept as it is when
// changed or deleted. Pods reach it through kube-api-access-* volumes.
func publishRootCA(ctx context.Context, informerClient, client kubernetes.Interface, rootCA []byte) error {
	factory := informers.NewSharedInformerFactoryWithOptions(informerClient, 0, informeropts.Factory()...)
	// Only the publisher's own ConfigMaps: it looks at no other, and a
	// cluster's ConfigMaps can be many and large.
	onlyRootCA := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", rootcacertpublisher.RootCACertConfigMapName).String()
	}
	configMaps := coreinformers.New(factory, metav1.NamespaceAll, onlyRootCA).ConfigMaps()
	publisher, err := rootcacertpublisher.NewPublisher(configMaps, factory.Core().V1().Namespaces(), client, rootCA)
	if err != nil {
		return fmt.Errorf("root CA publisher: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	publisher.Run(ctx, 1)
	return nil
}
