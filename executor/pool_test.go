package executor

import "testing"

func TestPoolImage(t *testing.T) {
	for _, tc := range []struct{ ref, image, runtime string }{
		{"airlock/minimal", "airlock/minimal", "runc"},
		{"airlock/minimal@runsc", "airlock/minimal", "runsc"},
		{"localhost:5000/tools:1.2", "localhost:5000/tools:1.2", "runc"},
		{"tools@sha256:0123abcd", "tools@sha256:0123abcd", "runc"},
		{"tools@sha256:0123abcd@runsc", "tools@sha256:0123abcd", "runsc"},
	} {
		img, rt := poolImage(tc.ref, "runc")
		if img != tc.image || rt != tc.runtime {
			t.Errorf("poolImage(%q) = %q, %q; want %q, %q", tc.ref, img, rt, tc.image, tc.runtime)
		}
	}
}
