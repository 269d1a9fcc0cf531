package place

import (
	"testing"
	"time"
)

// TestUntilNextLook: a wait for a start looks again at the poll, or just
// after the queue deadline when that comes sooner.
func TestUntilNextLook(t *testing.T) {
	if d := untilNextLook(time.Now().Add(time.Hour)); d != pollEvery {
		t.Errorf("a far deadline: %s, want the poll's %s", d, pollEvery)
	}
	if d := untilNextLook(time.Now().Add(-time.Second)); d != pollEvery {
		t.Errorf("a past deadline: %s, want the poll's %s", d, pollEvery)
	}
	if d := untilNextLook(time.Now().Add(300 * time.Millisecond)); d > 310*time.Millisecond || d < 250*time.Millisecond {
		t.Errorf("a deadline in 300ms: %s, want just past it", d)
	}
}
