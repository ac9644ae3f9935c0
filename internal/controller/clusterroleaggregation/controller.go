// Package clusterroleaggregation fills the rules of every ClusterRole that
// has an aggregationRule with the rules of the ClusterRoles its selectors
// match, as upstream's clusterrole-aggregation controller does: a new
// ClusterRole labelled rbac.authorization.k8s.io/aggregate-to-view: "true"
// extends view (and, through view's own label, edit and admin).
package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/berth/berth/internal/controller/keyloop"
	"github.com/berth/berth/internal/informeropts"
)

// Config is what the controller needs.
type Config struct {
	Client kubernetes.Interface
	Logger *slog.Logger
}

// Controller keeps aggregated ClusterRoles' rules current.
type Controller struct {
	client kubernetes.Interface
	roles  rbaclisters.ClusterRoleLister
	queue  workqueue.TypedRateLimitingInterface[string]
	start  func(ctx context.Context) bool // starts the informer; false if ctx ended before it synced
	stop   func()
	log    *slog.Logger
}

// New builds the controller; Run starts it.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informeropts.Factory()...)
	informer := factory.Rbac().V1().ClusterRoles()
	c := &Controller{
		client: cfg.Client,
		roles:  informer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "clusterroleaggregation"}),
		log: cfg.Logger,
	}
	// Any ClusterRole's change may change what any aggregated one selects
	// (its labels, its rules), so every aggregated role is looked at again.
	_, _ = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(any, any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	})
	c.start = func(ctx context.Context) bool {
		factory.Start(ctx.Done())
		return cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced)
	}
	c.stop = factory.Shutdown
	return c
}

func (c *Controller) enqueueAggregated() {
	roles, err := c.roles.List(labels.Everything())
	if err != nil {
		c.log.Warn("listing cluster roles", "err", err)
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run aggregates until ctx ends, then stops its informer.
func (c *Controller) Run(ctx context.Context) error {
	defer c.stop()
	defer c.queue.ShutDown()
	if !c.start(ctx) {
		return nil
	}
	keyloop.Run(ctx, c.queue, 1, c.sync, c.onError)
	return nil
}

func (c *Controller) onError(ctx context.Context, name string, err error) bool {
	level := slog.LevelWarn
	if apierrors.IsConflict(err) {
		level = slog.LevelDebug // the role changed meanwhile; its new version is aggregated next
	}
	c.log.Log(ctx, level, "cluster role aggregation failed; retrying", "clusterrole", name, "err", err)
	return true
}

// sync writes the role's aggregated rules if they differ from its rules.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read clusterrole %s: %w", name, err)
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := c.aggregate(role)
	if err != nil {
		// A selector that cannot be parsed will not parse on a retry either;
		// the role is looked at again when it changes.
		c.log.Warn("cluster role has an invalid aggregation rule", "clusterrole", name, "err", err)
		return nil
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	updated := role.DeepCopy()
	updated.Rules = rules
	// An update, not a patch: the resourceVersion makes a concurrent change
	// of the role fail with a conflict, and the role is aggregated again.
	if _, err := c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{FieldManager: "clusterrole-aggregation-controller"}); err != nil {
		return fmt.Errorf("update clusterrole %s: %w", name, err)
	}
	return nil
}

// aggregate is the rules of every other ClusterRole that one of role's
// selectors matches, each rule once, in the order of the roles' names.
func (c *Controller) aggregate(role *rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	selected := map[string]*rbacv1.ClusterRole{}
	for _, ls := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return nil, fmt.Errorf("selector %v: %w", ls, err)
		}
		matched, err := c.roles.List(selector)
		if err != nil {
			return nil, fmt.Errorf("list clusterroles: %w", err)
		}
		for _, m := range matched {
			if m.Name != role.Name {
				selected[m.Name] = m
			}
		}
	}
	var rules []rbacv1.PolicyRule
	for _, name := range slices.Sorted(maps.Keys(selected)) {
		for _, r := range selected[name].Rules {
			if !contains(rules, r) {
				rules = append(rules, r)
			}
		}
	}
	return rules, nil
}

func contains(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	return slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, r) })
}
