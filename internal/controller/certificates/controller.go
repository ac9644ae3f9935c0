package certificates

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/berth/berth/internal/controller/keyloop"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// DefaultLifetime is how long issued node client certificates are valid;
// agents renew at 70–90% of it.
const DefaultLifetime = 365 * 24 * time.Hour

// Config is what the controller needs.
type Config struct {
	// Client decides and issues; InformerClient lists and watches CSRs and
	// Nodes (nil: Client); Nodes, when set, is where Nodes are listed and
	// watched instead (the server's watch cache).
	Client         kubernetes.Interface
	InformerClient kubernetes.Interface
	Nodes          cache.ListerWatcher
	// CA signs node client certificates: the cluster's client CA, which the
	// API server trusts for x509 authentication.
	CA *pki.CA
	// ServingCA signs node serving certificates: the CA the API server
	// verifies node servers against when it proxies logs and exec. Nil:
	// serving CSRs are still decided but approved ones are marked Failed.
	ServingCA *pki.CA
	Lifetime  time.Duration // 0: DefaultLifetime
	Logger    *slog.Logger
}

// Controller approves and signs node client and serving CSRs.
type Controller struct {
	cfg   Config
	csrs  certlisters.CertificateSigningRequestLister
	queue workqueue.TypedRateLimitingInterface[string]
	run   func(ctx context.Context) // starts the informers
	nodes NodeGetter
	// claims are the names and IPs every Node seen so far reported.
	claims *addressClaims
	signer signer
	log    *slog.Logger
}

// New builds the controller; Run starts it.
func New(cfg Config) *Controller {
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = DefaultLifetime
	}
	watch := cfg.InformerClient
	if watch == nil {
		watch = cfg.Client
	}
	factory := informers.NewSharedInformerFactoryWithOptions(watch, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &corev1.Node{}, cfg.Nodes)
	csrInformer := factory.Certificates().V1().CertificateSigningRequests()
	nodeInformer := factory.Core().V1().Nodes()
	c := &Controller{
		cfg:    cfg,
		csrs:   csrInformer.Lister(),
		nodes:  nodeInformer.Lister(),
		claims: newAddressClaims(),
		signer: signer{client: cfg.CA, serving: cfg.ServingCA, lifetime: cfg.Lifetime},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "certificates"}),
		log: cfg.Logger,
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	_, _ = csrInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	recordNode := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			c.claims.record(n)
		}
	}
	_, _ = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: recordNode, UpdateFunc: func(_, obj any) { recordNode(obj) },
	})
	c.run = func(ctx context.Context) {
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
	}
	return c
}

// Run processes CSRs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	c.run(ctx)
	keyloop.Run(ctx, c.queue, 1, c.sync, func(_ context.Context, key string, err error) bool {
		c.log.Warn("CSR sync failed; retrying", "csr", key, "err", err)
		return true
	})
	return nil
}

// sync takes one CSR one step: decide it if pending, sign it if approved.
func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ours(csr.Spec.SignerName) || len(csr.Status.Certificate) > 0 {
		return nil
	}
	approved, final := decided(csr)
	switch {
	case approved:
		return c.issue(ctx, csr)
	case final:
		return nil
	}
	v, reason, err := decide(csr, c.nodes, c.claims)
	if err != nil || v == undecided {
		return err
	}
	return c.record(ctx, csr, v, reason)
}

func (c *Controller) record(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, v verdict, reason string) error {
	cond := certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: "True", Reason: "AutoApproved", Message: reason,
		LastUpdateTime: metav1.Now(),
	}
	if v == deny {
		cond.Type, cond.Reason = certificatesv1.CertificateDenied, denyReason(csr.Spec.SignerName)
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, cond)
	if _, err := c.cfg.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("record %s: %w", cond.Type, err)
	}
	logf := c.log.Info
	if v == deny {
		logf = c.log.Warn
	}
	logf("CSR "+string(cond.Type), "csr", csr.Name, "requester", csr.Spec.Username, "reason", reason)
	return nil
}

func (c *Controller) issue(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	csr = csr.DeepCopy()
	certPEM, err := c.signer.sign(csr)
	if err != nil {
		// Approved but not signable: mark it Failed so the requester stops waiting.
		c.log.Warn("CSR approved but refused by the signer", "csr", csr.Name, "err", err)
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: "True", Reason: "SignerValidationFailure", Message: err.Error(),
			LastUpdateTime: metav1.Now(),
		})
	} else {
		csr.Status.Certificate = certPEM
	}
	if _, err := c.cfg.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("store certificate: %w", err)
	}
	if len(csr.Status.Certificate) > 0 {
		c.log.Info("CSR signed", "csr", csr.Name, "requester", csr.Spec.Username)
	}
	return nil
}

// ours reports whether the controller decides and signs signerName's CSRs.
func ours(signerName string) bool {
	return signerName == certificatesv1.KubeAPIServerClientKubeletSignerName || signerName == certificatesv1.KubeletServingSignerName
}

// denyReason is the Denied condition's reason for a signer's requests.
func denyReason(signerName string) string {
	if signerName == certificatesv1.KubeletServingSignerName {
		return "NotANodeServingRequest"
	}
	return "NotANodeClientRequest"
}
