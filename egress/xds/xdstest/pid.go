package xdstest

// PID is the Envoy process's ID, so a test can prove Envoy was not restarted.
func (e *Envoy) PID() int { return e.cmd.Process.Pid }
