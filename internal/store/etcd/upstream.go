package etcd

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
)

// UpstreamStorage is k8s.io/apiserver's own etcd3 storage for one resource,
// over this store's client: what upstream's generic registry stores
// through where berth serves a kind with upstream's handlers and registry
// whole (CustomResourceDefinitions and custom resources). It shares the
// store's member (in-process for the embedded one: still no listener) and
// its compactor, so it opens no connection of its own. config is what
// upstream's storage factory would dial with; only its codec, prefix and
// group-resource are used.
func (s *Store) UpstreamStorage(config *storagebackend.ConfigForResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object) (storage.Interface, func(), error) {
	client := &kubernetes.Client{Client: s.client}
	client.Kubernetes = client
	if len(s.client.Endpoints()) == 0 {
		etcdfeature.DefaultFeatureSupportChecker.CheckClient(s.client.Ctx(), inProcessMember{s.client}, storage.RequestWatchProgress)
	}
	versioner := storage.APIObjectVersioner{}
	st, err := etcd3.New(client, storeCompactor{s}, config.Codec, newFunc, newListFunc, config.Prefix, resourcePrefix,
		config.GroupResource, identity.NewEncryptCheckTransformer(), etcd3.NewDefaultLeaseManagerConfig(),
		etcd3.NewDefaultDecoder(config.Codec, versioner), versioner)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream storage for %s: %w", config.GroupResource, err)
	}
	return st, st.Close, nil
}

// inProcessMember names the embedded member to upstream's etcd feature
// checker, which asks each of a client's endpoints for its version: an
// in-process client lists none, so upstream's storage would never learn
// that the member answers RequestWatchProgress, and its watch cache could
// not serve consistent reads or count its keys. The in-process Status
// reaches the member whatever the endpoint's name.
type inProcessMember struct{ *clientv3.Client }

func (inProcessMember) Endpoints() []string { return []string{"in-process"} }

// storeCompactor tells upstream's storage how far history is compacted.
type storeCompactor struct{ s *Store }

func (c storeCompactor) CompactRevision() int64 { return c.s.CompactedRevision() }
