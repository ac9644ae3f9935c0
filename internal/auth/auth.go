// Package auth builds the API server's authentication and authorization
// chains from k8s.io/apiserver's interfaces, so every request carries a user
// and every handler asks one authorizer. Authentication: x509 client
// certificates from the client CA, then bearer tokens (bootstrap,
// service-account, static and in-process tokens), anonymous only on the
// public paths. Authorization: system:masters may do anything, then the Node
// authorizer, the bootstrap policy (upstream's default roles for berth's own
// components) and RBAC.
package auth

import (
	"crypto/x509"
	"errors"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/utils/clock"
)

// MastersGroup is the group whose members may do anything (the admin).
const MastersGroup = "system:masters"

// NewAuthenticator authenticates requests by a client certificate signed by
// clientCAs (verified chains are cached for seconds: x509cache.go) or,
// failing that, by a bearer token one of tokens accepts (bootstrap,
// service-account, static or in-process tokens). The first that recognizes
// the request decides.
func NewAuthenticator(clientCAs *x509.CertPool, tokens ...authenticator.Token) authenticator.Request {
	chain := []authenticator.Request{newX509Authenticator(clientCAs, clock.RealClock{})}
	if len(tokens) > 0 {
		chain = append(chain, bearertoken.New(tokenunion.New(tokens...)))
	}
	// Every authenticated user is also in system:authenticated, as upstream;
	// anonymous callers of the public paths are not.
	return publicAnonymous{next: group.NewAuthenticatedGroupAdder(requestunion.New(chain...))}
}

// NewAuthorizer returns the authorization chain: first allow wins, default
// deny. nodes, the Node authorizer (internal/auth/node), is the source of
// node agents' rights: the in-code policy (BootstrapPolicy and the
// controller manager's binding) grants system:nodes only what every
// authenticated user gets and upstream's system:node-proxier, the reads of
// the Service proxy every agent runs.
//
// rbac, when given, decides last: grants made through RBAC objects
// (internal/auth/rbac), which the in-code policy only seeds.
func NewAuthorizer(nodes authorizer.Authorizer, policy []Binding, rbac ...authorizer.Authorizer) (authorizer.Authorizer, error) {
	if nodes == nil {
		return nil, errors.New("auth: the Node authorizer is required")
	}
	chain := []union.NamedAuthorizer{
		union.NamedAuthorizer{AuthorizerName: "masters", Authorizer: authorizerfactory.NewPrivilegedGroups(MastersGroup)},
		union.NamedAuthorizer{AuthorizerName: "node", Authorizer: nodes},
		union.NamedAuthorizer{AuthorizerName: "bootstrap-policy", Authorizer: NewPolicyAuthorizer(policy)},
	}
	for _, r := range rbac {
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: r})
	}
	return union.New(chain...)
}
