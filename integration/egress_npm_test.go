package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// npmTarball is the tarball of an npm package, pkg 1.0.0, whose main module
// exports value; a MiB of noise makes its download span many reads.
func npmTarball(t *testing.T, value string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name": "pkg", "version": "1.0.0", "main": "index.js"}`},
		{"package/index.js", fmt.Sprintf("module.exports = %q;\n", value)},
		{"package/data.txt", noise(t, 1<<20)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEgressNpm: npm installs a package from a registry the test serves over
// HTTPS (its metadata on registry.test, its tarball on files.registry.test),
// finding airlock's proxy through the variables the sandbox is given, and
// checking the tarball against the integrity the registry states. Node.js
// runs it. Under runc only: under the gVisor Debian ships (20221219)
// Node.js aborts at its start, its first thread not created (`docker run
// --runtime runsc airlock/debian node -e 1` fails the same way).
func TestEgressNpm(t *testing.T) {
	tarball := npmTarball(t, "installed by npm through airlock's proxy")
	sha := sha512.Sum512(tarball)
	sha1sum := sha1.Sum(tarball)
	var mu sync.Mutex
	got := map[string]int{}
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Host+r.URL.Path]++
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.Host, "registry.test:") && r.URL.Path == "/pkg":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"name": "pkg", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{
					"name": "pkg", "version": "1.0.0", "main": "index.js",
					"dist": map[string]string{
						"tarball":   fmt.Sprintf("https://files.%s/pkg/-/pkg-1.0.0.tgz", r.Host),
						"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha[:]),
						"shasum":    hex.EncodeToString(sha1sum[:]),
					},
				}},
			})
		case strings.HasPrefix(r.Host, "files.registry.test:") && r.URL.Path == "/pkg/-/pkg-1.0.0.tgz":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tarball)
		default:
			http.NotFound(w, r)
		}
	}))
	e := egressExecutor(t, nil)
	spec := clientsSpec(ca, fmt.Sprintf(`export HOME=/tmp && mkdir /tmp/app && cd /tmp/app &&
npm install --no-audit --no-fund --no-update-notifier --cafile /tmp/ca.pem --registry https://registry.test:%d/ pkg &&
node -e 'console.log(require("pkg"))'`, port),
		fmt.Sprintf("registry.test:%d", port), fmt.Sprintf("*.registry.test:%d", port))
	spec.Runtime = "runc"
	res := runWith(t, e, spec)
	if res.ExitCode != 0 || !strings.HasSuffix(res.Stdout, "\ninstalled by npm through airlock's proxy\n") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	mu.Lock()
	if got[fmt.Sprintf("registry.test:%d/pkg", port)] < 1 || got[fmt.Sprintf("files.registry.test:%d/pkg/-/pkg-1.0.0.tgz", port)] != 1 {
		t.Errorf("the registry served %v; want the package's metadata and its tarball once", got)
	}
	mu.Unlock()
	for _, host := range []string{"registry.test", "files.registry.test"} {
		if en, ok := egressEntryAt(res, host, port); !ok || en.Decision != "allowed" || en.Connections < 1 || en.BytesIn == 0 || en.BytesOut == 0 {
			t.Errorf("%s:%d: %+v in %+v; want allowed, with a connection and bytes both ways", host, port, en, res.Egress)
		}
	}
	if en, _ := egressEntryAt(res, "files.registry.test", port); en.BytesIn < int64(len(tarball)) {
		t.Errorf("files.registry.test sent %d bytes; the tarball alone is %d", en.BytesIn, len(tarball))
	}
}
