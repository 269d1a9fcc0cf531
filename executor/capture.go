package executor

import (
	"bytes"
	"io"
	"sync"
)

// capture records one output stream with bounded memory however much is written:
// the first max bytes, the true total, and the last bytes for the tail. An optional
// live writer sees every byte as it arrives.
type capture struct {
	mu    sync.Mutex
	limit int64
	head  []byte
	total int64
	tail  ring
	live  io.Writer
}

// minTailBytes keeps tails useful when max_output is tiny or zero.
const minTailBytes = 64 << 10

func newCapture(limit int64, live io.Writer) *capture {
	return &capture{limit: limit, tail: newRing(int(max(limit, minTailBytes))), live: live}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live != nil {
		if _, err := c.live.Write(p); err != nil {
			c.live = nil // a closed terminal must not stop the capture
		}
	}
	if room := c.limit - int64(len(c.head)); room > 0 {
		c.head = append(c.head, p[:min(int64(len(p)), room)]...)
	}
	c.total += int64(len(p))
	c.tail.write(p)
	return len(p), nil
}

// result returns what was kept, whether it was cut, the true byte count, and the
// last n lines of the whole stream.
func (c *capture) result(n int) (kept string, truncated bool, total int64, tail string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.head), c.total > int64(len(c.head)), c.total, lastLines(c.tail.bytes(), n)
}

// lastLines returns the last n lines of b, with their newlines; a final newline
// does not start a new line.
func lastLines(b []byte, n int) string {
	if n <= 0 || len(b) == 0 {
		return ""
	}
	start := len(b)
	if b[start-1] == '\n' {
		start--
	}
	for ; n > 0; n-- {
		j := bytes.LastIndexByte(b[:start], '\n')
		if j < 0 {
			return string(b)
		}
		start = j
	}
	return string(b[start+1:])
}

// ring keeps the last size bytes written to it. Its buffer grows as bytes
// come, so that a run that writes three bytes does not pay for a megabyte.
type ring struct {
	size int
	buf  []byte
	next int // where the next byte goes once buf is full
}

func newRing(size int) ring { return ring{size: size} }

func (r *ring) write(p []byte) {
	size := r.size
	if size == 0 {
		return
	}
	if len(p) >= size {
		r.buf = append(r.buf[:0], p[len(p)-size:]...)
		r.next = 0
		return
	}
	if room := size - len(r.buf); room > 0 {
		k := min(room, len(p))
		r.buf = append(r.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(r.buf[r.next:], p)
		p = p[k:]
		r.next = (r.next + k) % size
	}
}

// bytes returns the kept bytes in the order they were written.
func (r *ring) bytes() []byte {
	if len(r.buf) < r.size || r.next == 0 {
		return r.buf
	}
	out := make([]byte, 0, len(r.buf))
	return append(append(out, r.buf[r.next:]...), r.buf[:r.next]...)
}
