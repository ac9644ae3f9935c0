// Package clusterdns runs cluster DNS inside `berth server`: CoreDNS's own
// DNS server and plugins (kubernetes, forward, cache, errors, bind), started
// from a Corefile equivalent to kubeadm's default, answering for the cluster
// domain from the server's own API through an in-process client.
//
// CoreDNS is embedded as a library rather than run as a Deployment: the
// server already holds the API and an address every node reaches, and a
// cluster then has DNS before any node runs a pod.
package clusterdns
