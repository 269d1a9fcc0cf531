package executor

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

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

func TestReadLogFrames(t *testing.T) {
	frame := func(stream byte, msg string) []byte {
		b := []byte{stream, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[4:], uint32(len(msg)))
		return append(b, msg...)
	}
	var in []byte
	in = append(in, frame(1, "2026-01-01T00:00:00.000000001Z hello\n")...)
	in = append(in, frame(2, "2026-01-01T00:00:00.000000002Z \x00\xff")...)
	in = append(in, frame(1, "2026-01-01T00:00:00.000000003Z ")...) // an empty piece
	var got []logFrame
	err := readLogFrames(bytes.NewReader(in), func(f logFrame) error {
		f.Data = bytes.Clone(f.Data)
		got = append(got, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Data) != "hello\n" || got[0].Stderr || !got[1].Stderr ||
		string(got[1].Data) != "\x00\xff" || len(got[2].Data) != 0 || got[1].Time.Nanosecond() != 2 {
		t.Errorf("frames = %+v", got)
	}

	in = append(in, frame(3, "Error grabbing logs: unexpected EOF\n")...)
	err = readLogFrames(bytes.NewReader(in), func(logFrame) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "Error grabbing logs") {
		t.Errorf("a system-channel frame: err %v, want the engine's message", err)
	}
	if err := readLogFrames(bytes.NewReader(frame(1, "no stamp")), func(logFrame) error { return nil }); err == nil {
		t.Error("a frame without a timestamp was accepted")
	}
}
