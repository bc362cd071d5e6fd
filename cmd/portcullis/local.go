package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/portcullis-io/portcullis/internal/localenv"
	"github.com/portcullis-io/portcullis/internal/localenv/demo"
)

// localFlags are the options of `portcullis local`: its own, and every flag of
// `portcullis manager`, which it passes on to the manager it runs in-process.
type localFlags struct {
	dataDir, assetsDir                    string
	apiServerPort, etcdPort, etcdPeerPort int
	reset, demo                           bool
	startTimeout                          time.Duration
	manager                               *managerFlags
	zap                                   zap.Options
}

// localManagerDefaults are the manager flags whose default differs in local mode:
// Envoy runs on this machine, and nothing listens beyond loopback that need not.
var localManagerDefaults = map[string]string{
	"provider":                  "host",
	"metrics-bind-address":      "127.0.0.1:16480", // ports a Gateway listener is unlikely to take
	"health-probe-bind-address": "127.0.0.1:16481", // (8080, 18080, … are common); see hostHeldPorts
	"namespace":                 "portcullis-system",
	// The machine's own processes (curl from a terminal) call from loopback: they are
	// the owner of this control plane, served every route. Pods of the local API server
	// given other loopback addresses (127.0.0.11, …) are tenants like in a cluster.
	"unrestricted-callers": "127.0.0.1/32,::1/128",
}

func registerLocalFlags(fs *flag.FlagSet) *localFlags {
	f := &localFlags{manager: registerManagerFlags(fs)}
	f.zap.BindFlags(fs)
	for name, value := range localManagerDefaults {
		setDefault(fs, name, value)
	}
	fs.StringVar(&f.dataDir, "data-dir", "", "directory of etcd's data (kept between runs), logs, Envoy bootstraps and the kubeconfig (default: tmp/local beside the bin/ holding portcullis, else the user cache directory)")
	fs.StringVar(&f.assetsDir, "assets-dir", "", "directory holding etcd and kube-apiserver (default: $KUBEBUILDER_ASSETS, else k8s/ beside the portcullis binary, i.e. bin/k8s)")
	fs.IntVar(&f.apiServerPort, "apiserver-port", localenv.DefaultAPIServerPort, "kube-apiserver port on 127.0.0.1")
	fs.IntVar(&f.etcdPort, "etcd-port", localenv.DefaultEtcdPort, "etcd client port on 127.0.0.1")
	fs.IntVar(&f.etcdPeerPort, "etcd-peer-port", localenv.DefaultEtcdPeerPort, "etcd peer port on 127.0.0.1")
	fs.BoolVar(&f.reset, "reset", false, "start from an empty data directory (deletes every object of earlier runs)")
	fs.BoolVar(&f.demo, "demo", false, "also run a local stand-in for an outside API (api.demo.portcullis.test) and apply samples/demo")
	fs.DurationVar(&f.startTimeout, "start-timeout", localenv.DefaultStartTimeout, "how long to wait for etcd, the API server and the demo to become ready")
	return f
}

// setDefault changes a registered flag's default, in its value and in -h. The manager's
// help may state its own default in words; -h would print both, so that note goes.
func setDefault(fs *flag.FlagSet, name, value string) {
	fl := fs.Lookup(name)
	if err := fl.Value.Set(value); err != nil {
		panic(fmt.Sprintf("default of --%s: %v", name, err))
	}
	fl.DefValue = value
	fl.Usage = withoutDefaultNote(fl.Usage)
}

// withoutDefaultNote removes from a flag's help the default it states in words: a
// "(default ...)" aside, or a closing "; none by default".
func withoutDefaultNote(usage string) string {
	usage = strings.TrimSuffix(usage, "; none by default")
	start := strings.Index(usage, " (default ")
	if start < 0 {
		return usage
	}
	depth := 0
	for i := start + 1; i < len(usage); i++ {
		switch usage[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return usage[:start] + usage[i+1:]
			}
		}
	}
	return usage
}

// validate checks the flags as given, before any default is derived from the machine.
func (f *localFlags) validate() error {
	var errs []error
	if f.manager.provider != "host" {
		errs = append(errs, fmt.Errorf("--provider %q: portcullis local runs Envoy on this machine; only host is possible", f.manager.provider))
	}
	for _, p := range []struct {
		name string
		port int
	}{{"--apiserver-port", f.apiServerPort}, {"--etcd-port", f.etcdPort}, {"--etcd-peer-port", f.etcdPeerPort}} {
		if p.port < 1 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d: want 1-65535", p.name, p.port))
		}
	}
	if f.startTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--start-timeout %s: want a positive duration", f.startTimeout))
	}
	if err := f.manager.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// resolve fills the defaults that depend on where the binary is and finds the
// binaries; a missing one is named with the make target that provides it.
func (f *localFlags) resolve(exe string) error {
	binDir := filepath.Dir(exe)
	if f.dataDir == "" {
		f.dataDir = defaultDataDir(binDir)
	}
	abs, err := filepath.Abs(f.dataDir)
	if err != nil {
		return err
	}
	f.dataDir = abs
	if f.assetsDir == "" {
		f.assetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if f.assetsDir == "" {
		f.assetsDir = filepath.Join(binDir, "k8s")
	}
	if _, _, err := localenv.Assets(f.assetsDir); err != nil {
		return err
	}
	if f.manager.envoyBinary == "" {
		if f.manager.envoyBinary, err = findEnvoy(binDir); err != nil {
			return err
		}
	}
	if f.manager.workDir == "" {
		f.manager.workDir = localenv.Layout{Root: f.dataDir}.Envoy()
	}
	f.holdPorts()
	return nil
}

// holdPorts tells the manager the loopback ports of the processes beside it: the
// control plane's, which no Gateway listener may take and no destination may be, and
// the demo API's, which no listener may take (its Backend is the demo's destination).
func (f *localFlags) holdPorts() {
	f.manager.controlPlanePorts = map[uint32]string{
		uint32(f.apiServerPort): "kube-apiserver of portcullis local (--apiserver-port)",
		uint32(f.etcdPort):      "etcd of portcullis local (--etcd-port)",
		uint32(f.etcdPeerPort):  "etcd of portcullis local (--etcd-peer-port)",
	}
	f.manager.heldPorts = maps.Clone(f.manager.controlPlanePorts)
	if f.demo {
		f.manager.heldPorts[demo.APIPort] = "the demo API of portcullis local --demo"
	}
}

// defaultDataDir is tmp/local of the checkout when the binary is its bin/portcullis
// (tmp/ is git-ignored), else a directory in the user's cache.
func defaultDataDir(binDir string) string {
	if filepath.Base(binDir) == "bin" {
		return filepath.Join(filepath.Dir(binDir), "tmp", "local")
	}
	if cache, err := os.UserCacheDir(); err == nil {
		return filepath.Join(cache, "portcullis", "local")
	}
	return filepath.Join(os.TempDir(), "portcullis-local")
}

// findEnvoy looks beside the binary (bin/envoy-<version>), then on PATH.
func findEnvoy(binDir string) (string, error) {
	beside := filepath.Join(binDir, "envoy-"+EnvoyVersion)
	if info, err := os.Stat(beside); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
		return beside, nil
	}
	if p, err := exec.LookPath("envoy"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no Envoy binary at %s or on PATH (envoy): run 'make tools' (or pass --envoy-binary PATH)", beside)
}

// runLocal runs the control plane, the manager and Envoy on this machine until
// interrupted, then stops all of it.
func runLocal(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := registerLocalFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "portcullis local: unexpected argument %q (it takes flags only)\n", fs.Arg(0))
		return 2
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "portcullis local: %v\n", err)
		return 2
	}
	if err := f.resolve(executable()); err != nil {
		fmt.Fprintf(stderr, "portcullis local: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the default action returns: a second Ctrl-C ends the
	// process at once, and the kernel still stops every child (Pdeathsig).
	go func() { <-ctx.Done(); stop() }()
	if err := runSession(ctx, f, stdout); err != nil {
		fmt.Fprintf(stderr, "portcullis local: %v\n", err)
		return 1
	}
	return 0
}

// executable is the path of the running binary, symlinks resolved.
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return "portcullis"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		return real
	}
	return exe
}
