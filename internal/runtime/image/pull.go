package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pullPlatform is the platform chosen from a multi-platform index.
var pullPlatform = v1.Platform{OS: "linux", Architecture: goruntime.GOARCH}

// Pull fetches the image ref (normalised as containerd does) unless an
// identical pull is already running, in which case it waits for that one.
// The shared pull runs until it finishes or every caller waiting for it has
// gone, so one caller's cancellation never fails the others. It returns the
// image ID. Errors are gRPC status errors.
func (s *Service) Pull(ctx context.Context, ref string, auth *runtimeapi.AuthConfig) (string, error) {
	parsed, err := parseRef(ref)
	if err != nil {
		return "", err
	}
	key := parsed.String()
	for {
		pullCtx, leave := s.joinPull(ctx, key)
		ch := s.pulls.DoChan(key, func() (any, error) {
			return s.pullOnce(pullCtx, parsed, auth)
		})
		select {
		case <-ctx.Done():
			leave()
			return "", status.FromContextError(ctx.Err()).Err()
		case res := <-ch:
			leave()
			if status.Code(res.Err) == codes.Canceled && ctx.Err() == nil {
				// We joined a pull whose callers had all gone; start afresh.
				continue
			}
			if res.Err != nil {
				return "", res.Err
			}
			return res.Val.(string), nil
		}
	}
}

// sharedPull is the context of one running pull and how many callers wait on it.
type sharedPull struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int
}

// joinPull registers the caller with the shared pull of key and returns its
// context; leave cancels that context once the last caller has left.
func (s *Service) joinPull(ctx context.Context, key string) (context.Context, func()) {
	s.inflightMu.Lock()
	defer s.inflightMu.Unlock()
	p := s.inflight[key]
	if p == nil {
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p = &sharedPull{ctx: pctx, cancel: cancel}
		s.inflight[key] = p
	}
	p.waiters++
	return p.ctx, func() {
		s.inflightMu.Lock()
		defer s.inflightMu.Unlock()
		if p.waiters--; p.waiters == 0 {
			p.cancel()
			if s.inflight[key] == p {
				delete(s.inflight, key)
			}
		}
	}
}

// pullOnce tries each endpoint for the image's registry (mirrors first) in turn.
func (s *Service) pullOnce(ctx context.Context, ref parsedRef, auth *runtimeapi.AuthConfig) (string, error) {
	start := time.Now()
	var errs []error
	for _, ep := range s.mirrors.endpoints(ref.Host()) {
		id, err := s.pullFrom(ctx, ref, ep, auth)
		if status.Code(err) == codes.InvalidArgument {
			return "", err
		}
		if err == nil {
			s.metrics.duration.WithLabelValues("success").Observe(time.Since(start).Seconds())
			return id, nil
		}
		if ctx.Err() != nil {
			s.metrics.duration.WithLabelValues("canceled").Observe(time.Since(start).Seconds())
			return "", status.FromContextError(ctx.Err()).Err()
		}
		s.log.WarnContext(ctx, "pull from endpoint failed", "image", ref.String(), "endpoint", ep.host, "mirror", ep.mirror, "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", ep.host, err))
	}
	s.metrics.duration.WithLabelValues("error").Observe(time.Since(start).Seconds())
	err := errors.Join(errs...)
	return "", status.Errorf(pullErrorCode(err), "pull %s: %v", ref.String(), err)
}

// pullErrorCode maps a registry failure to a gRPC code.
func pullErrorCode(err error) codes.Code {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound:
			return codes.NotFound
		case http.StatusUnauthorized:
			return codes.Unauthenticated
		case http.StatusForbidden:
			return codes.PermissionDenied
		}
	}
	return codes.Unavailable
}

func (s *Service) pullFrom(ctx context.Context, ref parsedRef, ep endpoint, criAuth *runtimeapi.AuthConfig) (string, error) {
	var nameOpts []name.Option
	if ep.insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	remoteRef, err := name.ParseReference(ep.host+"/"+ref.Path()+ref.Suffix(), nameOpts...)
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "reference %q on %s: %v", ref.String(), ep.host, err)
	}
	a, err := s.authenticator(criAuth, ep, ref.Host())
	if err != nil {
		return "", err
	}
	opts := []remote.Option{remote.WithAuth(a), remote.WithPlatform(pullPlatform)}
	if s.cfg.Transport != nil {
		opts = append(opts, remote.WithTransport(s.cfg.Transport))
	}
	s.log.InfoContext(ctx, "pulling image", "image", ref.String(), "endpoint", ep.host)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	progress := &pullProgress{}
	stopWatch := s.watchProgress(ctx, ref.String(), progress, cancel)
	defer stopWatch()
	id, err := s.fetch(ctx, remoteRef, ref, opts, progress)
	if stalled := context.Cause(ctx); stalled != nil && errors.As(stalled, new(errPullStalled)) {
		return "", stalled
	}
	return id, err
}

// fetch pulls remoteRef (ref as served by one endpoint) into the store.
func (s *Service) fetch(ctx context.Context, remoteRef name.Reference, ref parsedRef, opts []remote.Option, progress *pullProgress) (string, error) {
	opts = append(slices.Clone(opts), remote.WithContext(ctx))
	desc, err := remote.Get(remoteRef, opts...)
	if err != nil {
		return "", err
	}
	img, err := desc.Image() // resolves an index to pullPlatform's manifest
	if err != nil {
		return "", fmt.Errorf("image for %s: %w", pullPlatform.String(), err)
	}
	var extra []namedBlob
	if desc.MediaType.IsIndex() {
		extra = append(extra, namedBlob{digest: desc.Digest, data: desc.Manifest})
	}
	return s.store(ctx, img, storeNames{ref: ref, repoDigest: repoDigest(ref.Repository(), desc.Digest.String())}, extra, progress)
}

// countingReader counts bytes read into a shared counter.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
