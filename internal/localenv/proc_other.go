//go:build !linux

package localenv

import "syscall"

// sysProcAttr: without Pdeathsig, children outlive a killed parent here; a clean stop
// still ends them.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// Leftovers needs /proc; elsewhere it finds nothing.
func Leftovers(string) ([]int, error) { return nil, nil }

// StopLeftovers needs /proc; elsewhere it does nothing.
func StopLeftovers(string) error { return nil }
