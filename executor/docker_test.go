package executor

import "testing"

func TestTmpfsInodesOnePerPage(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{64 << 20, 16384},
		{1 << 30, 262144},
		{1 << 20, 1024}, // the floor: a tiny tmpfs still holds a small tree
	} {
		if got := tmpfsInodes(tc.size); got != tc.want {
			t.Errorf("tmpfsInodes(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
