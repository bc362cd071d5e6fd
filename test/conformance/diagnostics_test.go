package conformance

import (
	"bufio"
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// When the suite fails, the cluster is torn down right after: what the managers and the
// Envoys said is gone with it, and CI keeps only this test's output. logDiagnostics
// prints, for every manager replica and every Envoy pod, the last lines that report a
// problem (errors, warnings, rejected or timed-out xDS, requests answered with a 5xx),
// so that a failure can be explained from the output alone.

const (
	managerNamespace = "portcullis-system"
	managerSelector  = "app.kubernetes.io/name=portcullis"
	envoySelector    = "app.kubernetes.io/name=portcullis-envoy"
	diagnosticLines  = 40
)

// notable picks the log lines worth printing: the managers' errors and warnings (JSON
// with a level), Envoy's own warnings and errors, any xDS rejection or fetch timeout,
// and the audit lines of requests Envoy answered with a 5xx or a 4xx other than 404 (a
// 400, for one, is what a TLS upstream answers to plaintext; their response flags and
// upstream say why). 404s are left out: the suite's negative tests make many.
var notable = regexp.MustCompile(`"level":"(error|warn)|^\[[^]]*\]\[[0-9]+\]\[(warning|error|critical)\]|(?i:rejected|timed out)|"responseCode":(5[0-9][0-9]|4(0[0-35-9]|[1-9][0-9]))`)

func logDiagnostics(t *testing.T, cfg *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Logf("diagnostics: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logPods(ctx, t, cs, managerNamespace, managerSelector)
	logPods(ctx, t, cs, metav1.NamespaceAll, envoySelector)
}

// logPods prints the notable lines of every container of the pods selector selects.
func logPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace, selector string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Logf("diagnostics: listing pods %s: %v", selector, err)
		return
	}
	for _, pod := range pods.Items {
		for _, c := range pod.Spec.Containers {
			raw, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctx)
			if err != nil {
				t.Logf("diagnostics: logs of %s/%s %s: %v", pod.Namespace, pod.Name, c.Name, err)
				continue
			}
			lines := lastNotable(raw, diagnosticLines)
			t.Logf("diagnostics: %s/%s %s (restarts %d): %d notable lines, the last %d:", pod.Namespace, pod.Name, c.Name, restarts(pod, c.Name), lines.total, len(lines.last))
			for _, line := range lines.last {
				t.Logf("  %s", line)
			}
		}
	}
}

type notableLines struct {
	total int
	last  []string
}

// lastNotable keeps the last n notable lines of a log, each cut to 600 bytes.
func lastNotable(log []byte, n int) notableLines {
	var out notableLines
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !notable.Match(line) {
			continue
		}
		out.total++
		if len(line) > 600 {
			line = line[:600]
		}
		out.last = append(out.last, string(line))
		if len(out.last) > n {
			out.last = out.last[1:]
		}
	}
	return out
}

func restarts(pod corev1.Pod, container string) int32 {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return s.RestartCount
		}
	}
	return 0
}
