package policy

import (
	"slices"
	"testing"
)

func TestLiteralOutputDecodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{`\x72\x6d`}, "rm", true},
		{[]string{`r%s`, "m"}, "rm", true},
		{[]string{`\162\155`}, "rm", true},
		{[]string{`%b`, `\x72m`}, "rm", true},
		{[]string{`%s-%s\n`, "a", "b", "c", "d"}, "a-b\nc-d\n", true},
		{[]string{`%5s`, "x"}, "", false},
		{[]string{"-v", "x", "y"}, "", false},
	} {
		got, ok := printfText(tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("printf %q = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-e", `\x72\x6d`}, "rm"},
		{[]string{`\x72\x6d`}, `\x72\x6d`},
		{[]string{"-n", "rm"}, "rm"},
		{[]string{"-en", `\0162m`}, "rm"},
	} {
		if got := echoText(tc.args); got != tc.want {
			t.Errorf("echo %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := ifsFields("rm\u00a0-rf /\tx\ny"); !slices.Equal(got, []string{"rm\u00a0-rf", "/", "x", "y"}) {
		t.Errorf("ifsFields = %q", got)
	}
}
