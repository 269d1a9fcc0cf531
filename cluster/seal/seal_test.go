package seal

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/policy"
)

func TestSealedSpec(t *testing.T) {
	stdin := "stdin-secret-456"
	spec := api.Spec{Command: "cat", Env: map[string]string{"API_KEY": "sk-secret-123"}, Stdin: &stdin}
	key := []byte("0123456789abcdef0123456789abcdef")
	raw, err := Spec(key, "job-1", spec, policy.Decision{Allowed: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); strings.Contains(s, "sk-secret-123") || strings.Contains(s, stdin) || !strings.Contains(s, `"sealed"`) || !strings.Contains(s, `"command":"cat"`) {
		t.Fatalf("the queue's copy shows a secret, or lacks the sealed part or the command: %s", s)
	}
	got, err := Open(key, "job-1", raw)
	if err != nil || !got.Decision.Allowed || got.Command != "cat" || got.Env["API_KEY"] != "sk-secret-123" || got.Stdin == nil || *got.Stdin != stdin {
		t.Fatalf("opened = %+v, %v", got, err)
	}

	other := []byte("fedcba9876543210fedcba9876543210")
	for _, c := range []struct {
		name, id string
		key      []byte
	}{{"another token's key", "job-1", other}, {"another job", "job-2", key}, {"no token", "job-1", nil}} {
		if _, err := Open(c.key, c.id, raw); !errors.Is(err, ErrSealed) {
			t.Errorf("open with %s: %v; want ErrSealed", c.name, err)
		}
	}

	// Without a token: as sent. Without env or stdin: nothing sealed.
	raw, _ = Spec(nil, "job-1", spec, policy.Decision{Allowed: true})
	if got, err := Open(nil, "job-1", raw); err != nil || !strings.Contains(string(raw), "sk-secret-123") || got.Env["API_KEY"] != "sk-secret-123" {
		t.Fatalf("no key: %s, %+v, %v", raw, got, err)
	}
	raw, _ = Spec(key, "job-1", api.Spec{Command: "true"}, policy.Decision{Allowed: true})
	var fields map[string]any
	json.Unmarshal(raw, &fields)
	if _, ok := fields["sealed"]; ok {
		t.Fatalf("a spec without env or stdin got a sealed part: %s", raw)
	}
}
