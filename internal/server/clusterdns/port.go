package clusterdns

import (
	"errors"
	"fmt"
	"net"
)

// freePort finds a port free for both UDP and TCP on address: the Service's
// endpoints name one port for both, where asking the kernel for port 0
// twice gives two.
func freePort(address net.IP) (int, error) {
	var errs []error
	for range 20 {
		tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: address})
		if err != nil {
			return 0, fmt.Errorf("find a free DNS port on %s: %w", address, err)
		}
		port := tcp.Addr().(*net.TCPAddr).Port
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: address, Port: port})
		tcp.Close()
		if err == nil {
			udp.Close()
			return port, nil
		}
		errs = append(errs, err)
	}
	return 0, fmt.Errorf("find a free DNS port on %s: %w", address, errors.Join(errs...))
}
