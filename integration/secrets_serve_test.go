package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// TestServeSecretsOwnKey runs the README's secrets example against `airlock
// serve` as `make run` starts it (no tokens, no secrets_key_file, a data dir
// under $HOME), allowing the secret's host: the server makes its own key in
// its data dir, mode 0600, says where, and the next start on the data dir
// opens the secret the first stored. It answered 501 before.
func TestServeSecretsOwnKey(t *testing.T) {
	data := filepath.Join(t.TempDir(), ".local", "share", "airlock")
	addr := freePort(t)
	srv := startServe(t, addr, data, "AIRLOCK_EGRESS_ALLOWED=github.com", "AIRLOCK_SECRETS_KEY_FILE=")
	keyFile := filepath.Join(data, "secrets.key")

	// The README's curl, with $AIRLOCK_TOKEN empty as on a server without tokens.
	req, _ := http.NewRequest("PUT", srv.url+"/v1/secrets/GIT_TOKEN",
		strings.NewReader(`{"value": "ghp_...", "hosts": ["github.com"], "basic_user": "x-access-token"}`))
	req.Header.Set("Authorization", "Bearer ")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the README's PUT: %d %s", resp.StatusCode, body)
	}
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key: %v %v; want %s of mode 0600", fi, err, keyFile)
	}
	if !logSays(srv.stderr.String(), "made a secrets key", keyFile) {
		t.Errorf("the log does not say where the key was made:\n%s", srv.stderr.String())
	}
	// The README's run, without its network: the sandbox holds the placeholder.
	stdout, stderr, code := airlockEnv(t, []string{"AIRLOCK_SERVER=" + srv.url}, "", "run", "--secret", "GIT_TOKEN", "--", `echo "$GIT_TOKEN"`)
	if code != 0 || !strings.HasPrefix(stdout, "airlock-secret-") {
		t.Errorf("run --secret GIT_TOKEN: exit %d, %q %q", code, stdout, stderr)
	}

	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
	srv = startServe(t, addr, data, "AIRLOCK_EGRESS_ALLOWED=github.com", "AIRLOCK_SECRETS_KEY_FILE=")
	resp, err = http.Get(srv.url + "/v1/secrets")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var list api.SecretList
	json.Unmarshal(body, &list)
	if len(list.Secrets) != 1 || list.Secrets[0].Name != "GIT_TOKEN" || bytes.Contains(body, []byte("ghp_")) {
		t.Errorf("the next start's secrets: %s", body)
	}
	if logs := srv.stderr.String(); !logSays(logs, "secrets key", keyFile) || strings.Contains(logs, "made a secrets key") {
		t.Errorf("the next start's log: want the key named, not made anew:\n%s", logs)
	}
}

// logSays reports whether a JSON log line has msg and names file as
// secrets_key_file.
func logSays(logs, msg, file string) bool {
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg  string `json:"msg"`
			File string `json:"secrets_key_file"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, msg) && l.File == file {
			return true
		}
	}
	return false
}

// TestSecretPlainHTTPRefused: in a sandbox, a plain-HTTP request to the host
// a run's secret is bound to is refused with a 403 that names the secret and
// says why, and the run's egress counts it; it was sent on with the
// placeholder, and the report said nothing. Under runc and gVisor.
func TestSecretPlainHTTPRefused(t *testing.T) {
	o := startOrigins(t)
	e := egressExecutor(t, nil)
	hp := o.port(o.http)
	host := fmt.Sprintf("api.test:%d", hp)
	caller := executor.Caller{Tenant: "a", Secrets: []executor.Secret{{Name: "API_TOKEN", Value: secretValue(t), Hosts: []string{host}}}}
	eachRuntime(t, func(t *testing.T, rt string) {
		res := runAs(t, e, caller, executor.Spec{Image: "airlock/debian", Runtime: rt, Secrets: []string{"API_TOKEN"}, Timeout: 60,
			Command: fmt.Sprintf(`curl -sS --fail-with-body -H "Authorization: Bearer $API_TOKEN" http://%s/x; echo "exit $?"`, host)})
		want := "airlock egress proxy: " + host + " refused: secret API_TOKEN is bound to it, and a secret goes only into HTTPS requests, never into plain HTTP: use https://\nexit 22\n"
		if res.Stdout != want {
			t.Errorf("stdout %q; want %q\nstderr %q", res.Stdout, want, res.Stderr)
		}
		if en, ok := egressEntryAt(res, "api.test", hp); !ok || en.Refused != 1 || !strings.Contains(en.Reason, "only into HTTPS") || en.BytesOut != 0 {
			t.Errorf("the entry %+v; want the refusal, and nothing sent", en)
		}
	})
}
