package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

type rec struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

func TestRecordsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(s, "a", rec{ID: "a", N: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Update(s, "a", func(r *rec) error { r.N++; return nil }); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.ID() != s.ID() || s.ID() == "" {
		t.Errorf("store id changed on reopen: %q then %q", s.ID(), s2.ID())
	}
	r, err := Get[rec](s2, "a")
	if err != nil || r.N != 2 {
		t.Fatalf("Get = %+v, %v; want n 2", r, err)
	}
	all, err := All[rec](s2)
	if err != nil || len(all) != 1 {
		t.Fatalf("All = %+v, %v", all, err)
	}
}

func TestMissingRecordIsNotFound(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Get[rec](s, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get: %v, want ErrNotFound", err)
	}
	if _, err := Update(s, "nope", func(*rec) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update: %v, want ErrNotFound", err)
	}
}

func TestFailedUpdateWritesNothing(t *testing.T) {
	s, _ := Open(t.TempDir())
	Put(s, "a", rec{ID: "a", N: 1})
	boom := errors.New("boom")
	if _, err := Update(s, "a", func(r *rec) error { r.N = 99; return boom }); !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	if r, _ := Get[rec](s, "a"); r.N != 1 {
		t.Errorf("n = %d after a failed update, want 1", r.N)
	}
}

// Two stores on one directory stand for two processes: updates from both interleave
// without losing any.
func TestConcurrentUpdatesFromTwoHandles(t *testing.T) {
	dir := t.TempDir()
	s1, _ := Open(dir)
	s2, _ := Open(dir)
	Put(s1, "a", rec{ID: "a"})
	var wg sync.WaitGroup
	for _, s := range []*Store{s1, s2, s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := Update(s, "a", func(r *rec) error { r.N++; return nil }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if r, _ := Get[rec](s1, "a"); r.N != 100 {
		t.Errorf("n = %d, want 100", r.N)
	}
}

func TestDeleteRemovesFiles(t *testing.T) {
	s, _ := Open(t.TempDir())
	Put(s, "a", rec{ID: "a"})
	os.MkdirAll(s.JobDir("a"), 0o700)
	os.WriteFile(filepath.Join(s.JobDir("a"), "stdout"), []byte("x"), 0o600)
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.JobDir("a")); !os.IsNotExist(err) {
		t.Errorf("job dir still there: %v", err)
	}
	if _, err := Get[rec](s, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("record still there: %v", err)
	}
}

func TestTryLockIsExclusive(t *testing.T) {
	s, _ := Open(t.TempDir())
	unlock, ok, err := s.TryLock("a")
	if err != nil || !ok {
		t.Fatalf("first TryLock: %v %v", ok, err)
	}
	if _, ok, _ := s.TryLock("a"); ok {
		t.Fatal("second TryLock succeeded while the first holds it")
	}
	unlock()
	unlock2, ok, _ := s.TryLock("a")
	if !ok {
		t.Fatal("TryLock failed after unlock")
	}
	unlock2()
}

func BenchmarkGet(b *testing.B) {
	s, _ := Open(b.TempDir())
	Put(s, "a", rec{ID: "a"})
	for b.Loop() {
		Get[rec](s, "a")
	}
}

func BenchmarkUpdate(b *testing.B) {
	s, _ := Open(b.TempDir())
	Put(s, "a", rec{ID: "a"})
	for b.Loop() {
		Update(s, "a", func(r *rec) error { r.N++; return nil })
	}
}
