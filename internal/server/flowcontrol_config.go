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
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/ensurer"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// flowControlEnsureInterval is how often kube-apiserver re-applies its
// API priority and fairness configuration.
const flowControlEnsureInterval = time.Minute

// startFlowControlConfiguration keeps kube-apiserver's API priority and
// fairness configuration objects, as its post-start hook does (in every
// replica; writes are conditional): the suggested FlowSchemas and
// priority levels are created and kept current unless their
// apf.kubernetes.io/autoupdate-spec annotation says false, the mandatory
// ones are restored whatever was changed, and bootstrap objects upstream
// no longer ships are removed. The steps are upstream's ensurer
// (pkg/registry/flowcontrol/ensurer); its hook itself needs
// k8s.io/apiserver's generic server, which berth does not run. The returned
// wait blocks until the loop has stopped after ctx ends.
func startFlowControlConfiguration(ctx context.Context, lb *inprocess.Loopback, logger *slog.Logger) (wait func(), err error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("flow control configuration: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	c := flowControlEnsurer{
		flowSchemas: ensurer.NewFlowSchemaOps(client.FlowcontrolV1().FlowSchemas(), factory.Flowcontrol().V1().FlowSchemas().Lister()),
		levels: ensurer.NewPriorityLevelConfigurationOps(client.FlowcontrolV1().PriorityLevelConfigurations(),
			factory.Flowcontrol().V1().PriorityLevelConfigurations().Lister()),
	}
	factory.Start(ctx.Done())
	var done sync.WaitGroup
	done.Go(func() {
		defer factory.Shutdown()
		for _, synced := range factory.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return // stopping
			}
		}
		utilwait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := c.ensure(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("keeping the flow control configuration; retrying", "err", err)
			}
		}, flowControlEnsureInterval)
	})
	return done.Wait, nil
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
