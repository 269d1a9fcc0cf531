package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

func TestWantsEvents(t *testing.T) {
	cases := []struct {
		accept []string
		want   bool
	}{
		{nil, false},
		{[]string{"*/*"}, false},
		{[]string{"application/json"}, false},
		{[]string{"text/event-stream"}, true},
		{[]string{"TEXT/Event-Stream; charset=utf-8"}, true},
		{[]string{"text/event-stream;q=0"}, false},
		{[]string{"text/event-stream; q=0.0, application/json"}, false},
		{[]string{"application/json, text/event-stream;q=0.5"}, false},
		{[]string{"application/json;q=0.5, text/event-stream"}, true},
		{[]string{"text/*;q=0.9, text/event-stream;q=0", "*/*"}, false},
		{[]string{"application/json", "text/event-stream"}, true},
	}
	for _, c := range cases {
		r, _ := http.NewRequest("POST", "/v1/processes", nil)
		for _, v := range c.accept {
			r.Header.Add("Accept", v)
		}
		if got := wantsEvents(r); got != c.want {
			t.Errorf("Accept %q: events %v, want %v", c.accept, got, c.want)
		}
	}
}

// TestChunkerText: text cut into chunks reads as the whole does, a character
// split across writes arrives whole, and invalid bytes become U+FFFD one each,
// as in a Result.
func TestChunkerText(t *testing.T) {
	raw := []byte("é€😀\xff\xfeok\xe2\x82")
	want := utf8Text(raw)
	if want != "é€😀\uFFFD\uFFFDok\uFFFD\uFFFD" {
		t.Fatalf("utf8Text = %q", want)
	}
	for size := 1; size <= len(raw); size++ {
		c := newChunker(utf8Text, "utf8")
		var chunks []api.StreamChunk
		for i := 0; i < len(raw); i += size {
			if ch, ok := c.next(int64(i), raw[i:min(i+size, len(raw))]); ok {
				chunks = append(chunks, ch)
			}
		}
		if ch, ok := c.flush(); ok {
			chunks = append(chunks, ch)
		}
		// Each chunk's offset is where its bytes start in the stream.
		var got strings.Builder
		for i, ch := range chunks {
			end := int64(len(raw))
			if i+1 < len(chunks) {
				end = chunks[i+1].Offset
			}
			if utf8Text(raw[ch.Offset:end]) != ch.Data {
				t.Fatalf("size %d: chunk %d at %d holds %q, not the bytes there", size, i, ch.Offset, ch.Data)
			}
			got.WriteString(ch.Data)
		}
		if got.String() != want {
			t.Fatalf("size %d: %q, want %q", size, got.String(), want)
		}
	}
}

// TestInvalidUTF8ReadsTheSameEverywhere: a job's output with bytes that are not
// UTF-8 reads the same in its Result, a log page, a follow and a run's stream.
func TestInvalidUTF8ReadsTheSameEverywhere(t *testing.T) {
	h := newHarness(t, nil)
	command := `printf '\377\376ok '; sleep 0.2; printf '\342\202'; sleep 0.2; printf '\254 \342\202'`
	want := "\uFFFD\uFFFDok € \uFFFD\uFFFD"
	joined := func(events []sseEvent, stream string) string {
		var b strings.Builder
		for _, ev := range events {
			if ev.name == stream {
				b.WriteString(decode[api.StreamChunk](t, []byte(ev.data)).Data)
			}
		}
		return b.String()
	}

	_, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": command, "background": true})
	id := decode[executor.Process](t, data).ID
	_, data, _ = h.do("POST", "/v1/processes/"+id+"/wait", tokA, map[string]any{"timeout": 20})
	if got := decode[executor.Result](t, data).Stdout; got != want {
		t.Fatalf("result stdout %q, want %q", got, want)
	}
	_, data, _ = h.do("GET", "/v1/processes/"+id+"/logs?stream=stdout", tokA, nil)
	if got := *decode[api.LogsResponse](t, data).Stdout; got != want {
		t.Fatalf("log page %q, want %q", got, want)
	}
	_, data, _ = h.do("GET", "/v1/processes/"+id+"/logs?follow=true", tokA, nil)
	if got := joined(readEvents(t, strings.NewReader(string(data))), "stdout"); got != want {
		t.Fatalf("follow %q, want %q", got, want)
	}

	events := readEvents(t, h.postEvents("", map[string]any{"command": command}).Body)
	if got := joined(events, "stdout"); got != want {
		t.Fatalf("run stream %q, want %q", got, want)
	}
	if got := decode[executor.Result](t, []byte(events[len(events)-1].data)).Stdout; got != want {
		t.Fatalf("run result %q, want %q", got, want)
	}
}
