package infra

import "syscall"

// sysProcAttr makes the kernel send SIGTERM to Envoy when the process that started it
// dies, so a crashed manager leaves no Envoy holding its ports. (The signal follows the
// death of the starting OS thread; the Go runtime does not end its threads while the
// program runs.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
