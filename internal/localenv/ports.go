package localenv

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Port is a loopback port a component needs, with the flag that changes it.
type Port struct {
	Port int
	What string // e.g. "kube-apiserver"
	Flag string // e.g. "--apiserver-port"; empty when no flag moves it
}

// CheckPortsFree fails naming every port that cannot be bound on 127.0.0.1, its user
// and the flag that moves it, instead of letting a child fail later with its own
// message in a log file.
func CheckPortsFree(ports ...Port) error {
	var errs []error
	for _, p := range ports {
		if p.Port == 0 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)))
		if err != nil {
			fix := "stop what holds it"
			if p.Flag != "" {
				fix += " or pass " + p.Flag
			}
			errs = append(errs, fmt.Errorf("port %d (%s) is in use: %s", p.Port, p.What, fix))
			continue
		}
		l.Close()
	}
	return errors.Join(errs...)
}
