package bootstraptoken

import (
	"encoding/hex"
	"fmt"
	"strings"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// A join token is one string that carries both what the agent must check
// before trusting the server and what it presents afterwards:
//
//	berth::sha256:<hex SHA-256 of the server CA's SubjectPublicKeyInfo>::<id>.<secret>
//
// The pin is kubeadm's discovery-token-ca-cert-hash; putting it in the same
// string means an operator cannot join a node without it (no blind trust).
const (
	joinPrefix   = "berth::"
	joinSep      = "::"
	caHashPrefix = "sha256:"
)

// JoinToken is a parsed join token.
type JoinToken struct {
	CAHash string // "sha256:<64 hex digits>", as pki.PublicKeyHash
	Token  string // "<id>.<secret>"
}

// String renders the join token.
func (j JoinToken) String() string { return joinPrefix + j.CAHash + joinSep + j.Token }

// ID is the token's public half, safe to log.
func (j JoinToken) ID() string { id, _, _ := strings.Cut(j.Token, "."); return id }

// ParseJoinToken parses and validates s. The error never repeats the
// token's secret.
func ParseJoinToken(s string) (JoinToken, error) {
	rest, ok := strings.CutPrefix(s, joinPrefix)
	if !ok {
		return JoinToken{}, fmt.Errorf("join token: want berth::sha256:<CA public key hash>::<id>.<secret> (as printed by berth token create)")
	}
	hash, token, ok := strings.Cut(rest, joinSep)
	if !ok {
		return JoinToken{}, fmt.Errorf("join token: missing %q between the CA hash and the token", joinSep)
	}
	digits, ok := strings.CutPrefix(hash, caHashPrefix)
	if b, err := hex.DecodeString(digits); !ok || err != nil || len(b) != 32 || strings.ToLower(digits) != digits {
		return JoinToken{}, fmt.Errorf("join token: CA hash %q: want sha256: followed by 64 lower-case hex digits", hash)
	}
	if !bootstraputil.IsValidBootstrapToken(token) {
		return JoinToken{}, fmt.Errorf("join token: the token part is not <6 [a-z0-9]>.<16 [a-z0-9]>")
	}
	return JoinToken{CAHash: hash, Token: token}, nil
}
