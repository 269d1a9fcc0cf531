package policy

import "testing"

// TestDefinitionsDoNotHideCalls: a function or alias named like a dangerous
// program answers only a call by its bare name, in the shell that surely
// defined it before the call; every other call runs the program.
func TestDefinitionsDoNotHideCalls(t *testing.T) {
	runCases(t, "definition", withStrictCopies([]tcase{
		{cmd: `reboot(){ :; }; /sbin/reboot`, want: "power"},
		{cmd: `reboot(){ :; }; env reboot`, want: "power"},
		{cmd: `reboot(){ :; }; command reboot`, want: "power"},
		{cmd: `rm(){ :; }; exec rm -rf /`, want: "rm-root"},
		{cmd: `rm(){ :; }; sh -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `rm(){ :; }; bash -c "rm -rf /"`, want: "rm-root"},
		{cmd: `rm(){ :; }; nice rm -rf /`, want: "rm-root"},
		{cmd: `rm(){ :; }; find / -exec rm -rf / \;`, want: "rm-root", alt: []string{"find-delete-root"}},
		{cmd: `(reboot(){ :; }); reboot`, want: "power"},
		{cmd: `if false; then reboot(){ :; }; fi; reboot`, want: "power"},
		{cmd: `true || reboot(){ :; }; reboot`, want: "power"},
		{cmd: `f(){ reboot(){ :; }; }; reboot`, want: "power"},
		{cmd: `reboot; reboot(){ :; }`, want: "power"},
		{cmd: `reboot(){ :; } & reboot`, want: "power"},
		{cmd: `alias reboot=true; reboot`, want: "power"},
		{cmd: `reboot() { echo would reboot; }; reboot`, want: allow},
		{cmd: `rm() { echo no; }; rm -rf /`, want: allow},
		{cmd: "reboot() {\n  echo would reboot\n}\nreboot now", want: allow},
	}, nil))
}
