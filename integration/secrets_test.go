package integration

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// Secrets that never enter the sandbox, end to end: the test's own HTTPS
// origins on the host's loopback (egressExecutor's names), a secret bound to
// one of them, and real clients (curl, git) in airlock/debian that hold only
// the run's placeholder. The proxy verifies the origins against the test's
// authority (EgressConfig.OriginRoots); the sandbox trusts airlock's through
// the bundle its init writes. No traffic leaves the machine.

// secretValue is a value no sandbox may ever hold.
func secretValue(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	rand.Read(b)
	return "tok-" + hex.EncodeToString(b)
}

// secretsExecutor is egressExecutor whose proxy trusts the authority ca for
// the origins of secrets.
func secretsExecutor(t *testing.T, ca string) *executor.Executor {
	t.Helper()
	return egressExecutor(t, func(c *executor.EgressConfig) {
		c.OriginRoots = x509.NewCertPool()
		c.OriginRoots.AppendCertsFromPEM([]byte(ca))
	})
}

// runAs admits spec for caller and runs it.
func runAs(t *testing.T, e *executor.Executor, caller executor.Caller, spec executor.Spec) executor.Result {
	t.Helper()
	a, err := e.Admit(spec, caller)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	res, err := e.Execute(t.Context(), a)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	assertGone(t, res)
	return res
}

// sandboxDump is a command that prints everything of the sandbox a secret
// could hide in: its environment, every process's command line and
// environment, and the files it may write.
const sandboxDump = `echo ==dump; env; ps -ef 2>/dev/null; cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'; ` +
	`find /tmp /workspace /dev/shm -type f -exec cat {} + 2>/dev/null; echo ==end`

// checkDump fails when the dump section of stdout holds the value or its
// mask (a masked value was in the sandbox), and says whether it holds
// airlock's placeholder.
func checkDump(t *testing.T, stdout, value string) (placeholder bool) {
	t.Helper()
	_, dump, ok := strings.Cut(stdout, "==dump\n")
	dump, _, ended := strings.Cut(dump, "==end")
	if !ok || !ended {
		t.Fatalf("no dump in %q", stdout)
	}
	if strings.Contains(dump, value) || strings.Contains(dump, "[secret ") {
		t.Errorf("the sandbox holds the secret's value:\n%s", dump)
	}
	return strings.Contains(dump, "airlock-secret-")
}

// TestSecretCurl: curl sends the placeholder it was given as a bearer token;
// the bound host gets the value, another allowed host the placeholder, the
// proxy scrubs an echo of the value from the answer; the tricks that would have the
// proxy send the value elsewhere fail; a placeholder of one run is worthless
// in the next; under runc and gVisor.
func TestSecretCurl(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // host -> Authorization headers
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		mu.Lock()
		seen[host] = append(seen[host], r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, strings.Replace("https://"+r.Host+"/echo", "api.test", "other.test", 1), http.StatusFound)
			return
		}
		fmt.Fprintf(w, "%s got %s\n", host, r.Header.Get("Authorization"))
	}))
	e := secretsExecutor(t, ca)
	value := secretValue(t)
	tenant := executor.Caller{Tenant: "a", Secrets: []executor.Secret{{Name: "API_TOKEN", Value: value, Hosts: []string{fmt.Sprintf("api.test:%d", port)}}}}
	eachRuntime(t, func(t *testing.T, rt string) {
		mu.Lock()
		clear(seen)
		mu.Unlock()
		spec := clientsSpec(ca, fmt.Sprintf(`cat "$SSL_CERT_FILE" /tmp/ca.pem > /tmp/both.pem
curl -sS -H "Authorization: Bearer $API_TOKEN" https://api.test:%[1]d/echo; echo "exit $?"
curl -sS --cacert /tmp/both.pem -H "Authorization: Bearer $API_TOKEN" https://other.test:%[1]d/echo; echo "exit $?"
curl -sS --cacert /tmp/both.pem --location-trusted -H "Authorization: Bearer $API_TOKEN" https://api.test:%[1]d/redirect; echo "exit $?"
curl -sS -H "Host: other.test:%[1]d" -H "Authorization: Bearer $API_TOKEN" https://api.test:%[1]d/echo; echo "exit $?"
curl -sS -k --connect-to other.test:%[1]d:api.test:%[1]d -H "Authorization: Bearer $API_TOKEN" https://other.test:%[1]d/echo; echo "exit $?"
echo "placeholder $API_TOKEN"
`, port)+sandboxDump, fmt.Sprintf("other.test:%d", port))
		spec.Runtime, spec.Secrets = rt, []string{"API_TOKEN"}
		res := runAs(t, e, tenant, spec)
		if res.ExitCode != 0 || strings.Contains(res.Stdout+res.Stderr, value) {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if !checkDump(t, res.Stdout, value) {
			t.Errorf("the sandbox holds no placeholder:\n%s", res.Stdout)
		}
		lines := strings.Split(res.Stdout, "\n")
		placeholder := strings.TrimPrefix(lines[10], "placeholder ")
		if !strings.HasPrefix(placeholder, "airlock-secret-") {
			t.Fatalf("line 11 %q; want the placeholder\n%s", lines[10], res.Stdout)
		}
		want := []string{
			"api.test got Bearer " + strings.Repeat("*", len(value)), "exit 0", // the proxy scrubs the echo
			"other.test got Bearer " + placeholder, "exit 0",
			"other.test got Bearer " + placeholder, "exit 0",
		}
		for i, w := range want {
			if lines[i] != w {
				t.Errorf("line %d %q; want %q", i+1, lines[i], w)
			}
		}
		// Another Host, and an SNI of another host in the tunnel to
		// api.test: refused, never carried.
		for i := 6; i <= 9; i += 2 {
			if !strings.Contains(lines[i], "421") && !strings.Contains(lines[i], "Misdirected") && !strings.Contains(lines[i], "is not for") && !strings.Contains(lines[i], "differs from") {
				t.Errorf("line %d %q; want the proxy's refusal", i+1, lines[i])
			}
		}
		mu.Lock()
		if got := seen["api.test"]; len(got) != 2 || got[0] != "Bearer "+value || got[1] != "Bearer "+value {
			t.Errorf("api.test got %q; want the value, for /echo and /redirect", got)
		}
		for _, a := range seen["other.test"] {
			if a != "Bearer "+placeholder {
				t.Errorf("other.test got %q; want the placeholder", a)
			}
		}
		mu.Unlock()
		if en, ok := egressEntryAt(res, "api.test", port); !ok || len(en.Secrets) != 1 || en.Secrets[0] != "API_TOKEN" {
			t.Errorf("api.test's entry %+v; want API_TOKEN applied", en)
		}

		// The next run's proxy takes this run's placeholder for what it is.
		mu.Lock()
		clear(seen)
		mu.Unlock()
		spec = clientsSpec(ca, fmt.Sprintf(`curl -sS -H "Authorization: Bearer %s" https://api.test:%d/echo`, placeholder, port))
		spec.Runtime, spec.Secrets = rt, []string{"API_TOKEN"}
		if res := runAs(t, e, tenant, spec); res.Stdout != "api.test got Bearer "+placeholder+"\n" {
			t.Errorf("an old placeholder: stdout %q stderr %q; want it unchanged", res.Stdout, res.Stderr)
		}
	})

	// Another tenant names the secret: refused before anything runs.
	_, err := e.Admit(executor.Spec{Command: "true", Secrets: []string{"API_TOKEN"}}, executor.Caller{Tenant: "b"})
	var se *executor.SpecError
	if !errors.As(err, &se) || se.Field != "secrets" || strings.Contains(err.Error(), value) {
		t.Errorf("another tenant's secret: %v; want a 400 on secrets", err)
	}
}

// TestSecretGit: git clones from and pushes to a repository whose server
// wants a token, with the token only in airlock's proxy: as Basic
// credentials the secret sets (basic_user), and as the password of the
// URL's user:placeholder. Without the secret, the server refuses.
func TestSecretGit(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test serves a repository with the host's git: %v", err)
	}
	root := gitRepo(t, "hello from git.test\n")
	if out, err := exec.Command("git", "--git-dir", filepath.Join(root, "repo.git"), "config", "http.receivepack", "true").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	value := secretValue(t)
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pw, ok := r.BasicAuth(); !ok || pw != value {
			w.Header().Set("WWW-Authenticate", `Basic realm="git.test"`)
			http.Error(w, "a token is required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	e := secretsExecutor(t, ca)
	host := fmt.Sprintf("git.test:%d", port)
	tenant := executor.Caller{Tenant: "a", Secrets: []executor.Secret{
		{Name: "GIT_TOKEN", Value: value, Hosts: []string{host}, BasicUser: "x-access-token"},
		{Name: "GIT_PASSWORD", Value: value, Hosts: []string{host}},
	}}
	push := func(url, msg string) string {
		return fmt.Sprintf(`export GIT_TERMINAL_PROMPT=0 HOME=/tmp
git clone -q %[1]s /tmp/repo && cat /tmp/repo/README &&
echo %[2]s > /tmp/repo/PUSHED && git -C /tmp/repo add PUSHED &&
git -C /tmp/repo -c user.name=agent -c user.email=agent@airlock commit -q -m %[2]s &&
git -C /tmp/repo push -q origin HEAD:main; echo "exit $?"
`, url, msg) + sandboxDump
	}
	for _, tc := range []struct{ secret, url string }{
		{"GIT_TOKEN", "https://" + host + "/repo.git"},
		{"GIT_PASSWORD", "https://agent:$GIT_PASSWORD@" + host + "/repo.git"},
	} {
		t.Run(tc.secret, func(t *testing.T) {
			spec := clientsSpec(ca, push(tc.url, "pushed-with-"+tc.secret))
			spec.Egress, spec.Secrets = nil, []string{tc.secret}
			res := runAs(t, e, tenant, spec)
			if !strings.HasPrefix(res.Stdout, "hello from git.test\nexit 0\n") || strings.Contains(res.Stdout+res.Stderr, value) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", res.ExitCode, res.Stdout, res.Stderr)
			}
			checkDump(t, res.Stdout, value)
			out, err := exec.Command("git", "--git-dir", filepath.Join(root, "repo.git"), "log", "-1", "--format=%s", "main").CombinedOutput()
			if err != nil || string(out) != "pushed-with-"+tc.secret+"\n" {
				t.Errorf("the repository's last commit: %q %v; want the sandbox's push", out, err)
			}
			if en, ok := egressEntryAt(res, "git.test", port); !ok || len(en.Secrets) != 1 || en.Secrets[0] != tc.secret {
				t.Errorf("git.test's entry %+v; want %s applied", en, tc.secret)
			}
		})
	}
	t.Run("without the secret", func(t *testing.T) {
		spec := clientsSpec(ca, `export GIT_TERMINAL_PROMPT=0 GIT_SSL_CAINFO=/tmp/ca.pem; git clone -q https://`+host+`/repo.git /tmp/repo; echo "exit $?"`, host)
		res := runAs(t, e, tenant, spec)
		if res.Stdout != "exit 128\n" || !strings.Contains(res.Stderr, "401") && !strings.Contains(res.Stderr, "Authentication failed") && !strings.Contains(res.Stderr, "could not read Username") {
			t.Errorf("stdout %q stderr %q; want git refused by the server", res.Stdout, res.Stderr)
		}
	})
}

// b64Echo serves, over HTTPS, the Authorization it got, in base64: the
// proxy finds only the value itself in an answer, so the echo brings it into
// the sandbox (which decodes it), and only airlock's masking of the output
// keeps it out of results and logs. (A gzipped echo, which once did the
// same, is refused by the proxy now.)
func b64Echo(t *testing.T) (int, string) {
	return serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, base64.StdEncoding.EncodeToString([]byte("got "+r.Header.Get("Authorization")+"\n")))
	}))
}

// secretsCaller is a caller with API_TOKEN for api.test on port, set as a
// header.
func secretsCaller(value string, port int) executor.Caller {
	return executor.Caller{Secrets: []executor.Secret{{Name: "API_TOKEN", Value: value, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization: token {value}"}}}
}

// TestSecretLiveOutput: the value an echo brought into the sandbox is
// masked in the output a caller follows live, as in the Result.
func TestSecretLiveOutput(t *testing.T) {
	port, ca := b64Echo(t)
	e := secretsExecutor(t, ca)
	value := secretValue(t)
	spec := clientsSpec(ca, fmt.Sprintf(`curl -sS https://api.test:%d/ | base64 -d`, port))
	spec.Secrets = []string{"API_TOKEN"}
	a, err := e.Admit(spec, secretsCaller(value, port))
	if err != nil {
		t.Fatal(err)
	}
	var live strings.Builder
	res, err := e.Execute(t.Context(), a, executor.WithLiveOutput(&live, nil))
	if err != nil {
		t.Fatal(err)
	}
	masked := "got token [secret API_TOKEN]" + strings.Repeat("*", len(value)-len("[secret API_TOKEN]")) + "\n"
	if res.Stdout != masked || live.String() != masked {
		t.Errorf("stdout %q, live %q; want both %q\nstderr %s", res.Stdout, live.String(), masked, res.Stderr)
	}
}

// TestSecretJob: a background job's requests get the value at the bound
// host; the value an echo in base64 brought into the sandbox is masked in the
// job's logs and Result before they reach the data dir, where no file ever
// holds it.
func TestSecretJob(t *testing.T) {
	port, ca := b64Echo(t)
	dir := t.TempDir()
	e := egressExecutorIn(t, dir, func(c *executor.EgressConfig) {
		c.OriginRoots = x509.NewCertPool()
		c.OriginRoots.AppendCertsFromPEM([]byte(ca))
	})
	value := secretValue(t)
	caller := secretsCaller(value, port)
	spec := clientsSpec(ca, fmt.Sprintf(`curl -sS https://api.test:%d/ | base64 -d`, port))
	spec.Background, spec.Timeout, spec.Secrets = true, 120, []string{"API_TOKEN"}
	a, err := e.Admit(spec, caller)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p, err := e.Launch(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Remove(context.WithoutCancel(ctx), p.ID) })
	res, err := e.Wait(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := e.Logs(ctx, p.ID, executor.LogsOptions{Stream: "stdout"})
	if err != nil {
		t.Fatal(err)
	}
	masked := "got token [secret API_TOKEN]" + strings.Repeat("*", len(value)-len("[secret API_TOKEN]")) + "\n"
	if res.ExitCode != 0 || string(logs.Stdout) != masked || res.StdoutTail != masked {
		t.Errorf("exit %d, logs %q, tail %q; want the value masked: %q\nstderr %s", res.ExitCode, logs.Stdout, res.StdoutTail, masked, res.StderrTail)
	}
	if en, ok := egressEntryAt(res, "api.test", port); !ok || len(en.Secrets) != 1 {
		t.Errorf("the job's egress: %+v", res.Egress)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), value) {
				t.Errorf("%s holds the value", p)
			}
		}
		return nil
	})
}

// TestSecretPooled: a warm sandbox, started before its run and with the
// pool's relay, gets the run's placeholder and trust bundle at its claim.
func TestSecretPooled(t *testing.T) {
	var mu sync.Mutex
	var got []string
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Egress.Resolver = names{"api.test": netip.MustParseAddr("127.0.0.1")}
	cfg.Egress.AllowCIDRs = []string{"127.0.0.0/8"}
	cfg.Egress.OriginRoots = x509.NewCertPool()
	cfg.Egress.OriginRoots.AppendCertsFromPEM([]byte(ca))
	value := secretValue(t)
	cfg.Secrets = []executor.Secret{{Name: "API_TOKEN", Value: value, Hosts: []string{fmt.Sprintf("api.test:%d", port)}}}
	e, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{"airlock/debian": 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	hits := func() (idle int, hits int64) {
		for _, st := range e.PoolStats() {
			if st.Key.Image == "airlock/debian" && st.Key.Workspace == "" {
				return st.Idle, st.Hits
			}
		}
		return 0, 0
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if idle, _ := hits(); idle >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool never filled")
		}
	}
	res := runWith(t, e, executor.Spec{Image: "airlock/debian", Timeout: 60, Secrets: []string{"API_TOKEN"},
		Command: fmt.Sprintf(`curl -sS -H "Authorization: Bearer $API_TOKEN" https://api.test:%d/`, port)})
	if _, h := hits(); res.ExitCode != 0 || h != 1 {
		t.Fatalf("exit %d, pool hits %d\nstdout %s\nstderr %s", res.ExitCode, h, res.Stdout, res.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "Bearer "+value {
		t.Errorf("the origin got %q; want the value", got)
	}
}
