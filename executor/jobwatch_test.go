package executor

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// newTestWatcher returns a watcher resuming from cur, with its log files in a
// temp dir and no engine.
func newTestWatcher(t *testing.T, cur logCursor, logCap int64) *watcher {
	t.Helper()
	dir := t.TempDir()
	w := &watcher{id: "job", j: &job{LogCap: logCap}, cur: cur, e: &Executor{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}}
	for s, name := range streamNames {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		w.files[s] = f
		w.tails[s] = newRing(1024)
	}
	return w
}

func (w *watcher) contents(t *testing.T, s int) string {
	t.Helper()
	b, err := os.ReadFile(w.files[s].Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func stamp(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func frame(stderr bool, n int, data string) logFrame {
	return logFrame{Stderr: stderr, Time: stamp(n), Data: []byte(data)}
}

func TestTakeRestoresNewlinesTheEngineDropped(t *testing.T) {
	w := newTestWatcher(t, logCursor{}, 1<<20)
	for _, f := range []logFrame{
		frame(false, 1, "aaaa"), frame(false, 1, "bb"), // one long line in pieces; its newline dropped
		frame(false, 2, "cccc"), frame(false, 2, ""), // a line of exactly whole pieces: an empty last piece
		frame(false, 3, "short\n"),
		frame(false, 4, "no newline at the end"),
	} {
		w.take(f)
	}
	want := "aaaabb\ncccc\nshort\nno newline at the end"
	if got := w.contents(t, stdoutIdx); got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if w.cur.Total[stdoutIdx] != int64(len(want)) {
		t.Errorf("total %d, want %d", w.cur.Total[stdoutIdx], len(want))
	}
}

// A read that resumes from a saved cursor takes exactly what the first did not,
// even within one stamp, and a stream's older stamps sent again for the other
// stream's sake are skipped.
func TestTakeResumesWithoutLossOrRepeat(t *testing.T) {
	frames := []logFrame{
		frame(false, 1, "one\n"),
		frame(true, 2, "err-a"), frame(true, 2, "err-b"), // pieces of one stderr line
		frame(false, 3, "two\n"),
		frame(true, 2, "err-c\n"), // stderr's last piece, stamped with its first, after stdout's stamp 3
		frame(false, 4, "three\n"),
	}
	whole := newTestWatcher(t, logCursor{}, 1<<20)
	for _, f := range frames {
		whole.take(f)
	}
	for cut := range len(frames) + 1 {
		first := newTestWatcher(t, logCursor{}, 1<<20)
		for _, f := range frames[:cut] {
			first.take(f)
		}
		// The next process resumes from the saved cursor: its read starts at the
		// cursor's earlier stamp, so it gets every frame from there again.
		next := newTestWatcher(t, first.cur, 1<<20)
		for s := range next.files {
			next.files[s].Write([]byte(first.contents(t, s)))
		}
		since := first.cur.since()
		next.replay = [2]int{}
		for _, f := range frames {
			if !f.Time.Before(since) {
				next.take(f)
			}
		}
		for s := range streamNames {
			if got, want := next.contents(t, s), whole.contents(t, s); got != want {
				t.Errorf("cut after %d frames: %s = %q, want %q", cut, streamNames[s], got, want)
			}
		}
		if next.cur.Total != whole.cur.Total {
			t.Errorf("cut after %d frames: totals %v, want %v", cut, next.cur.Total, whole.cur.Total)
		}
	}
}

func TestTakeKeepsTheCapAndCountsThePast(t *testing.T) {
	w := newTestWatcher(t, logCursor{}, 8)
	w.take(frame(false, 1, "0123456\n"))
	w.take(frame(false, 2, "89abcdef\n"))
	if got := w.contents(t, stdoutIdx); got != "0123456\n" {
		t.Errorf("kept %q, want the first 8 bytes", got)
	}
	if w.cur.Kept[stdoutIdx] != 8 || w.cur.Total[stdoutIdx] != 17 {
		t.Errorf("kept %d total %d, want 8 and 17", w.cur.Kept[stdoutIdx], w.cur.Total[stdoutIdx])
	}
	if got := string(w.tails[stdoutIdx].bytes()); got != "0123456\n89abcdef\n" {
		t.Errorf("tail %q", got)
	}
}

// The engine's log follow can send a message again across a file rotation. A line
// gets a stamp of its own, so a second message under the stamp of one that ended
// its line is that message again; pieces of one long line share a stamp and are
// all taken.
func TestTakeSkipsMessagesTheEngineSendsTwice(t *testing.T) {
	w := newTestWatcher(t, logCursor{}, 1<<20)
	for _, f := range []logFrame{
		frame(false, 1, "one\n"), frame(false, 1, "one\n"), // sent twice
		frame(false, 2, "lo"), frame(false, 2, "ng\n"), // one line in pieces
		frame(false, 3, "two\n"),
	} {
		w.take(f)
	}
	if got := w.contents(t, stdoutIdx); got != "one\nlong\ntwo\n" {
		t.Errorf("stdout = %q, want each line once", got)
	}
}

// TestJobEndKeepsStartedAt: the started_at a running job was reported with
// stays when it ends; the finish is the engine's, never before the start.
func TestJobEndKeepsStartedAt(t *testing.T) {
	start := time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)
	j := &job{State: StateRunning, StartedAt: start}
	j.end(containerState{ExitCode: 0, StartedAt: start.Add(-40 * time.Millisecond), FinishedAt: start.Add(2 * time.Second)}, false)
	if !j.StartedAt.Equal(start) || !j.FinishedAt.Equal(start.Add(2*time.Second)) || j.State != StateCompleted {
		t.Fatalf("job after end: started %s finished %s state %s", j.StartedAt, j.FinishedAt, j.State)
	}
	j = &job{State: StateRunning, StartedAt: start}
	j.end(containerState{ExitCode: 0, StartedAt: start.Add(-40 * time.Millisecond), FinishedAt: start.Add(-10 * time.Millisecond)}, false)
	if !j.StartedAt.Equal(start) || j.FinishedAt.Before(j.StartedAt) {
		t.Fatalf("a finish before the start: started %s finished %s", j.StartedAt, j.FinishedAt)
	}
}
