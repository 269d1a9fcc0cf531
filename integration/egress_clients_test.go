package integration

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
)

// The clients an agent installs dependencies with, in airlock/debian, through
// the allow-list proxy: curl, pip from a simple index (PEP 503), git over
// smart HTTP. They find the proxy through the variables the sandbox is given,
// as they would find a corporate one; the origins are the test's own, on the
// host's loopback, named through the test's resolver (egressExecutor). No
// traffic leaves the machine.
//
// Python's requests is not in the image (Debian packages it, but an agent
// gets it from PyPI): pip, which carries its own copy of requests and
// urllib3, stands for it here, and urllib is in TestEgressAllowList.

// clientsSpec is a run in airlock/debian that may reach hosts, with the
// test's authority at /tmp/ca.pem before command runs.
func clientsSpec(ca, command string, hosts ...string) executor.Spec {
	return executor.Spec{Image: "airlock/debian", Egress: hosts, Timeout: 180, TmpfsSize: 256 << 20,
		Env: map[string]string{"CA": ca}, Command: `printf '%s' "$CA" > /tmp/ca.pem && ` + command}
}

// egressEntryAt is the Result's entry for host on port.
func egressEntryAt(res executor.Result, host string, port int) (executor.EgressEntry, bool) {
	for _, en := range res.Egress {
		if en.Host == host && en.Port == port {
			return en, true
		}
	}
	return executor.EgressEntry{}, false
}

// serveTLS serves h over HTTPS on the host's loopback, with testCert's
// certificate, and returns its port and the authority's PEM.
func serveTLS(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	cert, ca := testCert(t)
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.Listener.Addr().(*net.TCPAddr).Port, ca
}

// TestEgressCurl: curl reaches an allowed name over HTTPS (CONNECT) and plain
// HTTP (an absolute URI); a name off the list gets the proxy's 403, which
// curl shows, and exits non-zero; under runc and gVisor.
func TestEgressCurl(t *testing.T) {
	o := startOrigins(t)
	e := egressExecutor(t, nil)
	hp, sp := o.port(o.http), o.port(o.https)
	eachRuntime(t, func(t *testing.T, rt string) {
		spec := clientsSpec(o.ca, fmt.Sprintf(`
curl -sS --cacert /tmp/ca.pem https://pypi.test:%[2]d/x; echo "exit $?"
curl -sS http://pypi.test:%[1]d/x; echo "exit $?"
curl -sS --fail-with-body http://other.test:%[1]d/x; echo "exit $?"
curl -sS --cacert /tmp/ca.pem https://other.test:%[2]d/x; echo "exit $?"`, hp, sp),
			fmt.Sprintf("pypi.test:%d", hp), fmt.Sprintf("pypi.test:%d", sp))
		spec.Runtime = rt
		res := runWith(t, e, spec)
		want := fmt.Sprintf("hello from pypi.test:%d over tls\nexit 0\nhello from pypi.test:%d over plain http\nexit 0\n", sp, hp) +
			fmt.Sprintf("airlock egress proxy: other.test:%d denied: no egress rule of this run allows it", hp)
		if !strings.HasPrefix(res.Stdout, want) || !strings.HasSuffix(res.Stdout, "\nexit 22\nexit 56\n") {
			t.Errorf("stdout %q; want it to start %q and end with exits 22 and 56\nstderr %q", res.Stdout, want, res.Stderr)
		}
		for _, msg := range []string{"returned error: 403", "CONNECT tunnel failed, response 403"} {
			if !strings.Contains(res.Stderr, msg) {
				t.Errorf("stderr %q; want curl to say %q", res.Stderr, msg)
			}
		}
		for _, port := range []int{hp, sp} {
			if en, ok := egressEntryAt(res, "pypi.test", port); !ok || en.Decision != "allowed" || en.Connections < 1 || en.BytesIn == 0 || en.BytesOut == 0 {
				t.Errorf("pypi.test:%d: %+v in %+v; want allowed, with a connection and bytes both ways", port, en, res.Egress)
			}
			if en, ok := egressEntryAt(res, "other.test", port); !ok || en.Decision != "denied" || en.Refused < 1 || en.BytesIn != 0 {
				t.Errorf("other.test:%d: %+v in %+v; want denied, refused, no bytes", port, en, res.Egress)
			}
		}
	})
}

// TestEgressCurlBypass: a client told to ignore the proxy variables finds
// nothing: the sandbox resolves no name and routes nowhere, not even to the
// host's loopback; under runc and gVisor.
func TestEgressCurlBypass(t *testing.T) {
	o := startOrigins(t)
	e := egressExecutor(t, nil)
	sp := o.port(o.https)
	eachRuntime(t, func(t *testing.T, rt string) {
		spec := clientsSpec(o.ca, fmt.Sprintf(`
curl -sS --noproxy '*' --cacert /tmp/ca.pem https://pypi.test:%[1]d/x; echo "exit $?"
curl -sS -k https://127.0.0.1:%[1]d/x; echo "exit $?"`, sp),
			fmt.Sprintf("pypi.test:%d", sp))
		spec.Runtime = rt
		res := runWith(t, e, spec)
		// 6: could not resolve the host; 7: could not connect (NO_PROXY
		// names the loopback, so curl goes direct, to the sandbox's own).
		if res.Stdout != "exit 6\nexit 7\n" || !strings.Contains(res.Stderr, "Could not resolve host: pypi.test") {
			t.Errorf("stdout %q stderr %q; want curl to fail to resolve, then to connect", res.Stdout, res.Stderr)
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.hits != 0 || len(res.Egress) != 0 {
			t.Errorf("the origin got %d requests, the proxy saw %+v; want none", o.hits, res.Egress)
		}
	})
}

// pkgWheel is a pure-Python wheel of pkg 1.0, whose module says value.
func pkgWheel(t *testing.T, value string) []byte {
	t.Helper()
	files := []struct{ name, body string }{
		{"pkg/__init__.py", fmt.Sprintf("VALUE = %q\n", value)},
		// Bytes that do not compress: the wheel is over a MiB, as real ones
		// are, so the download spans many of the relay's stream windows and
		// pip shows its progress bar.
		{"pkg/data.txt", noise(t, 1<<20)},
		{"pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nSummary: airlock's test package\n"},
		{"pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("pkg-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("pkg-1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// noise is n random bytes as hex text.
func noise(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestEgressPip: pip installs a package from a simple index on pypi.test,
// whose wheel lies on files.pypi.test (as pypi.org's lie on
// files.pythonhosted.org), into a virtual environment: Debian's Python is
// externally managed (PEP 668), and refuses installs outside one.
func TestEgressPip(t *testing.T) {
	const whl = "pkg-1.0-py3-none-any.whl"
	wheel := pkgWheel(t, "installed through airlock's proxy")
	sum := sha256.Sum256(wheel)
	var mu sync.Mutex
	got := map[string]int{}
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Host+r.URL.Path]++
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.Host, "pypi.test:") && r.URL.Path == "/simple/pkg/":
			// pip checks the wheel against the fragment's digest.
			fmt.Fprintf(w, "<!DOCTYPE html>\n<html><body><a href=\"https://files.%s/packages/%s#sha256=%s\">%s</a></body></html>\n",
				r.Host, whl, hex.EncodeToString(sum[:]), whl)
		case strings.HasPrefix(r.Host, "files.pypi.test:") && r.URL.Path == "/packages/"+whl:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	}))
	e := egressExecutor(t, nil)
	index := fmt.Sprintf("https://pypi.test:%d/simple/", port)
	eachRuntime(t, func(t *testing.T, rt string) {
		mu.Lock()
		clear(got)
		mu.Unlock()
		spec := clientsSpec(ca, fmt.Sprintf(`
python3 -m pip install --index-url %[1]s pkg 2>&1 | grep -q externally-managed-environment && echo "system: refused"
python3 -m venv --system-site-packages /tmp/v &&
/tmp/v/bin/pip install --disable-pip-version-check --no-cache-dir --cert /tmp/ca.pem --index-url %[1]s pkg &&
/tmp/v/bin/python -c 'import pkg, pytest; print(pkg.VALUE)'`, index),
			fmt.Sprintf("pypi.test:%d", port), fmt.Sprintf("*.pypi.test:%d", port))
		spec.Runtime = rt
		res := runWith(t, e, spec)
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Successfully installed pkg-1.0") ||
			!strings.HasPrefix(res.Stdout, "system: refused\n") || !strings.HasSuffix(res.Stdout, "\ninstalled through airlock's proxy\n") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		mu.Lock()
		if got[fmt.Sprintf("pypi.test:%d/simple/pkg/", port)] < 1 || got[fmt.Sprintf("files.pypi.test:%d/packages/%s", port, whl)] != 1 {
			t.Errorf("the index served %v; want the project page and the wheel once", got)
		}
		mu.Unlock()
		for _, host := range []string{"pypi.test", "files.pypi.test"} {
			if en, ok := egressEntryAt(res, host, port); !ok || en.Decision != "allowed" || en.Connections < 1 || en.BytesIn == 0 || en.BytesOut == 0 {
				t.Errorf("%s:%d: %+v in %+v; want allowed, with a connection and bytes both ways", host, port, en, res.Egress)
			}
		}
		if en, _ := egressEntryAt(res, "files.pypi.test", port); en.BytesIn < int64(len(wheel)) {
			t.Errorf("files.pypi.test sent %d bytes; the wheel alone is %d", en.BytesIn, len(wheel))
		}
	})
}

// gitRepo makes a bare repository, root/repo.git, with one commit holding
// README, using the host's git.
func gitRepo(t *testing.T, readme string) (root string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "srv")
	work := filepath.Join(dir, "work")
	gitCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		// The host's and the user's configuration play no part.
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitCmd("-c", "init.defaultBranch=main", "init", "-q", work)
	if err := os.WriteFile(filepath.Join(work, "README"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd("-C", work, "add", "README")
	gitCmd("-C", work, "-c", "user.name=airlock", "-c", "user.email=dev@airlock", "commit", "-q", "-m", "a file to clone")
	gitCmd("clone", "-q", "--bare", work, filepath.Join(root, "repo.git"))
	return root
}

// TestEgressGitClone: git clones over HTTPS, through CONNECT, from git's own
// smart-HTTP server (git http-backend) on git.test.
func TestEgressGitClone(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test serves a repository with the host's git: %v", err)
	}
	root := gitRepo(t, "hello from git.test\n")
	port, ca := serveTLS(t, &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}})
	e := egressExecutor(t, nil)
	eachRuntime(t, func(t *testing.T, rt string) {
		spec := clientsSpec(ca, fmt.Sprintf(
			`GIT_SSL_CAINFO=/tmp/ca.pem git clone -q https://git.test:%d/repo.git /tmp/repo && cat /tmp/repo/README && git -C /tmp/repo log --format=%%s`, port),
			fmt.Sprintf("git.test:%d", port))
		spec.Runtime = rt
		res := runWith(t, e, spec)
		if res.ExitCode != 0 || res.Stdout != "hello from git.test\na file to clone\n" {
			t.Fatalf("exit %d\nstdout %q\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if en, ok := egressEntryAt(res, "git.test", port); !ok || en.Decision != "allowed" || en.Connections < 1 || en.BytesIn == 0 || en.BytesOut == 0 {
			t.Errorf("git.test:%d: %+v in %+v; want allowed, with a connection and bytes both ways", port, en, res.Egress)
		}
	})
}

// aptRepo is a flat apt repository of one package, airlock-hello, whose one
// file says hello: built with the host's dpkg-deb, unsigned (the sandbox
// trusts it by its sources line).
func aptRepo(t *testing.T) http.Handler {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "pkg")
	for name, text := range map[string]string{
		"DEBIAN/control":                    "Package: airlock-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: airlock <test@airlock.test>\nDescription: fetched through airlock's proxy\n",
		"usr/share/airlock-hello/hello.txt": "fetched by apt through airlock's proxy\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(dir, "airlock-hello_1.0_all.deb")
	if out, err := exec.Command("dpkg-deb", "--build", "--root-owner-group", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v: %s", err, out)
	}
	debBytes, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	debSum := sha256.Sum256(debBytes)
	packages := fmt.Sprintf("Package: airlock-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: airlock <test@airlock.test>\n"+
		"Filename: ./airlock-hello_1.0_all.deb\nSize: %d\nSHA256: %s\nDescription: fetched through airlock's proxy\n\n", len(debBytes), hex.EncodeToString(debSum[:]))
	pkgSum := sha256.Sum256([]byte(packages))
	release := fmt.Sprintf("Origin: airlock-test\nLabel: airlock-test\nSuite: stable\nCodename: stable\nDate: Thu, 01 Jan 2026 00:00:00 UTC\nArchitectures: all amd64\nSHA256:\n %s %d Packages\n",
		hex.EncodeToString(pkgSum[:]), len(packages))
	files := map[string][]byte{"/Release": []byte(release), "/Packages": []byte(packages), "/airlock-hello_1.0_all.deb": debBytes}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[path.Clean(r.URL.Path)] // apt asks for /./Packages
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})
}

// TestEgressApt: apt, which sends absolute URIs to the proxy of http_proxy,
// updates from the test's repository and downloads its package, as the
// sandbox's user (its own lists and cache under /tmp). Under runc only: the
// gVisor Debian ships (release 20221219) answers every statx(2) of this
// image's coreutils and apt with EINVAL, network or not (`docker run
// --runtime runsc airlock/debian stat /usr/lib` fails the same way).
func TestEgressApt(t *testing.T) {
	s := httptest.NewServer(aptRepo(t))
	t.Cleanup(s.Close)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	e := egressExecutor(t, nil)
	t.Run("runc", func(t *testing.T) {
		rt := "runc"
		spec := clientsSpec("", fmt.Sprintf(`
mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial /tmp/dl &&
echo "deb [trusted=yes] http://apt.test:%d/ ./" > /tmp/apt/sources.list &&
set -- -o Dir::Etc::SourceList=/tmp/apt/sources.list -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::State::Lists=/tmp/apt/lists -o Dir::Cache=/tmp/apt/cache -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)" &&
apt-get -q "$@" update && cd /tmp/dl && apt-get -q "$@" download airlock-hello &&
dpkg-deb -x airlock-hello_1.0_all.deb /tmp/x && cat /tmp/x/usr/share/airlock-hello/hello.txt`, port),
			fmt.Sprintf("apt.test:%d", port))
		spec.Runtime = rt
		res := runWith(t, e, spec)
		if res.ExitCode != 0 || !strings.HasSuffix(res.Stdout, "fetched by apt through airlock's proxy\n") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if en, ok := egressEntryAt(res, "apt.test", port); !ok || en.Decision != "allowed" || en.BytesIn < 500 {
			t.Errorf("apt.test:%d: %+v in %+v; want allowed, with the repository's bytes", port, en, res.Egress)
		}
	})
}

// fetcherSource is a Go program that prints what a URL answers, through
// net/http's default client: the proxy comes from the environment.
const fetcherSource = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, body)
}
`

// TestEgressGoClient: a Go program (net/http, which reads HTTPS_PROXY and
// SSL_CERT_FILE) reaches an allowed name over HTTPS and gets the proxy's 403
// for another; the program is built on the host and put in a workspace;
// under runc and gVisor.
func TestEgressGoClient(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module fetcher\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(fetcherSource), 0o644)
	build := exec.Command("go", "build", "-o", "fetcher", ".")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(src, "fetcher"))
	if err != nil {
		t.Fatal(err)
	}
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	e := egressExecutor(t, nil)
	ctx := t.Context()
	w, err := e.CreateWorkspace(ctx, executor.WorkspaceSpec{}, executor.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.RemoveWorkspace(context.Background(), w.ID, executor.Caller{}) })
	if err := e.PutFile(ctx, w.ID, "fetcher", 0o755, bytes.NewReader(bin), executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	eachRuntime(t, func(t *testing.T, rt string) {
		res := runWith(t, e, executor.Spec{Runtime: rt, Workspace: w.ID, Timeout: 60, Egress: []string{fmt.Sprintf("pypi.test:%d", port)},
			Env:     map[string]string{"CA": ca, "SSL_CERT_FILE": "/tmp/ca.pem"},
			Command: fmt.Sprintf(`printf '%%s' "$CA" > /tmp/ca.pem && ./fetcher https://pypi.test:%[1]d/ && echo && ./fetcher https://other.test:%[1]d/`, port)})
		want := fmt.Sprintf("200 hello from pypi.test:%d\n", port)
		if !strings.HasPrefix(res.Stdout, want) || !strings.Contains(res.Stdout, "Forbidden") || res.ExitCode != 1 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if en, ok := egressEntryAt(res, "other.test", port); !ok || en.Decision != "denied" {
			t.Errorf("other.test:%d: %+v in %+v; want denied", port, en, res.Egress)
		}
	})
}
