package server

import (
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
)

// staticTokens reads --token-auth-file, kube-apiserver's CSV of bearer
// tokens (token,user,uid[,"group1,group2"]), with k8s.io/apiserver's own
// reader; none when path is empty. The file is read once, at start, as
// kube-apiserver does: changing it needs a restart.
func staticTokens(path string) ([]authenticator.Token, error) {
	if path == "" {
		return nil, nil
	}
	tokens, err := tokenfile.NewCSV(path)
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file %s: %w", path, err)
	}
	return []authenticator.Token{tokens}, nil
}
