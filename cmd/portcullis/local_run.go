package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/portcullis-io/portcullis/config"
	"github.com/portcullis-io/portcullis/internal/localenv"
	"github.com/portcullis-io/portcullis/internal/localenv/demo"
)

// managerStopTimeout bounds the wait for the manager (and its Envoys) to stop.
const managerStopTimeout = 60 * time.Second

// runSession starts everything in order, prints what to type next, and on ctx's end
// (Ctrl-C) stops everything in reverse order. A component that fails on its own ends
// the session with its error.
func runSession(ctx context.Context, f *localFlags, stdout io.Writer) (err error) {
	out := newPrinter(stdout)
	// The data directory first: a second run stops here, naming the first, before
	// anything (the demo included) tries the ports the first one holds.
	dir, err := localenv.OpenDataDir(f.dataDir, f.reset)
	if err != nil {
		return err
	}
	defer dir.Close()
	out.linef("data directory %s (etcd data is kept between runs; --reset starts from empty)", f.dataDir)
	var d *demo.Demo
	if f.demo {
		if d, err = startDemo(f, out); err != nil {
			return err
		}
		defer d.Close()
	}
	cp, err := localenv.Start(ctx, localenv.Options{DataDir: f.dataDir, AssetsDir: f.assetsDir, APIServerPort: f.apiServerPort,
		EtcdPort: f.etcdPort, EtcdPeerPort: f.etcdPeerPort, StartTimeout: f.startTimeout, Dir: dir})
	if err != nil {
		if ctx.Err() != nil {
			out.linef("stopped while starting")
		}
		return stoppedOrFailed(ctx, err)
	}
	defer func() {
		err = errors.Join(err, cp.Stop())
		if err == nil {
			out.linef("stopped: etcd, kube-apiserver, the manager and every Envoy")
		}
	}()
	out.linef("etcd on 127.0.0.1:%d, kube-apiserver on %s (logs in %s)", f.etcdPort, cp.Server, cp.Dir.Logs())
	c, err := client.New(cp.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	n, err := localenv.InstallCRDs(ctx, c, config.CRDs, config.CRDDirs, f.startTimeout)
	if err != nil {
		return stoppedOrFailed(ctx, fmt.Errorf("installing the CRDs: %w", err))
	}
	out.linef("installed %d CRDs (Gateway API standard channel and Portcullis)", n)
	return runManaged(ctx, f, cp, c, d, out)
}

// runManaged runs the manager and, while it runs, the demo setup, the Gateway address
// printer and the wait for Ctrl-C.
func runManaged(ctx context.Context, f *localFlags, cp *localenv.ControlPlane, c client.Client, d *demo.Demo, out printer) error {
	logFile, err := os.OpenFile(cp.Dir.Log("manager"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), zap.WriteTo(logFile)))
	runCtx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	mgrCtx, stopManager := context.WithCancel(context.Background())
	m := &managerRun{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = startManagerWithConfig(mgrCtx, cp.Config, f.manager, ctrl.Log.WithName("manager"))
	}()
	go watchFailures(runCtx, fail, m, cp.Exited())
	out.linef("manager running: provider host, xDS on 127.0.0.1:%d, Envoy work directory %s, log %s", f.manager.xdsPort, f.manager.workDir, cp.Dir.Log("manager"))
	gateways := newGatewayPrinter(c, out, f.manager.workDir)
	go gateways.run(runCtx)
	err = readyThenWait(runCtx, f, cp, d, gateways, out)
	if ctx.Err() != nil {
		out.linef("stopping (a second Ctrl-C kills everything at once)")
	} else if runCtx.Err() != nil {
		err = context.Cause(runCtx) // a component failed; any error here followed from it
	}
	stopManager()
	return errors.Join(stoppedOrFailed(ctx, err), m.wait())
}

// managerRun is the manager running in-process.
type managerRun struct {
	done chan struct{}
	err  error
}

// wait waits for the manager, which stops its Envoys before returning. Its own error
// was reported already when it stopped on its own.
func (m *managerRun) wait() error {
	select {
	case <-m.done:
		return nil
	case <-time.After(managerStopTimeout):
		return fmt.Errorf("the manager did not stop within %s", managerStopTimeout)
	}
}

// readyThenWait sets the demo up (if any), prints the instructions and waits for the
// end of the session: nil after Ctrl-C, the cause when a component failed.
func readyThenWait(ctx context.Context, f *localFlags, cp *localenv.ControlPlane, d *demo.Demo, gateways *gatewayPrinter, out printer) error {
	if d != nil {
		if err := setUpDemo(ctx, gateways.c, d, f.startTimeout, out); err != nil {
			return err
		}
		gateways.poll(ctx) // the demo Gateway's address before "Ready"
	}
	out.block(readyText(cp.Dir.Kubeconfig(), d != nil))
	<-ctx.Done()
	return context.Cause(ctx)
}

// watchFailures ends the session when the manager or the control plane stops on its own.
func watchFailures(ctx context.Context, fail context.CancelCauseFunc, m *managerRun, cpExited <-chan error) {
	select {
	case <-ctx.Done():
	case <-m.done:
		if m.err == nil {
			fail(errors.New("the manager stopped on its own"))
		} else {
			fail(fmt.Errorf("the manager stopped: %w", m.err))
		}
	case err := <-cpExited:
		fail(err)
	}
}

// stoppedOrFailed turns an error into a clean stop when Ctrl-C came first: whatever
// failed then failed because of the interruption.
func stoppedOrFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
