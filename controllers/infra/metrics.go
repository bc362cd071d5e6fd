package infra

import (
	"strconv"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// Per-destination metrics. Every Envoy serves its statistics (per Backend: clusters
// named backend/<ns>/<name>/<port>) in Prometheus format on a listener of its own that
// forwards only GET MetricsPath to the admin interface, which stays on loopback.
const (
	// MetricsPort is the pods' metrics listener, on every interface of the pod; the
	// translator refuses Gateway listeners on it.
	MetricsPort = bootstrap.PodMetricsPort
	// MetricsPath is the only path it serves.
	MetricsPath = bootstrap.MetricsPath
	// MetricsAddressFile, in a Gateway's directory of the host provider's work
	// directory, holds the loopback host:port of that Envoy's metrics listener.
	MetricsAddressFile = "metrics-address"
	// AdminAddressFile, beside it, holds the loopback host:port of that Envoy's admin
	// interface (picked anew for each Envoy), which `portcullis local` prints.
	AdminAddressFile = "admin-address"
)

// The annotations on the Envoy pods that a Prometheus with the common kubernetes-pods
// scrape configuration (relabelling on prometheus.io/*) follows.
const (
	AnnotationPrometheusScrape = "prometheus.io/scrape"
	AnnotationPrometheusPort   = "prometheus.io/port"
	AnnotationPrometheusPath   = "prometheus.io/path"
)

// scrapeAnnotations point Prometheus at the metrics listener.
func scrapeAnnotations() map[string]string {
	return map[string]string{
		AnnotationPrometheusScrape: "true",
		AnnotationPrometheusPort:   strconv.Itoa(MetricsPort),
		AnnotationPrometheusPath:   MetricsPath,
	}
}
