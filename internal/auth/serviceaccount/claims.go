package serviceaccount

import (
	"github.com/go-jose/go-jose/v4/jwt"
)

// privateClaims is the "kubernetes.io" claim of upstream's bound tokens.
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io"`
}

type kubernetesClaims struct {
	Namespace      string `json:"namespace"`
	ServiceAccount ref    `json:"serviceaccount"`
	Pod            *ref   `json:"pod,omitempty"`
	// Node is the bound pod's node, as upstream's tokens name it.
	Node *ref `json:"node,omitempty"`
}

type ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// claims is everything a token says.
type claims struct {
	jwt.Claims
	privateClaims
}
