package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/server"
)

// TestSandboxCAFile: a network that inspects TLS, as a company's middlebox
// does, re-signing every origin's certificate with its own authority. The
// test is that network: its authority signs the certificate of its HTTPS
// origin on the host's loopback. A server configured as an operator would
// (server.Load, --sandbox-ca-file) runs curl and Python's urllib against
// the origin: without the file both fail to verify it, and the proxy's own
// TLS to the host of a secret fails too; with it, all three succeed, and the
// origin gets the secret's value. Under runc and gVisor.
func TestSandboxCAFile(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	port, ca := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(w, "hello through the re-signing network\n")
	}))
	caFile := filepath.Join(t.TempDir(), "network-ca.pem")
	// As an operator's bundle may be: a comment, then the authority.
	if err := os.WriteFile(caFile, []byte("# the network's inspecting authority\n"+ca), 0o644); err != nil {
		t.Fatal(err)
	}
	// other.test is tunnelled, the sandbox's TLS end to end; api.test is the
	// host of a secret, whose TLS the proxy opens itself.
	host, secretHost := fmt.Sprintf("other.test:%d", port), fmt.Sprintf("api.test:%d", port)
	value := secretValue(t)
	// The run that names no secret gets the bundle too.
	command := fmt.Sprintf(`curl -sS https://%[1]s/curl; echo "curl exit $?"
python3 -c 'import urllib.request; print(urllib.request.urlopen("https://%[1]s/python").read().decode(), end="")'; echo "python exit $?"
`, host)
	secretCommand := fmt.Sprintf(`curl -sS -H "Authorization: Bearer $API_TOKEN" https://%s/secret; echo "secret exit $?"`, secretHost)

	serverExecutor := func(t *testing.T, args ...string) *executor.Executor {
		t.Helper()
		args = append([]string{"--data", t.TempDir(), "--egress-allowed", host + "," + secretHost}, args...)
		cfg, _, err := server.Load("serve", args, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		ec, err := cfg.ExecutorConfig()
		if err != nil {
			t.Fatal(err)
		}
		// The proxy dials the test's origin: its name resolves to the
		// loopback, opened for it.
		ec.Egress.Resolver = names{"api.test": netip.MustParseAddr("127.0.0.1"), "other.test": netip.MustParseAddr("127.0.0.1")}
		ec.Egress.AllowCIDRs = []string{"127.0.0.0/8"}
		e, err := executor.New(executor.WithConfig(ec))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	caller := executor.Caller{Tenant: "a", Secrets: []executor.Secret{{Name: "API_TOKEN", Value: value, Hosts: []string{secretHost}}}}
	spec := executor.Spec{Image: "airlock/debian", Egress: []string{host}, Timeout: 120, Command: command}
	secretSpec := executor.Spec{Image: "airlock/debian", Secrets: []string{"API_TOKEN"}, Timeout: 120, Command: secretCommand}

	without, with := serverExecutor(t), serverExecutor(t, "--sandbox-ca-file", caFile)
	eachRuntime(t, func(t *testing.T, rt string) {
		spec.Runtime, secretSpec.Runtime = rt, rt
		mu.Lock()
		auths = nil
		mu.Unlock()
		res := runAs(t, without, caller, spec)
		for _, want := range []string{"curl exit 60", "python exit 1"} {
			if !strings.Contains(res.Stdout, want) {
				t.Errorf("without the file: stdout %q; want %q\nstderr %q", res.Stdout, want, res.Stderr)
			}
		}
		for _, want := range []string{"SSL certificate problem", "CERTIFICATE_VERIFY_FAILED"} {
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("without the file: stderr %q; want %q", res.Stderr, want)
			}
		}
		res = runAs(t, without, caller, secretSpec)
		if en, ok := egressEntryAt(res, "api.test", port); res.Stdout != "secret exit 56\n" || !ok || !strings.Contains(en.Reason, "TLS to the origin") {
			t.Errorf("without the file: stdout %q, the entry %+v; want the proxy's TLS to the secret's origin refused", res.Stdout, en)
		}

		hello := "hello through the re-signing network\n"
		res = runAs(t, with, caller, spec)
		if want := hello + "curl exit 0\n" + hello + "python exit 0\n"; res.Stdout != want {
			t.Errorf("with the file: stdout %q; want %q\nstderr %q", res.Stdout, want, res.Stderr)
		}
		res = runAs(t, with, caller, secretSpec)
		if want := hello + "secret exit 0\n"; res.Stdout != want {
			t.Errorf("with the file, a secret's host: stdout %q; want %q\nstderr %q", res.Stdout, want, res.Stderr)
		}
		mu.Lock()
		got := append([]string(nil), auths...)
		mu.Unlock()
		if len(got) != 3 || got[0] != "" || got[2] != "Bearer "+value {
			t.Errorf("the origin got Authorization %q; want the secret's value on the third request only", got)
		}
	})
}
