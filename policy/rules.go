package policy

// Rule is one reason the policy can refuse a command. IDs are stable: callers,
// audit logs and dashboards may key on them.
type Rule struct {
	ID     string
	Reason string
}

// The rules. Built-in deny rules apply in standard and strict mode; the strict
// rules only in strict mode; the operator rules when the operator configured them.
var (
	// Built-in deny rules (the blocklists of the agent tools airlock replaces,
	// decided on parsed commands).
	RuleRmRoot      = Rule{"rm-root", "recursive delete of / or a top-level system directory"}
	RuleFindDelete  = Rule{"find-delete-root", "find deletes from / or a top-level system directory"}
	RuleMkfs        = Rule{"mkfs", "formats a filesystem or wipes a disk"}
	RuleBlockDevice = Rule{"block-device-write", "writes to a block device or raw memory"}
	RuleChmodRoot   = Rule{"chmod-root", "recursive permission or owner change of / or a top-level system directory"}
	RuleForkBomb    = Rule{"fork-bomb", "fork bomb: a function or script that spawns copies of itself without end"}
	RulePower       = Rule{"power", "shuts down or reboots the machine"}
	RuleFirewall    = Rule{"firewall-disable", "disables or flushes the firewall"}
	RuleSELinux     = Rule{"selinux-disable", "disables SELinux enforcement"}
	RulePrivilege   = Rule{"privilege-escalation", "runs a command as another user, with other capabilities or in another namespace (sudo, su, doas, pkexec, gosu, nsenter, ...)"}
	RuleChroot      = Rule{"chroot", "changes the root directory"}
	RuleMount       = Rule{"mount", "mounts or unmounts a filesystem"}
	RuleFetchPipe   = Rule{"fetch-pipe-shell", "pipes downloaded text into a shell"}
	RuleEvalFetched = Rule{"eval-fetched", "evaluates downloaded text as commands"}
	RuleTooComplex  = Rule{"too-complex", "nests shells, evals or expansions too deeply to judge"}
	RuleTooLarge    = Rule{"too-large", "the command is larger than the policy judges (MaxCommandBytes)"}
	// RuleInternalError refuses what the checker failed to judge (a bug in
	// it): failing closed, the command does not run.
	RuleInternalError = Rule{"internal-error", "the policy checker failed on this command, so it was not judged and does not run"}

	// Strict mode: what a static check cannot decide.
	RuleDynamicCommand = Rule{"dynamic-command", "the command name is only known when it runs"}
	RulePipeShell      = Rule{"pipe-to-interpreter", "pipes text into a shell or interpreter"}
	RuleUnparseable    = Rule{"unparseable", "the command is not valid shell syntax"}
	RuleInlineCode     = Rule{"inline-code", "hands inline code to an interpreter (python3 -c, perl -e, awk calling system), which no static check reads"}

	// Operator rules.
	RuleDenyProgram   = Rule{"deny-program", "the program is denied by the operator"}
	RuleDenyPattern   = Rule{"deny-pattern", "the command matches a pattern denied by the operator"}
	RuleNotAllowed    = Rule{"not-allowlisted", "the program is not on the operator's allowlist"}
	RuleOutsideRoots  = Rule{"path-outside-workspace", "a path argument is outside the workspace"}
	RulePathTraversal = Rule{"path-traversal", "a relative path climbs out of the workspace"}
	RuleDenyWrite     = Rule{"deny-write-path", "writes to a path the operator denies"}
)

// strictOnly reports whether r is one of strict mode's own rules.
func strictOnly(r Rule) bool {
	return r.ID == RuleDynamicCommand.ID || r.ID == RulePipeShell.ID || r.ID == RuleUnparseable.ID || r.ID == RuleInlineCode.ID
}

// Rules lists every rule, for documentation and for `airlock check --rules`.
func Rules() []Rule {
	return []Rule{
		RuleRmRoot, RuleFindDelete, RuleMkfs, RuleBlockDevice, RuleChmodRoot, RuleForkBomb, RulePower,
		RuleFirewall, RuleSELinux, RulePrivilege, RuleChroot, RuleMount, RuleFetchPipe, RuleEvalFetched,
		RuleTooComplex, RuleTooLarge, RuleInternalError, RuleDynamicCommand, RulePipeShell, RuleUnparseable, RuleInlineCode,
		RuleDenyProgram, RuleDenyPattern, RuleNotAllowed, RuleOutsideRoots, RulePathTraversal, RuleDenyWrite,
	}
}
