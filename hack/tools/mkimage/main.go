// Command mkimage writes a single-layer container image made of files from this machine
// as a docker-archive tarball, which `ctr images import` reads. The single-node cluster
// has no registry: every image it runs is written this way (make cluster-images).
//
//	mkimage -o envoy.tar -tag envoyproxy/envoy:v1.40.0 -entrypoint envoy \
//	  -file bin/envoy-1.40.0=/usr/local/bin/envoy -file /lib/x86_64-linux-gnu/libc.so.6=/lib/x86_64-linux-gnu/libc.so.6
//
// Files are copied with their mode, owned by root, dated at the Unix epoch, so the same
// inputs give the same image ID and importing it again changes nothing.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

type options struct {
	out, entrypoint, user, workdir string
	tags, cmd, env, files, dirs    list
}

func main() {
	var o options
	flag.StringVar(&o.out, "o", "", "output tarball (docker-archive)")
	flag.Var(&o.tags, "tag", "image reference, e.g. registry.k8s.io/pause:3.10 (repeatable)")
	flag.StringVar(&o.entrypoint, "entrypoint", "", "entrypoint (one word)")
	flag.Var(&o.cmd, "cmd", "command argument (repeatable)")
	flag.StringVar(&o.user, "user", "", "user, e.g. 65532:65532")
	flag.StringVar(&o.workdir, "workdir", "", "working directory")
	flag.Var(&o.env, "env", "KEY=VALUE (repeatable; PATH has a default)")
	flag.Var(&o.files, "file", "SRC=DST: copy the host file SRC (symlinks followed) to DST (repeatable)")
	flag.Var(&o.dirs, "dir", "DST[:MODE]: an empty directory, e.g. /tmp:1777 (repeatable)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.out == "" || len(o.tags) == 0 {
		return fmt.Errorf("-o and at least one -tag are required")
	}
	layerTar, err := buildLayer(o.files, o.dirs)
	if err != nil {
		return err
	}
	img, err := buildImage(o, layerTar)
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range o.tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		refs[ref] = img
	}
	tmp := o.out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return err
	}
	return os.Rename(tmp, o.out)
}

func buildImage(o options, layerTar []byte) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, o.env...)
	if o.entrypoint != "" {
		cf.Config.Entrypoint = []string{o.entrypoint}
	}
	cf.Config.Cmd = o.cmd
	cf.Config.User = o.user
	cf.Config.WorkingDir = o.workdir
	return mutate.ConfigFile(img, cf)
}

// buildLayer returns an uncompressed tar of the files and directories, parents first.
func buildLayer(files, dirs list) ([]byte, error) {
	entries := map[string]*tar.Header{}
	content := map[string]string{} // tar path -> host source
	addParents := func(p string) {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := entries[d[1:]+"/"]; !ok {
				entries[d[1:]+"/"] = dirHeader(d[1:]+"/", 0o755)
			}
		}
	}
	for _, d := range dirs {
		dst, mode := d, int64(0o755)
		if i := strings.LastIndex(d, ":"); i > 0 {
			if _, err := fmt.Sscanf(d[i+1:], "%o", &mode); err != nil {
				return nil, fmt.Errorf("-dir %q: mode: %w", d, err)
			}
			dst = d[:i]
		}
		if !path.IsAbs(dst) {
			return nil, fmt.Errorf("-dir %q: destination must be absolute", d)
		}
		addParents(dst + "/x")
		entries[dst[1:]+"/"] = dirHeader(dst[1:]+"/", mode)
	}
	for _, f := range files {
		src, dst, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dst) {
			return nil, fmt.Errorf("-file %q: want SRC=/absolute/DST", f)
		}
		fi, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("-file %q: %s is not a regular file", f, src)
		}
		addParents(dst)
		entries[dst[1:]] = &tar.Header{Typeflag: tar.TypeReg, Name: dst[1:], Mode: int64(fi.Mode().Perm()),
			Size: fi.Size(), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		content[dst[1:]] = src
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names) // a directory "a/" sorts before its children "a/…"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(entries[n]); err != nil {
			return nil, err
		}
		if src, ok := content[n]; ok {
			if err := copyFile(tw, src); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func dirHeader(name string, mode int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
}

func copyFile(w io.Writer, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
