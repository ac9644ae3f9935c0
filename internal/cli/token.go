package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/cli/clibase"
	"github.com/berth/berth/internal/pki"
)

// newTokenCommand manages join tokens (bootstrap-token Secrets in
// kube-system) with the admin kubeconfig.
func newTokenCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete join tokens for berth agent --token",
		Long: `Join tokens let a node join: berth agent --server URL --token TOKEN.

A join token is berth::sha256:<hash of the server CA's public key>::<id>.<secret>.
The agent refuses a server whose CA does not match the hash, then authenticates
with <id>.<secret> (a bootstrap token in upstream's format, user
system:bootstrap:<id>, group system:bootstrappers) only to request its node
certificate. Anyone holding a valid token can join a node: keep tokens short-lived
and delete them once used.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "admin kubeconfig (default $BERTH_DATA_DIR/admin.kubeconfig, /var/lib/berth/admin.kubeconfig)")
	connect := func() (*tokenClient, error) { return newTokenClient(kubeconfig) }
	cmd.AddCommand(newTokenCreateCommand(connect), newTokenListCommand(connect), newTokenDeleteCommand(connect))
	return cmd
}

func newTokenCreateCommand(connect func() (*tokenClient, error)) *cobra.Command {
	var ttl time.Duration
	var description string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a join token and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < 0 {
				return fmt.Errorf("--ttl %s: must not be negative (0 means the token never expires)", ttl)
			}
			c, err := connect()
			if err != nil {
				return err
			}
			t, err := bootstraptoken.Create(cmd.Context(), c.client, ttl, description, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), c.join(t))
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid (0: never expires)")
	cmd.Flags().StringVar(&description, "description", "", "a note shown by berth token list")
	return cmd
}

func newTokenListCommand(connect func() (*tokenClient, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List join tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			tokens, err := bootstraptoken.List(cmd.Context(), c.client)
			if err != nil {
				return err
			}
			return printTokens(cmd.OutOrStdout(), c, tokens, time.Now())
		},
	}
}

func printTokens(out io.Writer, c *tokenClient, tokens []bootstraptoken.Token, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "TOKEN\tTTL\tEXPIRES\tDESCRIPTION")
	for _, t := range tokens {
		ttl, expires := "<forever>", "<never>"
		if !t.Expires.IsZero() {
			expires = t.Expires.UTC().Format(time.RFC3339)
			ttl = "<expired>"
			if !t.Expired(now) {
				ttl = t.Expires.Sub(now).Round(time.Second).String()
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.join(t), ttl, expires, t.Description)
	}
	return w.Flush()
}

func newTokenDeleteCommand(connect func() (*tokenClient, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID|TOKEN",
		Short: "Delete a join token: it can join no more nodes (joined nodes keep their certificates)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if j, err := bootstraptoken.ParseJoinToken(id); err == nil {
				id = j.ID()
			}
			c, err := connect()
			if err != nil {
				return err
			}
			if err := bootstraptoken.Delete(cmd.Context(), c.client, id); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %s deleted\n", id)
			return nil
		},
	}
}

// tokenClient is an admin client plus the server CA's pin, which every
// printed join token carries.
type tokenClient struct {
	client kubernetes.Interface
	caHash string
}

func newTokenClient(kubeconfig string) (*tokenClient, error) {
	if kubeconfig == "" {
		kubeconfig = filepath.Join(clibase.DataDirFromEnv(), "admin.kubeconfig")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	caPEM := restCfg.CAData
	if len(caPEM) == 0 {
		return nil, fmt.Errorf("--kubeconfig %s: no embedded certificate-authority-data to compute the join token's CA hash from", kubeconfig)
	}
	cas, err := pki.ParseCertificates(caPEM)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: server CA: %w", kubeconfig, err)
	}
	restCfg.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return &tokenClient{client: client, caHash: pki.PublicKeyHash(cas[0])}, nil
}

func (c *tokenClient) join(t bootstraptoken.Token) string {
	return bootstraptoken.JoinToken{CAHash: c.caHash, Token: t.String()}.String()
}
