package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// Server-Sent Events: the follow of a job's logs and the event stream of a
// foreground run.

// followLogs streams a job's output as Server-Sent Events: an event per chunk
// ("stdout" or "stderr", data {offset, data}), then "end" with the job's outcome
// once it has ended and every byte is delivered. Before the first byte, a failure
// is an ordinary error response; after it, an "error" event.
func (a *httpAPI) followLogs(w http.ResponseWriter, r *http.Request, tenant string, req api.LogsRequest) error {
	enc, err := encoder(req.Encoding)
	if err != nil {
		return err
	}
	ctx, cancel := mergeCancel(r.Context(), a.streams)
	defer cancel()
	es := newEventStream(w)
	defer es.close() // no write after the handler returns
	chunks := map[string]*chunker{}
	for _, stream := range []string{"stdout", "stderr"} {
		c := newChunker(enc, req.Encoding)
		chunks[stream] = &c
	}
	begin := func() {
		extend(w, 0)
		es.send("open", map[string]any{"id": req.ID, "encoding": cmp.Or(req.Encoding, "utf8")})
	}
	res, err := a.svc.Follow(ctx, tenant, req.ID, executor.LogsOptions{Stream: req.Stream, Offset: req.Offset,
		Follow: func(c executor.LogChunk) error {
			if chunk, ok := chunks[c.Stream].next(c.Offset, c.Data); ok {
				return es.send(c.Stream, chunk)
			}
			return nil
		}}, begin)
	switch {
	case err != nil && !es.started():
		return err // refused before the stream began: an ordinary error answer
	case err != nil:
		if ctx.Err() == nil {
			es.send("error", errorBody{a.errorOf(ctx, err)})
		}
		return nil
	}
	for _, stream := range []string{"stdout", "stderr"} {
		if chunk, ok := chunks[stream].flush(); ok {
			es.send(stream, chunk)
		}
	}
	es.send("end", api.LogsEnd{ID: res.ID, State: res.State, ExitCode: res.ExitCode, Signal: res.Signal,
		TimedOut: res.TimedOut, OOMKilled: res.OOMKilled, DurationMS: res.DurationMS,
		StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes})
	return nil
}

// eventStream writes Server-Sent Events. Its headers go out with the first event,
// so a request that fails before any event gets an ordinary error response; from
// then on a keep-alive comment goes out every heartbeat until close.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	mu      sync.Mutex
	open    bool
	stop    chan struct{}
	beating chan struct{} // closed when the keep-alive has stopped
}

func newEventStream(w http.ResponseWriter) *eventStream {
	return &eventStream{w: w, rc: http.NewResponseController(w), stop: make(chan struct{}), beating: make(chan struct{})}
}

// send writes one event whose data is v as JSON, and flushes it.
func (s *eventStream) send(event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		s.begin()
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	return s.rc.Flush()
}

// begin writes the headers and starts the keep-alive; s.mu is held.
func (s *eventStream) begin() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.open = true
	go func() {
		defer close(s.beating)
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.mu.Lock()
				io.WriteString(s.w, ": keep-alive\n\n")
				s.rc.Flush()
				s.mu.Unlock()
			}
		}
	}()
}

// started reports whether the first event went out.
func (s *eventStream) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// close stops the keep-alive; nothing is written after it returns.
func (s *eventStream) close() {
	close(s.stop)
	if s.started() {
		<-s.beating
	}
}

// streamWriter turns one output stream of a run into events {offset, data}.
type streamWriter struct {
	es     *eventStream
	stream string
	chunks chunker
}

func (c *streamWriter) Write(p []byte) (int, error) {
	if chunk, ok := c.chunks.next(c.chunks.end, p); ok {
		if err := c.es.send(c.stream, chunk); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush sends what the stream held back.
func (c *streamWriter) flush() {
	if chunk, ok := c.chunks.flush(); ok {
		c.es.send(c.stream, chunk)
	}
}

// chunker cuts one stream's bytes into chunks {offset, data}. In utf8, a
// character cut by a chunk's end waits for the next chunk (invalid bytes become
// U+FFFD one by one), so streamed text reads as the Result and log pages do.
type chunker struct {
	enc     func([]byte) string
	text    bool  // utf8: hold back a cut character
	end     int64 // offset just past the bytes taken so far
	pending []byte
}

func newChunker(enc func([]byte) string, encoding string) chunker {
	return chunker{enc: enc, text: encoding != "base64"}
}

// next takes p, the stream's bytes from offset at, and returns the chunk to send.
func (c *chunker) next(at int64, p []byte) (api.StreamChunk, bool) {
	if !c.text {
		c.end = at + int64(len(p))
		return api.StreamChunk{Offset: at, Data: c.enc(p)}, len(p) > 0
	}
	start := at - int64(len(c.pending))
	buf := append(c.pending, p...)
	keep := cutRune(buf)
	c.pending = append([]byte(nil), buf[len(buf)-keep:]...)
	c.end = at + int64(len(p))
	out := buf[:len(buf)-keep]
	return api.StreamChunk{Offset: start, Data: c.enc(out)}, len(out) > 0
}

// flush returns the bytes held back, at the stream's end.
func (c *chunker) flush() (api.StreamChunk, bool) {
	if len(c.pending) == 0 {
		return api.StreamChunk{}, false
	}
	chunk := api.StreamChunk{Offset: c.end - int64(len(c.pending)), Data: c.enc(c.pending)}
	c.pending = nil
	return chunk, true
}

// cutRune returns how many bytes at the end of b begin a character that the
// next bytes may complete.
func cutRune(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if b[i] >= 0xC2 && b[i] <= 0xF4 && !utf8.FullRune(b[i:]) {
				return len(b) - i
			}
			return 0
		}
	}
	return 0
}

// runEvents answers a foreground run as Server-Sent Events, for a client that
// asked for them (Accept: text/event-stream): "queued" with the run's id if it
// has to wait for room (a refusal for the wait is then an "error" event),
// "open" with the run's id once it is admitted (keep-alives follow, so a silent run holds its connection),
// "building" {image, stage, percent} every few seconds while the server
// builds the run's image from its recipe (at its start), then
// "stdout" and "stderr" chunks {offset, data} as the command writes them, then
// "result" with the whole Result. Refusals before the start (a bad field, 429)
// are ordinary error responses, and a policy refusal is a lone "result"; an
// error after the first event is an "error" event.
func (a *httpAPI) runEvents(w http.ResponseWriter, r *http.Request, tenant string, spec executor.Spec, admitted func(executor.Spec)) error {
	encoding := r.URL.Query().Get("encoding")
	enc, err := encoder(encoding)
	if err != nil {
		return err
	}
	es := newEventStream(w)
	defer es.close()
	begin := func(id string) { es.send("open", map[string]any{"id": id, "encoding": cmp.Or(encoding, "utf8")}) }
	queued := func(id string) { es.send("queued", map[string]any{"id": id}) }
	stdout := &streamWriter{es: es, stream: "stdout", chunks: newChunker(enc, encoding)}
	stderr := &streamWriter{es: es, stream: "stderr", chunks: newChunker(enc, encoding)}
	// A run whose image the server is still building waits for it, hearing
	// how far it has come; the run's own lifetime starts again after it.
	asAdmitted := spec
	lifetime := func(s executor.Spec) { asAdmitted = s; admitted(s) }
	ctx := executor.WaitForImageBuilds(r.Context(), func(b executor.ImageBuild) {
		admitted(asAdmitted)
		es.send("building", b)
	})
	res, err := a.svc.Run(ctx, tenant, spec, "http", r.RemoteAddr, RunFollower{Admitted: lifetime, Queued: queued, Begin: begin, Stdout: stdout, Stderr: stderr})
	switch {
	case err == nil:
		stdout.flush()
		stderr.flush()
		es.send("result", res)
	case !es.started():
		return err
	default:
		es.send("error", errorBody{a.errorOf(r.Context(), err)})
	}
	return nil
}

// wantsEvents reports whether the client asked for Server-Sent Events: its
// Accept names text/event-stream, with a q above 0 and no lower than JSON's.
// (Accept: */* is curl's default, and asks for nothing in particular: JSON.)
func wantsEvents(r *http.Request) bool {
	events, named := acceptQ(r, "text/event-stream")
	json, _ := acceptQ(r, "application/json")
	return named && events > 0 && events >= json
}

// acceptQ is the quality the request's Accept gives the media type mt, from its
// most specific matching range (RFC 9110, 12.5.1), and whether that range names
// mt itself. With no Accept every type is acceptable.
func acceptQ(r *http.Request, mt string) (q float64, named bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return 1, false
	}
	typ, _, _ := strings.Cut(mt, "/")
	best := -1
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			rng, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			rng = strings.ToLower(strings.TrimSpace(rng))
			specific := -1
			switch rng {
			case mt:
				specific = 2
			case typ + "/*":
				specific = 1
			case "*/*":
				specific = 0
			}
			if specific <= best {
				continue
			}
			best, q = specific, 1
			for p := range strings.SplitSeq(params, ";") {
				if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
						q = f
					}
				}
			}
		}
	}
	return q, best == 2
}
