package fileagent

import (
	"encoding/binary"
	"errors"
	"io"
)

// An upload reaches the agent on stdin as frames: a 4-byte big-endian length
// and that many bytes, and last the end mark, a frame of length 0. A stdin
// that ends without the end mark (the caller's body was cut, or airlock
// refused the archive half-way) is an upload that did not complete: the agent
// writes nothing of it.

// maxFrame bounds one frame.
const maxFrame = 1 << 20

// ErrCut is what reading an upload gives when stdin ends before the end mark.
var ErrCut = errors.New("the upload ended before its end mark")

// FrameWriter writes an upload's bytes as frames; End writes the end mark.
type FrameWriter struct {
	w   io.Writer
	hdr [4]byte
}

// NewFrameWriter returns a FrameWriter on w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

func (f *FrameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), maxFrame)
		binary.BigEndian.PutUint32(f.hdr[:], uint32(k))
		if _, err := f.w.Write(f.hdr[:]); err != nil {
			return n, err
		}
		m, err := f.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// End writes the end mark: the upload is complete.
func (f *FrameWriter) End() error {
	binary.BigEndian.PutUint32(f.hdr[:], 0)
	_, err := f.w.Write(f.hdr[:])
	return err
}

// frameReader reads the bytes of an upload's frames: io.EOF after the end
// mark, ErrCut when stdin ends before it.
type frameReader struct {
	r     io.Reader
	left  int
	ended bool
	hdr   [4]byte
}

func (f *frameReader) Read(p []byte) (int, error) {
	for f.left == 0 {
		if f.ended {
			return 0, io.EOF
		}
		if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
			return 0, ErrCut
		}
		n := binary.BigEndian.Uint32(f.hdr[:])
		if n > maxFrame {
			return 0, errors.New("a frame of the upload is over its bound")
		}
		f.left, f.ended = int(n), n == 0
	}
	n, err := f.r.Read(p[:min(len(p), f.left)])
	f.left -= n
	if err == io.EOF || (err == nil && n == 0) {
		if f.left > 0 {
			return n, ErrCut
		}
		err = nil
	}
	return n, err
}
