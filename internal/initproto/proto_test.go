package initproto

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []struct {
		kind byte
		data string
	}{{Stdout, "out\x00\xff"}, {Stderr, ""}, {Stdout, strings.Repeat("x", 70000)}, {Result, `{"exit_code":3}`}}
	for _, f := range in {
		if err := WriteFrame(&buf, f.kind, []byte(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := ReadFrames(&buf, func(kind byte, p []byte) error {
		got = append(got, string(kind)+string(p))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, f := range in {
		if got[i] != string(f.kind)+f.data {
			t.Errorf("frame %d: got %.20q", i, got[i])
		}
	}
}

func TestReadFramesRefusesBrokenStreams(t *testing.T) {
	for name, stream := range map[string][]byte{
		"cut header":  {Stdout, 0, 0},
		"cut payload": {Stdout, 0, 0, 0, 5, 'a'},
		"huge frame":  {Stdout, 0xff, 0xff, 0xff, 0xff},
	} {
		if err := ReadFrames(bytes.NewReader(stream), func(byte, []byte) error { return nil }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestReadRequest(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(`{"argv":["sh","-c","cat"],"stdin":true,"timeout_ms":5000}`+"\nthe stdin"), 16)
	req, err := ReadRequest(r)
	if err != nil || len(req.Argv) != 3 || !req.Stdin || req.TimeoutMS != 5000 {
		t.Fatalf("request %+v, %v", req, err)
	}
	if rest, _ := r.ReadString(0); rest != "the stdin" {
		t.Errorf("stdin after the request: %q", rest)
	}
	for _, bad := range []string{"", "not json\n", `{"argv":[]}` + "\n", `{"argv":["x"]}`} {
		if _, err := ReadRequest(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
