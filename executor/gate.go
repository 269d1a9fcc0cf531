package executor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// Caller is who asks for a run, and what it may ask for beyond the operator's
// Config: its bounds can only lower the Config's ceilings. A server fills it
// from the tenant of the request; the zero Caller is the library's own, bound
// by the Config alone.
type Caller struct {
	// Tenant owns the run; a server sets it from the caller's credentials.
	// Background jobs keep it (see ListOptions.Tenant).
	Tenant string
	// Policy judges the caller's commands instead of Config.Policy.
	Policy *policy.Policy
	// MaxMemory (bytes) and MaxTimeout (foreground runs) lower the Config's
	// ceilings when set; a request that names none gets the lower of the
	// Config's default and these.
	MaxMemory  int64
	MaxTimeout time.Duration
	// Images, when set, are the only images the caller may run.
	Images []string
	// MaxWorkspaces and MaxWorkspaceBytes, when set, bound how many workspaces
	// the tenant holds and the sum of their sizes.
	MaxWorkspaces     int
	MaxWorkspaceBytes int64
	// EgressAllowed and EgressDefault, when set, narrow the Config's egress
	// bounds for this caller (a tenant); they must lie within them.
	EgressAllowed []string
	EgressDefault []string
	// Secrets are the caller's own (a tenant's), found before Config.Secrets
	// of the same name; no other caller sees them.
	Secrets []Secret
}

// Admitted is a request that has passed the gate: every default filled in, every
// field within the operator's and the caller's bounds, and the policy's
// decision taken. It is the one value Execute and Launch act on, and what an
// audit log or a metric reads: what will run, not what was asked. Its fields are
// read-only, so that nothing runs that the gate did not see.
type Admitted struct {
	id       string
	spec     Spec
	caller   Caller
	decision policy.Decision
	// placement is set for a cluster's job (AdmittedElsewhere).
	placement *Placement
}

// Placement is, in cluster mode, the node a background job was placed on and
// the attempt it runs as: its fence (docs/cluster.md). Launch puts both on the
// job's container and record.
type Placement struct {
	Node    string `json:"node"`
	Attempt int    `json:"attempt"`
}

// ID is the run's id.
func (a Admitted) ID() string { return a.id }

// Spec is the request as it will run: defaults filled in.
func (a Admitted) Spec() Spec { return a.spec }

// Tenant is the owner of the run.
func (a Admitted) Tenant() string { return a.caller.Tenant }

// Decision is the policy's judgement. A refused request runs nothing: Execute
// and Launch report it as blocked.
func (a Admitted) Decision() policy.Decision { return a.decision }

// Admit is the one gate of every run and background job (spec.Background): it
// fills in the defaults, bounds the request by the Config's ceilings and then
// the caller's, validates every field, and judges the command with the policy,
// once. The error is a *SpecError naming the first invalid field; nothing was
// started. A refusal by the policy is not an error: see Admitted.Decision.
func (e *Executor) Admit(spec Spec, c Caller) (Admitted, error) {
	s, err := e.cfg.normalize(spec, c)
	if err != nil {
		return Admitted{}, err
	}
	return Admitted{id: NewID(), spec: s, caller: c, decision: judge(cmp.Or(c.Policy, e.cfg.Policy), s.Command, s.Argv)}, nil
}

// AdmittedElsewhere is the Admitted of a background job that passed the gate
// on the node of a cluster that queued it, and that the cluster placed on this
// node: it keeps that node's id, spec and decision, and is not judged again
// (one gate across the cluster: what ran is what was admitted and audited).
// Only what is this node's own is checked: that its engine offers the spec's
// runtime. The cluster's claim has already counted the node's slots and memory.
func (e *Executor) AdmittedElsewhere(id string, p Placement, spec Spec, c Caller, d policy.Decision) (Admitted, error) {
	switch {
	case !idPattern.MatchString(id):
		return Admitted{}, &SpecError{Field: "id", Reason: fmt.Sprintf("%q is not an airlock id (24 hex digits)", id)}
	case !spec.Background:
		return Admitted{}, &SpecError{Field: "background", Reason: "only a background job is placed by a cluster"}
	case !slices.Contains(e.cfg.Runtimes, spec.Runtime):
		return Admitted{}, &SpecError{Field: "runtime", Reason: fmt.Sprintf("%q is not a runtime of this node (its runtimes: %s)",
			spec.Runtime, strings.Join(e.cfg.Runtimes, ", "))}
	}
	// The configuration may name a runtime its engine lacks: the queuing
	// node's engine had it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.checkRuntime(ctx, spec.Runtime); err != nil {
		return Admitted{}, err // names the runtime and what the engine offers
	}
	return Admitted{id: id, spec: spec, caller: c, decision: d, placement: &p}, nil
}

// CheckCommand judges a command (or argv) as Admit would, and runs nothing:
// the command is bounded as a run's, then judged by the caller's policy.
func (e *Executor) CheckCommand(c Caller, command string, argv []string) (policy.Decision, error) {
	if _, err := e.cfg.checkCommand(Spec{Command: command, Argv: argv}); err != nil {
		return policy.Decision{}, err
	}
	return judge(cmp.Or(c.Policy, e.cfg.Policy), command, argv), nil
}

// judge is the policy's decision on a command or argv; nil p allows everything.
func judge(p *policy.Policy, command string, argv []string) policy.Decision {
	switch {
	case p == nil:
		return policy.Decision{Allowed: true, Mode: policy.ModeOff}
	case command != "":
		return p.Check(command)
	}
	return p.CheckArgv(argv)
}
