package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/airlock-sandbox/airlock/executor"
)

// downloadSize is the body of the origin's /100m.
const downloadSize = 100 << 20

// egressRounds is how many times each download is made; 100 MB each.
const egressRounds = 9

// ttfbImage has python3, for an HTTPS client in the sandbox and on the host alike.
const ttfbImage = "airlock/debian"

// names is the bench's DNS for the proxy: origin.test is the host's loopback,
// where the bench serves its origins. No traffic leaves the machine.
type names map[string]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// origin serves 100 MB over plain HTTP and a one-byte answer over HTTPS, on
// the host's loopback. It times each /100m itself, from the request's arrival
// to the last byte handed to the kernel, so that every client, in a sandbox or
// not, is timed the same way and a container's start is not counted.
type origin struct {
	http, https *httptest.Server
	mu          sync.Mutex
	took        []time.Duration
}

func startOrigin() (*origin, error) {
	o := &origin{}
	chunk := make([]byte, 256<<10)
	o.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/100m" {
			http.NotFound(w, r)
			return
		}
		t0 := time.Now()
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		for sent := 0; sent < downloadSize; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		o.mu.Lock()
		o.took = append(o.took, time.Since(t0))
		o.mu.Unlock()
	}))
	cert, err := selfSigned("origin.test")
	if err != nil {
		o.http.Close()
		return nil, err
	}
	o.https = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") }))
	o.https.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	o.https.StartTLS()
	return o, nil
}

func (o *origin) close() { o.http.Close(); o.https.Close() }

// last returns the time the origin took to send the latest /100m. The
// client may have read the last byte before the handler returns: it waits.
func (o *origin) last() (time.Duration, error) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		o.mu.Lock()
		if n := len(o.took); n > 0 {
			d := o.took[n-1]
			o.took = o.took[:0]
			o.mu.Unlock()
			return d, nil
		}
		o.mu.Unlock()
	}
	return 0, fmt.Errorf("the origin sent no 100 MB")
}

// port is the loopback port s listens on.
func port(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }

// selfSigned is a certificate for name, signed by itself; the clients do
// not verify it (verification costs the same on both paths).
func selfSigned(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// ttfbScript waits a second, then times n new HTTPS connections (after 5
// unmeasured), each from the TCP connect to the first byte of the answer to
// one GET, and prints one time in microseconds per line. With a proxy (argv: proxy host port), it
// connects to the proxy and sends CONNECT first, as any HTTPS client behind
// HTTPS_PROXY does; without, it connects to the origin's address.
const ttfbScript = `
import socket, ssl, sys, time
mode, target, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
time.sleep(1) # let the pool refill that followed the claim pass
for i in range(5 + n):
    t0 = time.perf_counter()
    if mode == "proxy":
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT origin.test:%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n" % (port, port))
        head = b""
        while b"\r\n\r\n" not in head:
            b = s.recv(4096)
            if not b:
                sys.exit("proxy closed: %r" % head)
            head += b
        if b" 200" not in head.split(b"\r\n")[0]:
            sys.exit("CONNECT: %r" % head)
    else:
        s = socket.create_connection((target, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = ctx.wrap_socket(s, server_hostname="origin.test")
    t.sendall(b"GET / HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n")
    if not t.recv(1):
        sys.exit("no answer")
    took = time.perf_counter() - t0
    t.close()
    if i >= 5:
        print(int(took * 1e6))
`

// egress measures the network by allow-list (Spec.Egress) against its
// baselines: a 100 MB download from a sandbox through the relay and the proxy
// against the same client on the host; the time to an HTTPS answer's first
// byte, through CONNECT, against direct; and a pooled `echo hi` with an
// allow-list against one without.
func (b *bench) egress(ctx context.Context, w *tabwriter.Writer) error {
	o, err := startOrigin()
	if err != nil {
		return err
	}
	defer o.close()
	hp, sp := port(o.http), port(o.https)
	cfg := executor.DefaultConfig()
	dir, err := os.MkdirTemp("", "airlock-bench-egress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.DataDir = dir
	cfg.Egress.Resolver = names{"origin.test": netip.MustParseAddr("127.0.0.1")}
	cfg.Egress.AllowCIDRs = []string{"127.0.0.0/8"}
	ex, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{*image: poolSize}))
	if err != nil {
		return err
	}
	defer ex.Close()
	allow := []string{fmt.Sprintf("origin.test:%d", hp), fmt.Sprintf("origin.test:%d", sp)}

	fmt.Fprintf(w, "\nnetwork by allow-list (-only egress)\n")
	if err := b.egressDownload(ctx, w, ex, o, allow, hp); err != nil {
		return err
	}
	if err := b.egressTTFB(ctx, w, ex, allow, sp); err != nil {
		return err
	}
	return b.egressPooled(ctx, w, ex, allow)
}

// settle waits for ex's pool to be full and for the sandbox used last to be
// gone (the engine is shared: other processes' sandboxes are not waited
// for), then lets the refills' inits warm themselves: what is timed next
// does not share the CPUs with a sandbox's start or removal.
func (b *bench) settle(ctx context.Context, ex *executor.Executor, used string) error {
	for deadline := time.Now().Add(2 * time.Minute); poolIdle(ex) < poolSize; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pools never had %d warm sandboxes", poolSize)
		}
	}
	for deadline := time.Now().Add(time.Minute); used != ""; time.Sleep(5 * time.Millisecond) {
		if _, err := b.cli.ContainerInspect(ctx, used); cerrdefs.IsNotFound(err) {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the used sandbox %.12s still on the engine after a minute", used)
		}
	}
	time.Sleep(250 * time.Millisecond)
	return nil
}

// runOK runs s on ex and fails unless it exited 0.
func (b *bench) runOK(ctx context.Context, ex *executor.Executor, s executor.Spec) (executor.Result, error) {
	res, err := ex.Run(ctx, s)
	if res.ContainerID != "" {
		b.mu.Lock()
		b.runIDs[res.ContainerID] = true
		b.mu.Unlock()
	}
	if err != nil {
		return res, err
	}
	if res.ExitCode != 0 {
		return res, fmt.Errorf("%q: exit %d, stdout %q, stderr %q", s.Command, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res, nil
}

// egressDownload downloads 100 MB with busybox wget: in a sandbox through
// the relay and the proxy; in a container of the same image and limits on
// the host's network, straight to the origin (what the way out adds); and on
// the host directly.
func (b *bench) egressDownload(ctx context.Context, w *tabwriter.Writer, ex *executor.Executor, o *origin, allow []string, hp int) error {
	url := fmt.Sprintf("http://origin.test:%d/100m", hp)
	var used string // the sandbox of the last way, if it had one
	relay, stop, err := bareRelay(fmt.Sprintf("127.0.0.1:%d", hp))
	if err != nil {
		return err
	}
	defer stop()
	ways := []struct {
		name string
		run  func() error
	}{
		{"sandbox, busybox wget through the relay and proxy", func() error {
			res, err := b.runOK(ctx, ex, executor.Spec{Egress: allow, Timeout: 120, Command: "wget -q -O /dev/null " + url})
			used = res.ContainerID
			return err
		}},
		{"the sandbox's wget and limits on the host's network, direct", func() error {
			return b.hostNetworkWget(ctx, fmt.Sprintf("http://127.0.0.1:%d/100m", hp))
		}},
		{"host, busybox wget through a bare TCP relay (io.Copy, splice) on the host", func() error {
			out, err := exec.CommandContext(ctx, "busybox", "wget", "-q", "-O", "/dev/null", fmt.Sprintf("http://%s/100m", relay)).CombinedOutput()
			if err != nil {
				return fmt.Errorf("busybox wget through the bare relay: %v: %s", err, out)
			}
			return nil
		}},
		{"host, busybox wget, direct", func() error {
			out, err := exec.CommandContext(ctx, "busybox", "wget", "-q", "-O", "/dev/null", fmt.Sprintf("http://127.0.0.1:%d/100m", hp)).CombinedOutput()
			if err != nil {
				return fmt.Errorf("busybox wget on the host: %v: %s", err, out)
			}
			return nil
		}},
		{"host, Go http.Get, direct", func() error {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/100m", hp))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, resp.Body)
			return err
		}},
	}
	took := make([][]time.Duration, len(ways))
	for round := range 1 + egressRounds {
		for k := range ways {
			i := (round + k) % len(ways)
			if err := b.settle(ctx, ex, used); err != nil {
				return err
			}
			used = ""
			if err := ways[i].run(); err != nil {
				return fmt.Errorf("%s: %w", ways[i].name, err)
			}
			d, err := o.last()
			if err != nil {
				return fmt.Errorf("%s: %w", ways[i].name, err)
			}
			if round > 0 {
				took[i] = append(took[i], d)
			}
		}
	}
	mbps := func(d time.Duration) float64 { return float64(downloadSize) / 1e6 / d.Seconds() }
	fmt.Fprintf(w, "download of 100 MB over plain HTTP from an origin on the host, median of %d (timed by the origin, request to last byte sent)\n", egressRounds)
	fmt.Fprintln(w, "way\tmedian\tMB/s\tslowest")
	med := make([]time.Duration, len(ways))
	for i, way := range ways {
		slices.Sort(took[i])
		med[i] = took[i][len(took[i])/2]
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\n", way.name, ms(med[i]), mbps(med[i]), ms(took[i][len(took[i])-1]))
	}
	fmt.Fprintf(w, "throughput, sandbox wget / host wget\t%.2fx\t(target >= 0.8x)\n", ratio(med[3], med[0]))
	fmt.Fprintf(w, "throughput, sandbox wget / the same client and limits on the host's network\t%.2fx\n", ratio(med[1], med[0]))
	fmt.Fprintf(w, "the floor of any relay in a process: host wget through the bare relay / host wget\t%.2fx\n", ratio(med[3], med[2]))
	fmt.Fprintf(w, "throughput, sandbox wget / host wget through the bare relay\t%.2fx\t(1x: the way out costs what the floor does)\n", ratio(med[2], med[0]))
	return w.Flush()
}

// egressTTFB times new HTTPS connections to their first byte with the same
// Python client: in a sandbox through the relay and the proxy (CONNECT, then
// TLS inside the tunnel), and on the host directly. The sandbox's client
// runs under its limit of 1 CPU, which the relay shares.
func (b *bench) egressTTFB(ctx context.Context, w *tabwriter.Writer, ex *executor.Executor, allow []string, sp int) error {
	const each = 100
	res, err := b.runOK(ctx, ex, executor.Spec{Image: ttfbImage, Egress: allow, Timeout: 120,
		Command: fmt.Sprintf("python3 -c '%s' proxy origin.test %d %d", ttfbScript, sp, each)})
	if err != nil {
		return fmt.Errorf("TTFB in a sandbox: %w", err)
	}
	viaProxy, err := micros(res.Stdout)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "python3", "-c", ttfbScript, "direct", "127.0.0.1", strconv.Itoa(sp), strconv.Itoa(each)).Output()
	if err != nil {
		return fmt.Errorf("TTFB on the host: %w", err)
	}
	hostPython, err := micros(string(out))
	if err != nil {
		return err
	}
	// The same client as in the sandbox (the image's Python and OpenSSL, one
	// CPU), on the host's network, straight to the origin: what the way out
	// adds is measured against it. The host's own Python is another build.
	id := b.newID()
	args := []string{"run", "--rm", "--name", "airlock-" + id, "--label", executor.LabelManaged + "=true", "--label", executor.LabelID + "=" + id,
		"--network", "host", "--cpus", "1", "--log-driver", "none", "--entrypoint", "", ttfbImage,
		"python3", "-c", ttfbScript, "direct", "127.0.0.1", strconv.Itoa(sp), strconv.Itoa(each)}
	if out, err = exec.CommandContext(ctx, "docker", args...).Output(); err != nil {
		b.remove("airlock-" + id)
		return fmt.Errorf("TTFB from the image on the host's network: %w", err)
	}
	direct, err := micros(string(out))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nHTTPS, new connection to first byte (Python, TLS 1.3, %d each after 5 unmeasured)\tp50\tp90\tp99\n", each)
	for _, r := range []struct {
		name string
		l    []time.Duration
	}{{"sandbox, CONNECT through relay and proxy", viaProxy}, {"the image's Python on the host's network, direct", direct}, {"the host's Python, direct", hostPython}} {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.name, ms(percentile(r.l, 0.5)), ms(percentile(r.l, 0.9)), ms(percentile(r.l, 0.99)))
	}
	fmt.Fprintf(w, "added by the way out, same client (target <= 1 ms at p50)\t+%s\t+%s\t+%s\n", ms(percentile(viaProxy, 0.5)-percentile(direct, 0.5)),
		ms(percentile(viaProxy, 0.9)-percentile(direct, 0.9)), ms(percentile(viaProxy, 0.99)-percentile(direct, 0.99)))
	return w.Flush()
}

// micros reads one duration in microseconds per line, sorted.
func micros(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("timing %q: %w", f, err)
		}
		out = append(out, time.Duration(v)*time.Microsecond)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no timings in %q", s)
	}
	slices.Sort(out)
	return out, nil
}

// egressPooled times a pooled `echo hi` with an allow-list against one
// without, one of each per round, each from a settled pool as in -only pool.
func (b *bench) egressPooled(ctx context.Context, w *tabwriter.Writer, ex *executor.Executor, allow []string) error {
	var used string
	echo := executor.Spec{Argv: []string{"echo", "hi"}}
	withEgress := echo
	withEgress.Egress = allow
	ways := []struct {
		name string
		ex   *executor.Executor
		s    executor.Spec
	}{
		{"without an allow-list", ex, echo},
		{"with one", ex, withEgress},
	}
	took := make([][]time.Duration, len(ways))
	for round := range warmup + *n {
		for k := range ways {
			i := (round + k) % len(ways)
			if err := b.settle(ctx, ex, used); err != nil {
				return err
			}
			t0 := time.Now()
			res, err := ways[i].ex.Run(ctx, ways[i].s)
			used = res.ContainerID
			if err != nil {
				return err
			}
			if err := check(res.Stdout, res.Stderr, res.ExitCode); err != nil {
				return err
			}
			if round >= warmup {
				took[i] = append(took[i], time.Since(t0))
			}
		}
	}
	fmt.Fprintf(w, "\npooled `echo hi`, n=%d each, one of each per round, from settled pools of %d\tp50\tp90\tp99\n", *n, poolSize)
	for i, way := range ways {
		slices.Sort(took[i])
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", way.name, ms(percentile(took[i], 0.5)), ms(percentile(took[i], 0.9)), ms(percentile(took[i], 0.99)))
	}
	for _, r := range []struct {
		name string
		a    int
	}{{"with / without (target <= 1.2x at p50)", 1}} {
		x, y := took[r.a], took[0]
		fmt.Fprintf(w, "%s\t%.2fx\t%.2fx\t%.2fx\n", r.name, ratio(percentile(x, 0.5), percentile(y, 0.5)),
			ratio(percentile(x, 0.9), percentile(y, 0.9)), ratio(percentile(x, 0.99), percentile(y, 0.99)))
	}
	for _, st := range ex.PoolStats() {
		if st.Key.Image == *image && st.Key.Workspace == "" {
			fmt.Fprintf(w, "pool: %d hits, %d misses\n", st.Hits, st.Misses)
		}
	}
	return w.Flush()
}

// bareRelay listens on the host's loopback and relays each connection to
// target with io.Copy both ways (splice(2) between TCP connections): the
// least any relay in a process does, with no HTTP, no rules and no caps.
func bareRelay(target string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String(), func() { ln.Close() }, nil
}

// hostNetworkWget downloads url with busybox wget in a container of the
// sandbox's image and limits (1 CPU, airlock's seccomp profile, nobody) on
// the host's network: the same client with no way out in between.
func (b *bench) hostNetworkWget(ctx context.Context, url string) (err error) {
	id := b.newID()
	cfg, host := b.containerConfig(id)
	cfg.Cmd = []string{"wget", "-q", "-O", "/dev/null", url}
	cfg.AttachStdout, cfg.AttachStderr = false, false
	host.NetworkMode = "host"
	ref := "airlock-" + id
	defer func() { err = errors.Join(err, b.remove(ref)) }()
	created, err := b.cli.ContainerCreate(ctx, cfg, host, nil, nil, ref)
	if err != nil {
		return err
	}
	ref = created.ID
	waitC, errC := b.cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := b.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return err
	}
	select {
	case st := <-waitC:
		if st.StatusCode != 0 {
			return fmt.Errorf("wget on the host's network: exit %d", st.StatusCode)
		}
		return nil
	case err := <-errC:
		return err
	}
}
