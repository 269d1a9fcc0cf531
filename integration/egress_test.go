package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"golang.org/x/sys/unix"
)

// Network by allow-list, end to end: origins the test serves on the host's
// loopback, named through a resolver the test injects, reached from sandboxes
// only through airlock's proxy. No traffic leaves the machine.

// names is the test's DNS: every name it knows resolves to one address.
type names map[string]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// origins are an HTTP and an HTTPS server on the host's loopback; ca is the
// PEM of the authority that signed the HTTPS server's certificate for
// pypi.test, and hits counts the requests each got.
type origins struct {
	http, https *httptest.Server
	ca          string
	mu          sync.Mutex
	hits        int
	gone        []time.Time // when the clients of /hang went
}

// await reports whether cond, read under the origins' lock, came true within d.
func (o *origins) await(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		o.mu.Lock()
		ok := cond()
		o.mu.Unlock()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (o *origins) port(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }

func startOrigins(t *testing.T) *origins {
	t.Helper()
	o := &origins{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits++
		o.mu.Unlock()
		switch r.URL.Path {
		case "/big":
			w.Write(make([]byte, 8<<20))
			return
		case "/slow": // answers after a while
			time.Sleep(3 * time.Second)
		case "/hang": // answers never; says when its client went
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			o.mu.Lock()
			o.gone = append(o.gone, time.Now())
			o.mu.Unlock()
			return
		}
		fmt.Fprintf(w, "hello from %s over %s\n", r.Host, map[bool]string{true: "tls", false: "plain http"}[r.TLS != nil])
	})
	o.http = httptest.NewServer(handler)
	t.Cleanup(o.http.Close)
	cert, ca := testCert(t)
	o.https = httptest.NewUnstartedServer(handler)
	o.https.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	o.https.StartTLS()
	t.Cleanup(o.https.Close)
	o.ca = ca
	return o
}

// testCert is a certificate for the test's names, and the PEM of the
// authority that signed it, which the sandbox is given to trust.
func testCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "airlock test CA"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "pypi.test"}, DNSNames: []string{"pypi.test", "files.pypi.test", "git.test", "api.test", "other.test", "registry.test", "files.registry.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
}

// egressExecutor is an executor whose proxy resolves the test's names, with
// the loopback opened for the test's origins only.
func egressExecutor(t *testing.T, configure func(*executor.EgressConfig)) *executor.Executor {
	t.Helper()
	return egressExecutorIn(t, t.TempDir(), configure)
}

// egressExecutorIn is egressExecutor on the data dir dir.
func egressExecutorIn(t *testing.T, dir string, configure func(*executor.EgressConfig)) *executor.Executor {
	t.Helper()
	cfg := executor.DefaultConfig()
	cfg.DataDir = dir
	cfg.Egress.Resolver = names{
		"pypi.test": netip.MustParseAddr("127.0.0.1"), "files.pypi.test": netip.MustParseAddr("127.0.0.1"),
		"other.test": netip.MustParseAddr("127.0.0.1"), "git.test": netip.MustParseAddr("127.0.0.1"), "api.test": netip.MustParseAddr("127.0.0.1"), "private.test": netip.MustParseAddr("10.1.2.3"),
		"metadata.test": netip.MustParseAddr("169.254.169.254"), "apt.test": netip.MustParseAddr("127.0.0.1"),
		"registry.test": netip.MustParseAddr("127.0.0.1"), "files.registry.test": netip.MustParseAddr("127.0.0.1"),
	}
	cfg.Egress.AllowCIDRs = []string{"127.0.0.0/8"}
	if configure != nil {
		configure(&cfg.Egress)
	}
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func egressEntry(res executor.Result, host string) (executor.EgressEntry, bool) {
	for _, en := range res.Egress {
		if en.Host == host {
			return en, true
		}
	}
	return executor.EgressEntry{}, false
}

// TestEgressAllowList: an allowed name is reached over plain HTTP (busybox
// wget) and HTTPS (Python's urllib, through CONNECT); a name off the list
// gets the proxy's refusal and a denied entry; raw TCP and DNS find nothing;
// under runc and gVisor.
func TestEgressAllowList(t *testing.T) {
	o := startOrigins(t)
	e := egressExecutor(t, nil)
	hp, sp := o.port(o.http), o.port(o.https)
	eachRuntime(t, func(t *testing.T, rt string) {
		ctx := t.Context()
		res, err := e.Run(ctx, executor.Spec{Runtime: rt, Egress: []string{fmt.Sprintf("pypi.test:%d", hp)}, Timeout: 60,
			Command: fmt.Sprintf(`wget -q -O - http://pypi.test:%d/simple/; echo "exit $?"; wget -q -O - http://other.test:%d/ 2>&1; echo "exit $?"`, hp, hp)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.Stdout, fmt.Sprintf("hello from pypi.test:%d over plain http\nexit 0\n", hp)) || strings.Contains(res.Stdout, "hello from other") {
			t.Errorf("plain HTTP: stdout %q stderr %q", res.Stdout, res.Stderr)
		}
		if en, ok := egressEntry(res, "pypi.test"); !ok || en.Decision != "allowed" || en.Connections < 1 || en.BytesIn == 0 || en.BytesOut == 0 {
			t.Errorf("the allowed host's entry: %+v in %+v", en, res.Egress)
		}
		if en, ok := egressEntry(res, "other.test"); !ok || en.Decision != "denied" || en.Reason == "" || en.BytesIn != 0 {
			t.Errorf("the denied host's entry: %+v in %+v", en, res.Egress)
		}

		// Everything that is not the proxy fails closed.
		res, err = e.Run(ctx, executor.Spec{Runtime: rt, Egress: []string{fmt.Sprintf("pypi.test:%d", hp)}, Timeout: 60,
			Command: fmt.Sprintf(`nc -w 2 127.0.0.1 %d </dev/null && echo tcp-host; nc -w 2 1.1.1.1 80 </dev/null && echo tcp-out; nslookup pypi.test 2>/dev/null | grep -q 127.0.0.1 && echo dns; echo done`, hp)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout != "done\n" {
			t.Errorf("raw TCP or DNS got out: %q", res.Stdout)
		}
	})
	// HTTPS through CONNECT, with the test's authority trusted in the sandbox.
	res, err := e.Run(t.Context(), executor.Spec{Image: "airlock/debian", Egress: []string{"pypi.test", fmt.Sprintf("*.pypi.test:%d", sp), fmt.Sprintf("pypi.test:%d", sp)}, Timeout: 120,
		Env: map[string]string{"CA": o.ca},
		Command: fmt.Sprintf(`printf '%%s' "$CA" > /tmp/ca.pem && SSL_CERT_FILE=/tmp/ca.pem python3 -c '
import urllib.request
for host in ("pypi.test", "files.pypi.test"):
    print(urllib.request.urlopen("https://%%s:%d/x" %% host, timeout=20).read().decode(), end="")
'`, sp)})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("hello from pypi.test:%d over tls\nhello from files.pypi.test:%d over tls\n", sp, sp)
	if res.ExitCode != 0 || res.Stdout != want {
		t.Errorf("HTTPS: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// TestEgressRefusals: names resolving to private, loopback or metadata
// addresses, IP literals and ports off the list are refused by the proxy,
// whatever the list says, unless the operator opened the range.
func TestEgressRefusals(t *testing.T) {
	o := startOrigins(t)
	hp := o.port(o.http)
	e := egressExecutor(t, func(c *executor.EgressConfig) { c.AllowCIDRs = nil })
	res, err := e.Run(t.Context(), executor.Spec{Timeout: 60,
		Egress:  []string{fmt.Sprintf("pypi.test:%d", hp), "private.test", "metadata.test"},
		Command: fmt.Sprintf(`for u in http://pypi.test:%d/ http://private.test/ http://metadata.test/latest/meta-data/ http://127.0.0.1:%d/ http://pypi.test:1/; do wget -q -O - $u >/dev/null 2>&1 && echo "reached $u"; done; echo done`, hp, hp)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "done\n" {
		t.Errorf("refused addresses were reached: %q", res.Stdout)
	}
	for _, host := range []string{"pypi.test", "private.test", "metadata.test", "127.0.0.1"} {
		if en, ok := egressEntry(res, host); !ok || en.Decision != "denied" || en.Refused == 0 {
			t.Errorf("%s: %+v; want a denied entry (egress %+v, stderr %q)", host, en, res.Egress, res.Stderr)
		}
	}
	if o.hits != 0 {
		t.Errorf("the origin on the loopback got %d requests through the proxy", o.hits)
	}
	for _, en := range res.Egress {
		if en.Decision != "denied" {
			t.Errorf("entry %+v; want every one denied", en)
		}
	}
}

// TestEgressGate: egress is checked before anything starts.
func TestEgressGate(t *testing.T) {
	e := egressExecutor(t, func(c *executor.EgressConfig) { c.Allowed = []string{"*.pythonhosted.org", "pypi.org"} })
	for _, tc := range []struct {
		spec executor.Spec
		want string
	}{
		{executor.Spec{Command: "true", Egress: []string{"evil.example"}}, "evil.example"},
		{executor.Spec{Command: "true", Egress: []string{"pypi.org", "http://x"}}, "http://x"},
		{executor.Spec{Command: "true", Egress: []string{"*.*.org"}}, "*.*.org"},
		{executor.Spec{Command: "true", Egress: []string{"pypi.org"}, Network: "bridge"}, "network"},
	} {
		_, err := e.Run(t.Context(), tc.spec)
		var se *executor.SpecError
		if !errors.As(err, &se) || se.Field != "egress" && se.Field != "network" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want a refusal of egress naming %q", tc.spec.Egress, err, tc.want)
		}
	}
	if _, err := e.Run(t.Context(), executor.Spec{Command: "true", Egress: []string{"files.pythonhosted.org:443"}}); err != nil {
		t.Errorf("a host within the bounds: %v", err)
	}
}

// TestEgressJob: a background job reaches its hosts too; its record says
// what its connections did; they end when the job does.
func TestEgressJob(t *testing.T) {
	o := startOrigins(t)
	e := egressExecutor(t, nil)
	hp := o.port(o.http)
	ctx := t.Context()
	p, err := e.Start(ctx, executor.Spec{Egress: []string{fmt.Sprintf("pypi.test:%d", hp)}, Background: true, Timeout: 60,
		Command: fmt.Sprintf(`wget -q -O - http://pypi.test:%d/job; wget -q -O - http://other.test:%d/ 2>/dev/null || echo refused`, hp, hp)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Remove(context.WithoutCancel(ctx), p.ID) })
	logs, err := e.Logs(ctx, p.ID, executor.LogsOptions{Stream: "stdout"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(logs.Stdout) != fmt.Sprintf("hello from pypi.test:%d over plain http\nrefused\n", hp) {
		t.Errorf("job: exit %d stdout %q", res.ExitCode, logs.Stdout)
	}
	if en, ok := egressEntry(res, "pypi.test"); !ok || en.Decision != "allowed" || en.BytesIn == 0 {
		t.Errorf("the job's egress: %+v", res.Egress)
	}
	if en, ok := egressEntry(res, "other.test"); !ok || en.Decision != "denied" {
		t.Errorf("the job's egress: %+v", res.Egress)
	}
}

// TestEgressCaps: a download past the run's byte cap is cut and reported; a
// flood of connections stops at the connection cap; every connection dies
// when its run ends, times out or is killed; runs with different lists never
// use each other's.
func TestEgressCaps(t *testing.T) {
	o := startOrigins(t)
	hp := o.port(o.http)
	allow := []string{fmt.Sprintf("pypi.test:%d", hp)}
	e := egressExecutor(t, func(c *executor.EgressConfig) { c.MaxBytesIn, c.MaxConns = 1<<20, 3 })
	ctx := t.Context()

	res, err := e.Run(ctx, executor.Spec{Egress: allow, Timeout: 60,
		Command: fmt.Sprintf(`wget -q -O - http://pypi.test:%d/big | wc -c`, hp)})
	if err != nil {
		t.Fatal(err)
	}
	en, _ := egressEntry(res, "pypi.test")
	got := strings.TrimSpace(res.Stdout)
	if en.BytesIn > 1<<20 || got == "8388608" || !strings.Contains(en.Reason, "cap") && !strings.Contains(en.Reason, "bytes") {
		t.Errorf("a download past the cap: %s bytes arrived, entry %+v", got, en)
	}

	res, err = e.Run(ctx, executor.Spec{Egress: allow, Timeout: 60,
		Command: fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8; do wget -q -O /dev/null http://pypi.test:%d/slow 2>/dev/null & done; wait`, hp)})
	if err != nil {
		t.Fatal(err)
	}
	if en, _ := egressEntry(res, "pypi.test"); en.Connections > 3 || en.Connections == 0 || en.Refused < 5 {
		t.Errorf("eight connections at once with a cap of three: %+v", en)
	}

	// The end of a run, its timeout and its kill (the caller gone) end its
	// connections at once.
	hang := fmt.Sprintf(`wget -q -O /dev/null http://pypi.test:%d/hang`, hp)
	for _, c := range []struct {
		name   string
		spec   executor.Spec
		cancel time.Duration
	}{
		{"end", executor.Spec{Egress: allow, Timeout: 30, Command: hang + " & sleep 1; exit 0"}, 0},
		{"timeout", executor.Spec{Egress: allow, Timeout: 2, Command: hang}, 0},
		{"kill", executor.Spec{Egress: allow, Timeout: 30, Command: hang}, 2 * time.Second},
	} {
		o.mu.Lock()
		before := len(o.gone)
		o.mu.Unlock()
		runCtx := ctx
		if c.cancel > 0 {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithTimeout(ctx, c.cancel)
			defer cancel()
		}
		// A run its caller gave up on is killed, and says so with ctx's error.
		if res, err := e.Run(runCtx, c.spec); c.cancel == 0 && err != nil || c.cancel > 0 && res.State != executor.StateKilled {
			t.Fatalf("%s: %v, state %s", c.name, err, res.State)
		}
		ended := time.Now()
		if !o.await(5*time.Second, func() bool { return len(o.gone) > before }) {
			t.Errorf("%s: the run's connection outlived it by 5 s", c.name)
		}
		t.Logf("%s: the connection ended %v after the run", c.name, time.Since(ended).Round(time.Millisecond))
	}

	// Twenty runs at once, each allowed its own name only: each reaches its
	// own and is refused the next one's.
	many := names{}
	for i := range 20 {
		many[fmt.Sprintf("h%d.test", i)] = netip.MustParseAddr("127.0.0.1")
	}
	iso := egressExecutor(t, func(c *executor.EgressConfig) { c.Resolver = many })
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own, next := fmt.Sprintf("h%d.test", i), fmt.Sprintf("h%d.test", (i+1)%20)
			res, err := iso.Run(ctx, executor.Spec{Egress: []string{fmt.Sprintf("%s:%d", own, hp)}, Timeout: 60,
				Command: fmt.Sprintf(`wget -q -O - http://%s:%d/; wget -q -O - http://%s:%d/ 2>/dev/null || echo refused`, own, hp, next, hp)})
			if err != nil {
				t.Error(err)
				return
			}
			want := fmt.Sprintf("hello from %s:%d over plain http\nrefused\n", own, hp)
			a, _ := egressEntry(res, own)
			b, _ := egressEntry(res, next)
			if res.Stdout != want || a.Decision != "allowed" || b.Decision != "denied" || len(res.Egress) != 2 {
				t.Errorf("run %d: stdout %q egress %+v", i, res.Stdout, res.Egress)
			}
		}()
	}
	wg.Wait()
}

// TestEgressJobAcrossRestart: a job's connections end when its airlock
// process stops (as a server's restart stops it); the job goes on, the next
// process adopts it, and it ends with the entries of its connections so far.
func TestEgressJobAcrossRestart(t *testing.T) {
	o := startOrigins(t)
	hp := o.port(o.http)
	dir := t.TempDir()
	first := egressExecutorIn(t, dir, nil)
	ctx := t.Context()
	p, err := first.Start(ctx, executor.Spec{Egress: []string{fmt.Sprintf("pypi.test:%d", hp)}, Background: true, Timeout: 60,
		Command: fmt.Sprintf(`wget -q -O /dev/null http://pypi.test:%d/hang; echo "wget ended $?"; sleep 2; echo after`, hp)})
	if err != nil {
		t.Fatal(err)
	}
	if !o.await(10*time.Second, func() bool { return o.hits > 0 }) {
		t.Fatal("the job's request never reached the origin")
	}
	first.Close()
	if !o.await(5*time.Second, func() bool { return len(o.gone) > 0 }) {
		t.Fatal("the job's connection outlived its airlock process")
	}
	next := egressExecutorIn(t, dir, nil)
	res, err := next.Wait(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Remove(context.WithoutCancel(ctx), p.ID) })
	logs, _ := next.Logs(ctx, p.ID, executor.LogsOptions{Stream: "stdout"})
	if res.ExitCode != 0 || !strings.HasSuffix(string(logs.Stdout), "after\n") || !strings.HasPrefix(string(logs.Stdout), "wget ended ") {
		t.Errorf("the adopted job: exit %d stdout %q", res.ExitCode, logs.Stdout)
	}
	if en, ok := egressEntry(res, "pypi.test"); !ok || en.Connections != 1 {
		t.Errorf("the job's egress across the restart: %+v", res.Egress)
	}
}

// dialAs connects to the Unix socket at path as the host's user uid would:
// on a thread of its own whose file system user and group are uid, so that
// the kernel checks the path's permissions for that user. The thread ends
// with the call (it is never unlocked), so nothing else runs as uid.
func dialAs(uid int, path string) error {
	// A process of its own, as the user would have: its real, effective and
	// fs ids are uid's and it holds no capability (a thread of this root
	// process with only its fsuid changed keeps CAP_SYS_PTRACE, which opens
	// any /proc/PID/root).
	// The system's python3: another user may traverse none of root's own
	// directories (a pyenv under /root, say).
	cmd := exec.Command("/usr/bin/python3", "-c", `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    print(0)
except OSError as e:
    print(e.errno or 1)`, path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Dir, cmd.Env = "/", []string{"PATH=/usr/bin:/bin", "HOME=/"}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("dial as uid %d: %v", uid, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("dial as uid %d: %q", uid, out)
	}
	if n == 0 {
		return nil
	}
	return unix.Errno(n)
}

// TestEgressRelaySocketIsPrivate: another user of the engine's host, who
// finds a running sandbox's relay socket (its path is in /proc/*/mountinfo),
// is refused when it connects, directly or through the sandbox's root in
// /proc; the sandbox still reaches its hosts through it; under runc and
// gVisor.
func TestEgressRelaySocketIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to dial as another user")
	}
	o := startOrigins(t)
	hp := o.port(o.http)
	socketDir, err := os.MkdirTemp("", "ar")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socketDir) })
	os.Chmod(socketDir, 0o755) // as the default one was made, in /tmp
	e := egressExecutor(t, func(c *executor.EgressConfig) { c.SocketDir = socketDir })
	eachRuntime(t, func(t *testing.T, rt string) {
		type result struct {
			res executor.Result
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := e.Run(t.Context(), executor.Spec{Runtime: rt, Egress: []string{fmt.Sprintf("pypi.test:%d", hp)}, Timeout: 60,
				Command: fmt.Sprintf(`sleep 4; wget -q -O - http://pypi.test:%d/still-works`, hp)})
			done <- result{res, err}
		}()
		var socks []string
		for deadline := time.Now().Add(4 * time.Second); len(socks) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			socks, _ = filepath.Glob(filepath.Join(socketDir, "*", "airlock-*", "egress.sock"))
		}
		if len(socks) == 0 {
			t.Skipf("no relay socket under %s: the relays go over exec streams here", socketDir)
		}
		for _, sock := range socks {
			if err := dialAs(4242, sock); !errors.Is(err, unix.EACCES) {
				t.Errorf("another user of the host dialled %s: %v; want EACCES", sock, err)
			}
			// As the battery found it: the processes whose mounts name the
			// socket's directory, and the socket through their root.
			for _, path := range throughProc(filepath.Dir(sock)) {
				if err := dialAs(4242, path); err == nil {
					t.Errorf("another user of the host dialled %s", path)
				}
			}
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.res.ExitCode != 0 || r.res.Stdout != fmt.Sprintf("hello from pypi.test:%d over plain http\n", hp) {
			t.Errorf("the sandbox through its relay: exit %d stdout %q stderr %q", r.res.ExitCode, r.res.Stdout, r.res.Stderr)
		}
	})
}

// throughProc returns the paths, through /proc/PID/root, of the socket in
// dir for every process whose mounts include dir.
func throughProc(dir string) []string {
	files, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if fields := strings.Fields(line); len(fields) > 4 && strings.HasSuffix(fields[3], filepath.Base(dir)) {
				out = append(out, filepath.Join(filepath.Dir(f), "root", fields[4], "egress.sock"))
			}
		}
	}
	return out
}
