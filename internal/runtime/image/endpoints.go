package image

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
)

// endpoint is one registry to try for a pull.
type endpoint struct {
	host     string // host[:port]
	insecure bool   // plain HTTP
	mirror   bool
}

// mirrorResolver turns an image's registry host into the endpoints to try:
// its mirrors in order if it has any, else the host itself. A mirrored host
// is replaced, never contacted (unlike Docker's fallback to the upstream), so
// a machine configured to pull through a local mirror sends nothing, not
// even a DNS query, to the upstream registry.
type mirrorResolver struct {
	mirrors  map[string][]endpoint
	insecure map[string]bool
}

func newMirrorResolver(mirrors map[string][]string, insecure []string) (*mirrorResolver, error) {
	r := &mirrorResolver{mirrors: map[string][]endpoint{}, insecure: map[string]bool{}}
	for _, h := range insecure {
		if _, err := name.NewRegistry(h); err != nil || h == "" {
			return nil, fmt.Errorf("image: invalid insecure registry %q", h)
		}
		r.insecure[h] = true
	}
	for host, urls := range mirrors {
		if _, err := name.NewRegistry(host); err != nil || host == "" {
			return nil, fmt.Errorf("image: invalid mirrored registry host %q", host)
		}
		for _, raw := range urls {
			ep, err := parseMirrorURL(raw)
			if err != nil {
				return nil, fmt.Errorf("image: mirror for %s: %w", host, err)
			}
			r.mirrors[host] = append(r.mirrors[host], ep)
		}
	}
	return r, nil
}

// parseMirrorURL accepts "http://host[:port]" (plain HTTP), "https://host[:port]"
// or a bare "host[:port]" (HTTPS unless listed as insecure).
func parseMirrorURL(raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		u, err = url.Parse("https://" + raw)
		if err != nil {
			return endpoint{}, fmt.Errorf("invalid URL %q", raw)
		}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, fmt.Errorf("URL %q: scheme must be http or https", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return endpoint{}, fmt.Errorf("URL %q: only scheme and host are allowed; the repository path is kept", raw)
	}
	if _, err := name.NewRegistry(u.Host); err != nil {
		return endpoint{}, fmt.Errorf("URL %q: invalid host: %w", raw, err)
	}
	return endpoint{host: u.Host, insecure: u.Scheme == "http", mirror: true}, nil
}

// endpoints lists where to pull an image named on host from.
func (r *mirrorResolver) endpoints(host string) []endpoint {
	eps := slices.Clone(r.mirrors[host])
	if len(eps) == 0 {
		return []endpoint{{host: host, insecure: r.insecure[host]}}
	}
	for i := range eps {
		eps[i].insecure = eps[i].insecure || r.insecure[eps[i].host]
	}
	return eps
}
