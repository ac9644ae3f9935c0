package auth

// Where the API server publishes the CA of the client certificates it
// accepts, under upstream's names: node agents read it to verify who calls
// their node server (the API server's own client certificate is from it).
const (
	ClientCAConfigMapNamespace = "kube-system"
	ClientCAConfigMapName      = "extension-apiserver-authentication"
	ClientCAConfigMapKey       = "client-ca-file"
)
