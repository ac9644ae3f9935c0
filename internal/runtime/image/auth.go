package image

import (
	"fmt"
	"os"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dockerHubAuthKey is the key docker config files use for Docker Hub.
const dockerHubAuthKey = "https://index.docker.io/v1/"

// authenticator chooses the credentials for pulling from ep an image whose
// upstream registry is upstream: the CRI request's AuthConfig if it has one,
// else the docker config file's entry for the endpoint or the upstream host,
// else anonymous.
func (s *Service) authenticator(cri *runtimeapi.AuthConfig, ep endpoint, upstream string) (authn.Authenticator, error) {
	if a := criAuth(cri); a != nil {
		return a, nil
	}
	if s.cfg.DockerConfig == "" {
		return authn.Anonymous, nil
	}
	f, err := os.Open(s.cfg.DockerConfig)
	if err != nil {
		return nil, fmt.Errorf("open docker config: %w", err)
	}
	defer f.Close()
	cf, err := config.LoadFromReader(f)
	if err != nil {
		return nil, fmt.Errorf("parse docker config %s: %w", s.cfg.DockerConfig, err)
	}
	for _, host := range []string{ep.host, upstream} {
		key := host
		if key == "docker.io" || key == "index.docker.io" {
			key = dockerHubAuthKey
		}
		ac, err := cf.GetAuthConfig(key)
		if err != nil {
			return nil, fmt.Errorf("docker config entry for %s: %w", host, err)
		}
		if ac.Username != "" || ac.Password != "" || ac.Auth != "" || ac.IdentityToken != "" || ac.RegistryToken != "" {
			return authn.FromConfig(authn.AuthConfig{
				Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
				IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken,
			}), nil
		}
	}
	return authn.Anonymous, nil
}

// criAuth converts a CRI AuthConfig; nil if it carries no credentials.
func criAuth(a *runtimeapi.AuthConfig) authn.Authenticator {
	if a == nil || (a.Username == "" && a.Password == "" && a.Auth == "" && a.IdentityToken == "" && a.RegistryToken == "") {
		return nil
	}
	return authn.FromConfig(authn.AuthConfig{
		Username: a.Username, Password: a.Password, Auth: a.Auth,
		IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
	})
}
