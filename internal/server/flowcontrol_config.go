package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	flowcontrolbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/ensurer"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/pki"
)

// flowControlEnsureInterval is how often kube-apiserver re-applies its
// API priority and fairness configuration.
const flowControlEnsureInterval = time.Minute

// flowControl is API priority and fairness as kube-apiserver runs it: the
// filter's configuration controller (nil when turned off), which follows
// the FlowSchemas and priority levels and writes their status, and the
// ensurer of the bootstrap configuration. Both read the objects from the
// server's shared informers and write as the API server itself
// (system:apiserver, exempt from the limits).
type flowControl struct {
	filter  utilflowcontrol.Interface
	ensurer flowControlEnsurer
	synced  []cache.InformerSynced
	logger  *slog.Logger
}

// newFlowControl registers its informers in factory, which must not have
// been started yet.
func newFlowControl(cfg Config, lb *inprocess.Loopback, factory informers.SharedInformerFactory, logger *slog.Logger) (*flowControl, error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("flow control: %w", err)
	}
	schemas, levels := factory.Flowcontrol().V1().FlowSchemas(), factory.Flowcontrol().V1().PriorityLevelConfigurations()
	fc := &flowControl{
		ensurer: flowControlEnsurer{
			flowSchemas: ensurer.NewFlowSchemaOps(client.FlowcontrolV1().FlowSchemas(), schemas.Lister()),
			levels:      ensurer.NewPriorityLevelConfigurationOps(client.FlowcontrolV1().PriorityLevelConfigurations(), levels.Lister()),
		},
		synced: []cache.InformerSynced{schemas.Informer().HasSynced, levels.Informer().HasSynced},
		logger: logger,
	}
	if !cfg.DisablePriorityAndFairness {
		reads, writes := cfg.maxInFlight()
		fc.filter = utilflowcontrol.New(factory, client.FlowcontrolV1(), reads+writes)
	}
	return fc, nil
}

// start runs the configuration controller and keeps kube-apiserver's
// configuration objects, as its post-start hooks do (in every replica;
// writes are conditional): the suggested FlowSchemas and priority levels
// are created and kept current unless their apf.kubernetes.io/autoupdate-spec
// annotation says false, the mandatory ones are restored whatever was
// changed, and bootstrap objects upstream no longer ships are removed. The
// steps are upstream's ensurer (pkg/registry/flowcontrol/ensurer); its hook
// itself needs k8s.io/apiserver's generic server, which berth does not run.
// The returned wait blocks until both have stopped after ctx ends.
func (fc *flowControl) start(ctx context.Context) (wait func()) {
	var done sync.WaitGroup
	if fc.filter != nil {
		done.Go(func() {
			if err := fc.filter.Run(ctx.Done()); err != nil && ctx.Err() == nil {
				fc.logger.Error("API priority and fairness configuration controller stopped", "err", err)
			}
		})
	}
	done.Go(func() {
		if !cache.WaitForCacheSync(ctx.Done(), fc.synced...) {
			return // stopping
		}
		utilwait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := fc.ensurer.ensure(ctx); err != nil && ctx.Err() == nil {
				fc.logger.Warn("keeping the flow control configuration; retrying", "err", err)
			}
		}, flowControlEnsureInterval)
	})
	return done.Wait
}

// flowControlEnsurer applies upstream's ensure strategies to the bootstrap
// objects through the API.
type flowControlEnsurer struct {
	flowSchemas ensurer.ObjectOps[*flowcontrolv1.FlowSchema]
	levels      ensurer.ObjectOps[*flowcontrolv1.PriorityLevelConfiguration]
}

// ensure is one pass, in upstream's order: suggested, then mandatory, then
// the removal of what the bootstrap lists no longer name. Priority levels
// come before the FlowSchemas that refer to them.
func (c flowControlEnsurer) ensure(ctx context.Context) error {
	suggestedLevels := ensurer.NewSuggestedEnsureStrategy[*flowcontrolv1.PriorityLevelConfiguration]()
	suggestedSchemas := ensurer.NewSuggestedEnsureStrategy[*flowcontrolv1.FlowSchema]()
	mandatoryLevels := ensurer.NewMandatoryEnsureStrategy[*flowcontrolv1.PriorityLevelConfiguration]()
	mandatorySchemas := ensurer.NewMandatoryEnsureStrategy[*flowcontrolv1.FlowSchema]()
	for _, step := range []func() error{
		func() error {
			return ensurer.EnsureConfigurations(ctx, c.levels, flowcontrolbootstrap.SuggestedPriorityLevelConfigurations, suggestedLevels)
		},
		func() error {
			return ensurer.EnsureConfigurations(ctx, c.flowSchemas, flowcontrolbootstrap.SuggestedFlowSchemas, suggestedSchemas)
		},
		func() error {
			return ensurer.EnsureConfigurations(ctx, c.levels, flowcontrolbootstrap.MandatoryPriorityLevelConfigurations, mandatoryLevels)
		},
		func() error {
			return ensurer.EnsureConfigurations(ctx, c.flowSchemas, flowcontrolbootstrap.MandatoryFlowSchemas, mandatorySchemas)
		},
		func() error {
			return ensurer.RemoveUnwantedObjects(ctx, c.flowSchemas,
				slices.Concat(flowcontrolbootstrap.MandatoryFlowSchemas, flowcontrolbootstrap.SuggestedFlowSchemas))
		},
		func() error {
			return ensurer.RemoveUnwantedObjects(ctx, c.levels,
				slices.Concat(flowcontrolbootstrap.MandatoryPriorityLevelConfigurations, flowcontrolbootstrap.SuggestedPriorityLevelConfigurations))
		},
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
