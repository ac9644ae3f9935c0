// Package aggregator serves API aggregation with upstream's kube-aggregator,
// whole: APIServices (apiregistration.k8s.io/v1), the proxy to the
// extension API servers they name (presenting the front proxy's client
// certificate and the requesting user's headers), their availability
// controllers, and the discovery of their groups. It stands where it stands
// in kube-apiserver, in front of the CRD server: berth's own resources are
// served before a request gets here, the APIServices' groups next, then
// custom resources. As kube-apiserver does, it keeps a local APIService for
// every built-in group-version and every CRD's.
package aggregator

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
	generatedopenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kubernetes/pkg/controlplane/controller/crdregistration"

	"github.com/berth/berth/internal/apiserver/apiextensions"
	"github.com/berth/berth/internal/apiserver/upstream"
)

// Config is what the aggregator takes from the API server around it.
type Config struct {
	upstream.Config
	// CRDs is the CRD server, which serves what no APIService proxies.
	CRDs *apiextensions.Server
	// ProxyClientCertFile and ProxyClientKeyFile are the front proxy's
	// client certificate (internal/pki).
	ProxyClientCertFile, ProxyClientKeyFile string
	// Local are the built-in group-versions, most preferred first; each
	// gets a local APIService.
	Local []schema.GroupVersion
	// Informers are the API server's shared informers, in which the proxy
	// and the availability controller find where extension API servers run
	// (Services, EndpointSlices). They read through to the server's watch
	// cache, so the aggregator adds no copy and no watch of its own. Its
	// post-start hooks start them (a no-op for those already started);
	// their owner shuts them down.
	Informers informers.SharedInformerFactory
}

// Server is the aggregator in front of the CRD server.
type Server struct {
	aggregator *aggregatorapiserver.APIAggregator
}

// New builds the aggregator; Start runs its controllers and the CRD
// server's.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	if cfg.Informers == nil {
		return nil, errors.New("aggregator: the shared informers are required")
	}
	registrations, err := apiregistrationclient.NewForConfig(cfg.Loopback)
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	generic := cfg.GenericConfig(aggregatorscheme.Codecs, aggregatorscheme.Scheme, generatedopenapi.GetOpenAPIDefinitions,
		aggregatorscheme.Codecs.LegacyCodec(apiregistrationv1.SchemeGroupVersion))
	generic.MergedResourceConfig = aggregatorapiserver.DefaultAPIResourceConfigSource()
	generic.SharedInformerFactory = cfg.Informers
	config := &aggregatorapiserver.Config{
		GenericConfig: generic,
		ExtraConfig: aggregatorapiserver.ExtraConfig{
			ProxyClientCertFile: cfg.ProxyClientCertFile,
			ProxyClientKeyFile:  cfg.ProxyClientKeyFile,
			// An APIService's calls go to its Service's cluster IP, as
			// kube-apiserver's without --enable-aggregator-routing (and as
			// berth's admission webhooks).
			ServiceResolver: aggregatorapiserver.NewClusterIPServiceResolver(generic.SharedInformerFactory.Core().V1().Services().Lister()),
		},
	}
	agg, err := config.Complete().NewWithDelegate(cfg.CRDs.Generic())
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	autoRegister := autoregister.NewAutoRegisterController(agg.APIRegistrationInformers.Apiregistration().V1().APIServices(), registrations.ApiregistrationV1())
	for _, svc := range localAPIServices(cfg.Local) {
		autoRegister.AddAPIServiceToSyncOnStart(svc)
	}
	crdRegistration := crdregistration.NewCRDRegistrationController(cfg.CRDs.Informer(), autoRegister)
	err = agg.GenericAPIServer.AddPostStartHook("kube-apiserver-autoregistration", func(ctx genericapiserver.PostStartHookContext) error {
		go crdRegistration.Run(5, ctx.Done())
		go func() {
			// The CRDs' APIServices are known before the first sync, which
			// would otherwise delete those of CRDs that still exist.
			crdRegistration.WaitForInitialSync()
			autoRegister.Run(5, ctx.Done())
		}()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	return &Server{aggregator: agg}, nil
}

// localAPIServices are the built-in group-versions' APIServices, ordered
// as berth's discovery orders them (the core group first, at
// kube-apiserver's 18000).
func localAPIServices(gvs []schema.GroupVersion) []*apiregistrationv1.APIService {
	const top, step = 18000, 50
	var out []*apiregistrationv1.APIService
	groupRank := map[string]int32{}
	versions := map[string]int32{}
	for _, gv := range gvs {
		rank, ok := groupRank[gv.Group]
		if !ok {
			rank = top - step*int32(len(groupRank))
			groupRank[gv.Group] = rank
		}
		versions[gv.Group]++
		out = append(out, &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
			Spec: apiregistrationv1.APIServiceSpec{
				Group: gv.Group, Version: gv.Version,
				GroupPriorityMinimum: rank, VersionPriority: 16 - versions[gv.Group],
			},
		})
	}
	return out
}

// ServeHTTP serves one request that berth's filters have let through.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.aggregator.GenericAPIServer.Handler.ServeHTTP(w, req)
}

// Start runs the aggregator's controllers (APIService registration,
// availability, discovery, local APIServices) and the CRD server's, which
// it took over as its delegate's, until ctx ends, and then releases their
// storage. They reach the API through the loopback client, so they wait
// until the server serves.
func (s *Server) Start(ctx context.Context) {
	s.aggregator.GenericAPIServer.RunPostStartHooks(ctx)
	context.AfterFunc(ctx, s.aggregator.GenericAPIServer.Destroy)
}
