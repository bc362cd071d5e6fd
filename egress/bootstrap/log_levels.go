package bootstrap

// LogArgs are the logging flags of every Envoy Portcullis runs.
//
//   - The IP matcher that picks a tenant's filter chain is marked work in progress in
//     Envoy's API, and Envoy warns once per matcher entry on every configuration it
//     loads: ten thousand pods would write ten thousand lines per update. Those warnings
//     come from the "misc" logger, which Portcullis' Envoys need only for errors.
//   - The audit log (standard output) is read as it happens; Envoy flushes buffered
//     log files every 10 s by default, every second here.
func LogArgs() []string {
	return []string{"--component-log-level", "misc:error", "--file-flush-interval-msec", "1000"}
}
