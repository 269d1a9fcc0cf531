package executor

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCaptureHead(t *testing.T) {
	tests := []struct {
		name          string
		limit         int64
		writes        []string
		wantKept      string
		wantTruncated bool
	}{
		{name: "nothing written", limit: 10, writes: nil, wantKept: ""},
		{name: "under the limit", limit: 10, writes: []string{"abc", "de"}, wantKept: "abcde"},
		{name: "exactly the limit", limit: 5, writes: []string{"abc", "de"}, wantKept: "abcde"},
		{name: "one byte over", limit: 5, writes: []string{"abc", "def"}, wantKept: "abcde", wantTruncated: true},
		{name: "limit crossed inside a write", limit: 4, writes: []string{"ab", "cdefgh", "ij"}, wantKept: "abcd", wantTruncated: true},
		{name: "first write over the limit", limit: 3, writes: []string{"abcdefgh"}, wantKept: "abc", wantTruncated: true},
		{name: "empty writes", limit: 3, writes: []string{"", "a", "", "b"}, wantKept: "ab"},
		{name: "max 0 keeps nothing", limit: 0, writes: []string{"abc", "def"}, wantKept: "", wantTruncated: true},
		{name: "max 0 and nothing written", limit: 0, writes: []string{""}, wantKept: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(tt.limit, nil)
			var total int64
			for _, w := range tt.writes {
				n, err := c.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; a short write would make the engine stream fail", w, n, err)
				}
				total += int64(len(w))
			}
			kept, truncated, gotTotal, _ := c.result(10)
			if kept != tt.wantKept {
				t.Errorf("result stdout = %q, want the first %d bytes %q", kept, tt.limit, tt.wantKept)
			}
			if truncated != tt.wantTruncated {
				t.Errorf("result truncated = %t, want %t (kept %d of %d bytes)", truncated, tt.wantTruncated, len(kept), gotTotal)
			}
			if gotTotal != total {
				t.Errorf("result byte count = %d, want %d: every byte written must be counted", gotTotal, total)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "empty", in: "", n: 3, want: ""},
		{name: "n=0", in: "a\nb\n", n: 0, want: ""},
		{name: "n negative", in: "a\nb\n", n: -1, want: ""},
		{name: "no newline", in: "abc", n: 1, want: "abc"},
		{name: "no newline, n=3", in: "abc", n: 3, want: "abc"},
		{name: "trailing newline, n=1", in: "a\nb\nc\n", n: 1, want: "c\n"},
		{name: "trailing newline, n=2", in: "a\nb\nc\n", n: 2, want: "b\nc\n"},
		{name: "no trailing newline, n=1", in: "a\nb\nc", n: 1, want: "c"},
		{name: "no trailing newline, n=2", in: "a\nb\nc", n: 2, want: "b\nc"},
		{name: "fewer lines than asked", in: "a\nb\n", n: 5, want: "a\nb\n"},
		{name: "exactly n lines", in: "a\nb\nc\n", n: 3, want: "a\nb\nc\n"},
		{name: "exactly n lines, no trailing newline", in: "a\nb\nc", n: 3, want: "a\nb\nc"},
		{name: "only a newline", in: "\n", n: 1, want: "\n"},
		{name: "empty last line", in: "a\n\n", n: 1, want: "\n"},
		{name: "blank lines kept", in: "a\n\n\nb\n", n: 3, want: "\n\nb\n"},
		{name: "CRLF", in: "a\r\nb\r\n", n: 1, want: "b\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lastLines([]byte(tt.in), tt.n); got != tt.want {
				t.Errorf("lastLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

// naiveLastLines is lastLines written the obvious way, as a reference.
func naiveLastLines(s string, n int) string {
	if n <= 0 || s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

func TestLastLinesMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	alphabet := []byte("ab\n")
	for i := range 2000 {
		b := make([]byte, r.IntN(40))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		n := r.IntN(8)
		if got, want := lastLines(b, n), naiveLastLines(string(b), n); got != want {
			t.Fatalf("case %d: lastLines(%q, %d) = %q, want %q", i, b, n, got, want)
		}
	}
}

func TestRingMatchesNaive(t *testing.T) {
	for _, size := range []int{1, 2, 7, 64, 1000} {
		for _, pattern := range []string{"small writes", "mixed sizes", "writes bigger than the ring"} {
			t.Run(fmt.Sprintf("size %d, %s", size, pattern), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(size), 42))
				ring := newRing(size)
				var all []byte
				for i := range 500 {
					var n int
					switch pattern {
					case "small writes":
						n = r.IntN(4)
					case "mixed sizes":
						n = r.IntN(2*size + 2)
					default:
						n = size + r.IntN(size+1)
					}
					p := make([]byte, n)
					for j := range p {
						p[j] = byte(r.UintN(256))
					}
					ring.write(p)
					all = append(all, p...)
					want := all[max(0, len(all)-size):]
					if got := ring.bytes(); !bytes.Equal(got, want) {
						t.Fatalf("after write %d (%d bytes, %d in all): ring holds %x, want the last %d bytes %x", i, n, len(all), got, size, want)
					}
				}
			})
		}
	}
}

func TestRingZeroSize(t *testing.T) {
	var r ring
	r.write([]byte("abc"))
	if got := r.bytes(); len(got) != 0 {
		t.Errorf("a ring with no room holds %q, want nothing", got)
	}
}

// TestCaptureTail checks the tail of a stream much longer than the ring, so that
// the ring has wrapped many times.
func TestCaptureTail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for i := 0; sb.Len() < 5*minTailBytes; i++ {
		fmt.Fprintf(&sb, "line %d %s\n", i, strings.Repeat("x", r.IntN(200)))
	}
	stream := sb.String()
	c := newCapture(100, nil)
	for rest := stream; rest != ""; {
		n := min(len(rest), 1+r.IntN(3000))
		c.Write([]byte(rest[:n]))
		rest = rest[n:]
	}
	kept, truncated, total, tail := c.result(50)
	if kept != stream[:100] || !truncated || total != int64(len(stream)) {
		t.Errorf("result = (%d bytes kept, truncated %t, total %d), want (100, true, %d)", len(kept), truncated, total, len(stream))
	}
	if want := naiveLastLines(stream, 50); tail != want {
		t.Errorf("stdout_tail is not the last 50 lines of the stream:\n got %q\nwant %q", tail, want)
	}
	if _, _, _, tail := c.result(0); tail != "" {
		t.Errorf("tail with tail_lines 0 = %q, want empty", tail)
	}
}

func TestCaptureLive(t *testing.T) {
	var live bytes.Buffer
	c := newCapture(5, &live)
	var all []byte
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		p := make([]byte, r.IntN(100))
		for j := range p {
			p[j] = byte(r.UintN(256))
		}
		c.Write(p)
		all = append(all, p...)
	}
	if !bytes.Equal(live.Bytes(), all) {
		t.Errorf("the live writer got %d bytes, want all %d the process wrote, unchanged", live.Len(), len(all))
	}
	if kept, _, total, _ := c.result(1); kept != string(all[:5]) || total != int64(len(all)) {
		t.Errorf("capture with a live writer kept %q of %d bytes, want %q of %d", kept, total, all[:5], len(all))
	}
}

// failingWriter accepts good bytes, then fails every write.
type failingWriter struct {
	good   int
	buf    bytes.Buffer
	writes int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.buf.Len()+len(p) > w.good {
		return 0, errors.New("terminal closed")
	}
	return w.buf.Write(p)
}

func TestCaptureLiveWriterFails(t *testing.T) {
	live := &failingWriter{good: 6}
	c := newCapture(100, live)
	for _, s := range []string{"abc", "def", "ghi", "jkl"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v after the live writer failed; the run's output would be cut", s, n, err)
		}
	}
	if live.writes != 3 {
		t.Errorf("the failing live writer was called %d times, want 3: it must be dropped after its first error", live.writes)
	}
	if got := live.buf.String(); got != "abcdef" {
		t.Errorf("the live writer got %q before failing, want %q", got, "abcdef")
	}
	kept, truncated, total, tail := c.result(5)
	if kept != "abcdefghijkl" || truncated || total != 12 || tail != "abcdefghijkl" {
		t.Errorf("result after a live writer failed = (%q, %t, %d, %q), want everything captured", kept, truncated, total, tail)
	}
}

func TestCaptureConcurrentWrites(t *testing.T) {
	c := newCapture(1<<20, nil)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				c.Write([]byte("0123456789\n"))
			}
		}()
	}
	for range 8 {
		<-done
	}
	kept, truncated, total, _ := c.result(1)
	if total != 8*100*11 || int64(len(kept)) != total || truncated {
		t.Errorf("concurrent writes: kept %d, total %d, truncated %t; want all %d bytes", len(kept), total, truncated, 8*100*11)
	}
}
