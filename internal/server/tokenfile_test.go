package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStaticTokens(t *testing.T) {
	t.Parallel()
	if tokens, err := staticTokens(""); err != nil || tokens != nil {
		t.Fatalf("no file: %v, %v; want none", tokens, err)
	}
	if _, err := staticTokens(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "--token-auth-file") {
		t.Fatalf("missing file: %v; want an error naming the flag", err)
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("s3cr3t,jane,uid-1,\"ops,dev\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := staticTokens(path)
	if err != nil || len(tokens) != 1 {
		t.Fatalf("tokens %v, err %v", tokens, err)
	}
	resp, ok, err := tokens[0].AuthenticateToken(context.Background(), "s3cr3t")
	if err != nil || !ok || resp.User.GetName() != "jane" || !slices.Equal(resp.User.GetGroups(), []string{"ops", "dev"}) {
		t.Fatalf("known token: %+v %v %v", resp, ok, err)
	}
	if _, ok, _ := tokens[0].AuthenticateToken(context.Background(), "guess"); ok {
		t.Fatal("an unknown token authenticated")
	}
}
