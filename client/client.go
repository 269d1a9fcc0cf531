// Package client is a Go client of airlock's HTTP API (airlock serve). Its
// methods mirror the executor's and use its types, so a program moves from the
// library to a server by changing what it calls; `airlock --server` uses it.
//
// Errors the server answers are *api.Error, with the HTTP status, and match
// the executor's sentinels with errors.Is: api.ErrInvalidSpec (400, Field
// names the field), api.ErrNotFound (404, also for other tenants' ids),
// api.ErrRunning and api.ErrEngine.
package client

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
)

// Client talks to one airlock server as one tenant.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New returns a client of the server at serverURL (http://host:port), sending
// token as its bearer token (none when empty).
func New(serverURL, token string) (*Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://host:port or https://host:port", serverURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	// A redirect is never followed: the API sends none, and a client that
	// followed one to a cleaned path would act on another resource.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{base: u, token: token, http: &http.Client{CheckRedirect: noRedirect}}, nil
}

// RunOption changes how Run follows its run.
type RunOption func(*runOptions)

type runOptions struct {
	opened   func(id string)
	queued   func(id string)
	building func(api.ImageBuild)
}

// Opened has Run call opened with the run's id once the server has admitted it,
// before its command starts: the id a Kill from elsewhere needs.
func Opened(opened func(id string)) RunOption {
	return func(o *runOptions) { o.opened = opened }
}

// Queued has Run call queued with the run's id when, on a node of a
// cluster, the run waits in the cluster's queue for a place (up to its
// queue_timeout) before it starts.
func Queued(queued func(id string)) RunOption {
	return func(o *runOptions) { o.queued = queued }
}

// Building has Run call building, every few seconds, while the server builds
// the run's image from its recipe (a server just started builds
// airlock/debian in the background) and the run waits for it. A run without
// it, or without output writers, is answered at once that the image is being
// built.
func Building(building func(api.ImageBuild)) RunOption {
	return func(o *runOptions) { o.building = building }
}

// Run runs spec in the foreground and returns its Result, as api.Run does.
// When stdout or stderr is set, the output is copied to them as the command
// writes it (the server streams it as events); either may be nil.
func (c *Client) Run(ctx context.Context, spec api.Spec, stdout, stderr io.Writer, opts ...RunOption) (api.Result, error) {
	var res api.Result
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	if spec.Background {
		return res, api.NewError("invalid_request", "background", "background: Run runs in the foreground; Start starts a background job")
	}
	if stdout == nil && stderr == nil && o.opened == nil && o.queued == nil && o.building == nil {
		err := c.call(ctx, "POST", "/v1/processes", nil, spec, &res)
		return res, err
	}
	resp, err := c.send(ctx, "POST", "/v1/processes", url.Values{"encoding": {"base64"}}, spec, "text/event-stream")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if !isEventStream(resp) { // a server that answers in one piece
		return res, json.NewDecoder(resp.Body).Decode(&res)
	}
	done := false
	err = readEvents(resp.Body, func(event string, data []byte) error {
		switch event {
		case "open":
			var open struct{ ID string }
			if err := json.Unmarshal(data, &open); err != nil {
				return fmt.Errorf("open event: %w", err)
			}
			if o.opened != nil {
				o.opened(open.ID)
			}
		case "queued":
			var queued struct{ ID string }
			if err := json.Unmarshal(data, &queued); err != nil {
				return fmt.Errorf("queued event: %w", err)
			}
			if o.queued != nil {
				o.queued(queued.ID)
			}
		case "building":
			var b api.ImageBuild
			if err := json.Unmarshal(data, &b); err != nil {
				return fmt.Errorf("building event: %w", err)
			}
			if o.building != nil {
				o.building(b)
			}
		case "stdout", "stderr":
			var chunk api.LogChunk // base64 data decodes into its []byte
			if err := json.Unmarshal(data, &chunk); err != nil {
				return fmt.Errorf("%s event: %w", event, err)
			}
			w := stdout
			if event == "stderr" {
				w = stderr
			}
			if w != nil {
				w.Write(chunk.Data) // a closed terminal must not lose the Result
			}
		case "result":
			done = true
			return json.Unmarshal(data, &res)
		case "error":
			return errorEvent(data)
		}
		return nil
	})
	if err == nil && !done {
		err = errors.New("the server ended the run's event stream without a result")
	}
	return res, err
}

// Start starts spec as a background job, as api.Start does.
func (c *Client) Start(ctx context.Context, spec api.Spec) (api.Process, error) {
	spec.Background = true
	var p api.Process
	err := c.call(ctx, "POST", "/v1/processes", nil, spec, &p)
	return p, err
}

// Get reports a background job.
func (c *Client) Get(ctx context.Context, id string) (api.Result, error) {
	var r api.Result
	err := c.call(ctx, "GET", "/v1/processes/"+url.PathEscape(id), nil, nil, &r)
	return r, err
}

// List lists the tenant's background jobs, most recent first.
func (c *Client) List(ctx context.Context, opts api.ListOptions) (api.ProcessList, error) {
	q := url.Values{}
	if opts.State != "" {
		q.Set("state", string(opts.State))
	}
	for k, v := range opts.Labels {
		q.Add("label", k+"="+v)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var l api.ProcessList
	err := c.call(ctx, "GET", "/v1/processes", q, nil, &l)
	return l, err
}

// Logs returns a page of a job's output, exact bytes; with opts.Follow, it
// delivers every byte from opts.Offset as the job writes it, until the job has
// ended, and returns the job's final state and byte counts.
func (c *Client) Logs(ctx context.Context, id string, opts api.LogsOptions) (api.Logs, error) {
	q := url.Values{"encoding": {"base64"}}
	if opts.Stream != "" {
		q.Set("stream", opts.Stream)
	}
	if opts.Offset != 0 {
		q.Set("offset", strconv.FormatInt(opts.Offset, 10))
	}
	path := "/v1/processes/" + url.PathEscape(id) + "/logs"
	var l api.Logs // base64 strings decode into its []byte fields
	if opts.Follow == nil {
		if opts.Limit != 0 {
			q.Set("limit", strconv.FormatInt(opts.Limit, 10))
		}
		err := c.call(ctx, "GET", path, q, nil, &l)
		return l, err
	}
	q.Set("follow", "true")
	resp, err := c.send(ctx, "GET", path, q, nil, "text/event-stream")
	if err != nil {
		return l, err
	}
	defer resp.Body.Close()
	ended := false
	err = readEvents(resp.Body, func(event string, data []byte) error {
		switch event {
		case "stdout", "stderr":
			chunk := api.LogChunk{Stream: event}
			if err := json.Unmarshal(data, &chunk); err != nil {
				return fmt.Errorf("%s event: %w", event, err)
			}
			return opts.Follow(chunk)
		case "end": // id, state and byte counts, named as in Logs
			ended = true
			return json.Unmarshal(data, &l)
		case "error":
			return errorEvent(data)
		}
		return nil
	})
	if err == nil && !ended {
		if err = ctx.Err(); err == nil {
			err = errors.New("the server ended the follow before the job ended (is it shutting down?)")
		}
	}
	return l, err
}

// Kill sends signal (default SIGTERM) to the job and, unless forceAfter is 0,
// SIGKILL after forceAfter if it still runs.
func (c *Client) Kill(ctx context.Context, id, signal string, forceAfter time.Duration) (api.KillResult, error) {
	force := forceAfter.Seconds()
	var k api.KillResult
	err := c.call(ctx, "POST", "/v1/processes/"+url.PathEscape(id)+"/kill", nil,
		api.KillRequest{Signal: signal, ForceAfter: &force}, &k)
	return k, err
}

// waitPoll is the longest single long-poll of Wait.
const waitPoll = time.Minute

// Wait blocks until the job has ended and returns its Result. When ctx ends
// first, it returns the job as last seen (state running) with ctx's error.
func (c *Client) Wait(ctx context.Context, id string) (api.Result, error) {
	r := api.Result{ID: id, State: api.StateRunning}
	for {
		poll := waitPoll
		if deadline, ok := ctx.Deadline(); ok {
			poll = min(poll, time.Until(deadline))
		}
		if err := ctx.Err(); err != nil || poll <= 0 {
			return r, cmp.Or(err, context.DeadlineExceeded)
		}
		err := c.call(ctx, "POST", "/v1/processes/"+url.PathEscape(id)+"/wait", nil,
			api.WaitRequest{Timeout: api.Seconds(poll.Seconds())}, &r)
		if err != nil {
			if ctx.Err() != nil {
				return api.Result{ID: id, State: api.StateRunning}, ctx.Err()
			}
			return r, err
		}
		if r.State != api.StateRunning {
			return r, nil
		}
	}
}

// Remove forgets an ended job: its record and logs.
func (c *Client) Remove(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/processes/"+url.PathEscape(id), nil, nil, nil)
}

// Check judges a shell command (or, with argv, a program and its arguments)
// with the tenant's policy on the server; it runs nothing.
func (c *Client) Check(ctx context.Context, command string, argv []string) (api.CheckResult, error) {
	var d api.CheckResult
	err := c.call(ctx, "POST", "/v1/check", nil, api.CheckRequest{Command: command, Argv: argv}, &d)
	return d, err
}

// call sends a JSON request and decodes a JSON answer into out (unless nil).
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	resp, err := c.send(ctx, method, path, q, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// send sends a request with a JSON body (none when nil) and returns the
// response when its status is a success; otherwise the server's error as a *api.Error.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body any, accept string) (*http.Response, error) {
	if body == nil {
		return c.sendRaw(ctx, method, path, q, nil, "", accept)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.sendRaw(ctx, method, path, q, bytes.NewReader(data), "application/json", accept)
}

// sendRaw is send with a body of any type: a file, an archive.
func (c *Client) sendRaw(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType, accept string) (resp *http.Response, err error) {
	// path is escaped already (ids and file names, segment by segment): it is
	// sent as it is, never escaped again.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	u.Path, err = url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", accept)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err = c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("airlock server %s: %w", c.base.Host, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct{ Error *api.Error }
	if json.Unmarshal(data, &e) != nil || e.Error == nil {
		return nil, &api.Error{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode),
			Message: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))}
	}
	e.Error.Status = resp.StatusCode
	return nil, e.Error
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// errorEvent is the error an "error" event carries.
func errorEvent(data []byte) error {
	var e struct{ Error *api.Error }
	if err := json.Unmarshal(data, &e); err != nil || e.Error == nil {
		return fmt.Errorf("the server failed mid-stream: %s", data)
	}
	return e.Error
}

// readEvents reads a Server-Sent Events stream to its end and hands each event
// to fn; comments (keep-alives) are skipped. Lines may be long: a result event
// holds a run's whole output.
func readEvents(r io.Reader, fn func(event string, data []byte) error) error {
	br := bufio.NewReader(r)
	var event string
	var data []byte
	has := false // a data line was read: data may still be empty
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && (event != "" || has):
			if ferr := fn(cmp.Or(event, "message"), data); ferr != nil {
				return ferr
			}
			event, data, has = "", nil, false
		case bytes.HasPrefix(line, []byte("event:")):
			event = strings.TrimSpace(string(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			if has {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
			has = true
		}
		if err != nil { // io.EOF: an event not closed by a blank line is dropped, as the spec says
			return nil
		}
	}
}
