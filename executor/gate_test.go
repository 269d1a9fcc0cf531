package executor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestAdmitTenantBounds: a tenant's bounds lower the operator's ceilings and
// the defaults with them. With a server ceiling of 256 MiB and a tenant limit
// of 384 MiB, a run that names no memory gets 256 MiB (it was given the shipped
// default's 384 MiB and then refused as over the server's limit).
func TestAdmitTenantBounds(t *testing.T) {
	e := newFakeExecutor(t, newFakeEngine(), func(c *Config) {
		c.Ceilings.Memory = 256 << 20
		c.Defaults.Memory = 256 << 20
		c.Ceilings.Timeout = 600 * time.Second
	})
	roomy := Caller{Tenant: "alpha", MaxMemory: 384 << 20}
	a, err := e.Admit(Spec{Command: "true"}, roomy)
	if err != nil || a.Spec().Memory != 256<<20 || a.Tenant() != "alpha" {
		t.Fatalf("no memory asked, tenant limit over the server's: %+v, %v", a.Spec(), err)
	}
	if _, err := e.Admit(Spec{Command: "true", Memory: 300 << 20}, roomy); !isField(err, "memory", "server's limit of 256MiB") {
		t.Fatalf("over the server's ceiling: %v", err)
	}

	tight := Caller{Tenant: "beta", MaxMemory: 64 << 20, MaxTimeout: 30 * time.Second, Images: []string{"airlock/minimal"}}
	a, err = e.Admit(Spec{Command: "true"}, tight)
	if err != nil || a.Spec().Memory != 64<<20 || a.Spec().Timeout != 30 {
		t.Fatalf("defaults under the tenant's limits: %+v, %v", a.Spec(), err)
	}
	if _, err := e.Admit(Spec{Command: "true", Memory: 128 << 20}, tight); !isField(err, "memory", "tenant's limit of 64MiB") {
		t.Fatalf("over the tenant's memory: %v", err)
	}
	if _, err := e.Admit(Spec{Command: "true", Timeout: 60}, tight); !isField(err, "timeout", "tenant's limit of 30s") {
		t.Fatalf("over the tenant's timeout: %v", err)
	}
	if a, err := e.Admit(Spec{Command: "sleep 1000", Background: true, Timeout: 3600}, tight); err != nil || a.Spec().Timeout != 3600 {
		t.Fatalf("a background job is bounded by the server's background limit only: %v", err)
	}
	if _, err := e.Admit(Spec{Command: "true", Image: "python:3"}, tight); !isField(err, "image", "airlock/minimal") {
		t.Fatalf("an image the tenant may not run: %v", err)
	}
}

// TestAdmitJudgesOnce: the decision comes with the admitted request; the
// tenant's policy replaces the server's; Execute of a refused request creates
// nothing.
func TestAdmitJudgesOnce(t *testing.T) {
	f := newFakeEngine()
	e := newFakeExecutor(t, f, nil)
	strict, err := policy.New(policy.Config{Mode: policy.ModeStrict})
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.Admit(Spec{Command: "cat x | sh"}, Caller{})
	if err != nil || !a.Decision().Allowed {
		t.Fatalf("standard policy: %+v, %v", a.Decision(), err)
	}
	a, err = e.Admit(Spec{Command: "cat x | sh"}, Caller{Policy: strict})
	if err != nil || a.Decision().Allowed {
		t.Fatalf("the caller's strict policy: %+v, %v", a.Decision(), err)
	}
	res, err := e.Execute(t.Context(), a)
	if err != nil || res.State != StateBlocked || res.ID != a.ID() || len(f.CreatedPlans()) != 0 {
		t.Fatalf("execute a refused request: %+v, %v, created %v", res, err, f.CreatedPlans())
	}
	if _, err := e.Run(t.Context(), Spec{Command: "true", Background: true}); !isField(err, "background", "") {
		t.Fatalf("Run of a background spec: %v", err)
	}
}

func isField(err error, field, reason string) bool {
	var se *SpecError
	return errors.As(err, &se) && se.Field == field && strings.Contains(se.Reason, reason)
}

// TestAdmittedElsewhereJudgesNothing: a job another node admitted keeps its
// spec and decision as they were, under this node's stricter policy and lower
// ceilings too; only what is this node's own (its runtimes) is checked.
func TestAdmittedElsewhereJudgesNothing(t *testing.T) {
	e := newFakeExecutor(t, newFakeEngine(), func(c *Config) {
		c.Runtimes, c.DefaultRuntime = []string{"runc"}, "runc"
		c.Ceilings.Memory, c.Defaults.Memory = 64<<20, 64<<20
	})
	strict, err := policy.New(policy.Config{Mode: policy.ModeStrict})
	if err != nil {
		t.Fatal(err)
	}
	id, p := NewID(), Placement{Node: "node-b", Attempt: 1}
	spec := Spec{Command: "cat x | sh", Background: true, Runtime: "runc", Memory: 256 << 20}
	allowed := policy.Decision{Allowed: true, Mode: policy.ModeStandard}
	a, err := e.AdmittedElsewhere(id, p, spec, Caller{Tenant: "alpha", Policy: strict}, allowed)
	if err != nil || a.ID() != id || a.Decision() != allowed || a.Spec().Memory != 256<<20 || a.Tenant() != "alpha" {
		t.Fatalf("an admitted job, judged again or bounded again: %+v %+v, %v", a.Spec(), a.Decision(), err)
	}
	spec.Runtime = "runsc"
	if _, err := e.AdmittedElsewhere(id, p, spec, Caller{}, allowed); !isField(err, "runtime", "not a runtime of this node") {
		t.Fatalf("a runtime this node lacks: %v", err)
	}
	// Configured, but not in this node's engine: the queuing node's had it.
	lacking := newFakeExecutor(t, newFakeEngine(), func(c *Config) { c.Runtimes = []string{"runc", "runsc"} })
	if _, err := lacking.AdmittedElsewhere(id, p, spec, Caller{}, allowed); err == nil || !strings.Contains(err.Error(), `runtime "runsc" is not installed in the engine`) {
		t.Fatalf("a runtime this node's engine lacks: %v", err)
	}
	spec.Runtime, spec.Background = "runc", false
	if _, err := e.AdmittedElsewhere(id, p, spec, Caller{}, allowed); !isField(err, "background", "") {
		t.Fatalf("a foreground run: %v", err)
	}
	spec.Background = true
	if _, err := e.AdmittedElsewhere("../x", p, spec, Caller{}, allowed); !isField(err, "id", "") {
		t.Fatalf("a bad id: %v", err)
	}
}
