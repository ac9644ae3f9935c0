package agent

import (
	"context"
	"log/slog"

	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/auth/bootstraptoken"
)

// identity returns the kubeconfig the agent authenticates with: the
// admin-issued one, or with a join token the one the join wrote (joining
// first when there is no valid certificate yet). For a joined agent, renew
// keeps the certificate fresh until its context ends; otherwise it is nil
// (an admin-issued certificate is the admin's to replace).
func identity(ctx context.Context, cfg Config, log *slog.Logger) (kubeconfig string, renew func(context.Context) error, err error) {
	if cfg.Token == "" {
		return cfg.Kubeconfig, nil, nil
	}
	token, err := bootstraptoken.ParseJoinToken(cfg.Token)
	if err != nil {
		return "", nil, err
	}
	log = log.With("component", "join")
	kubeconfig, err = join.Ensure(ctx, join.Config{Server: firstOf(cfg.Servers()), Token: &token, NodeName: cfg.NodeName, Dir: cfg.DataDir, Logger: log})
	if err != nil {
		return "", nil, err
	}
	return kubeconfig, func(ctx context.Context) error { return join.Renew(ctx, cfg.DataDir, cfg.NodeName, log) }, nil
}
