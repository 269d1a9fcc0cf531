package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/airlock-sandbox/airlock/api"
)

// ErrorsAsJSON wraps a listener so that the answers net/http writes by itself,
// before any handler runs (a request line it cannot parse, such as an invalid
// escape in the path; headers past MaxHeaderBytes; an unsupported
// Transfer-Encoding), carry the API's one error shape instead of Go's plain
// text. Every other byte passes unchanged.
func ErrorsAsJSON(ln net.Listener) net.Listener { return jsonErrorsListener{ln} }

type jsonErrorsListener struct{ net.Listener }

func (l jsonErrorsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorsConn{Conn: c}, nil
}

// jsonErrorsConn rewrites net/http's own error answers. net/http writes each
// in one Write straight to the connection, headers ending with exactly
// goErrorHeaders; a handler's answer never has that sequence, since net/http
// sorts headers and adds Date after Content-Type.
type jsonErrorsConn struct{ net.Conn }

const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *jsonErrorsConn) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return c.Conn.Write(p)
	}
	status, text, ok := goErrorAnswer(p)
	if !ok {
		return c.Conn.Write(p)
	}
	e := api.NewError("invalid_request", "request", "request: the request line or headers could not be parsed: "+text)
	if status == http.StatusRequestHeaderFieldsTooLarge {
		e = api.NewError("headers_too_large", "headers", fmt.Sprintf("headers: the request line and headers are larger than the server's limit of %d bytes", maxHeaderBytes))
	}
	body, _ := json.Marshal(errorBody{e})
	body = append(body, '\n')
	if _, err := fmt.Fprintf(c.Conn, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		e.Status, http.StatusText(e.Status), len(body), body); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom keeps the connection's own fast path (splice) for bodies that
// net/http copies to it.
func (c *jsonErrorsConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// goErrorAnswer reads an answer net/http wrote by itself: its status, and the
// reason its plain-text body gives ("400 Bad Request: invalid URI" gives
// "invalid URI"; a bare status gives its text).
func goErrorAnswer(p []byte) (int, string, bool) {
	head, body, ok := bytes.Cut(p, []byte(goErrorHeaders))
	if !ok || bytes.ContainsAny(body, "\r\n") || bytes.ContainsRune(head, '\n') {
		return 0, "", false
	}
	code, err := strconv.Atoi(string(head[len("HTTP/1.1 "):min(len(head), len("HTTP/1.1 000"))]))
	if err != nil || code < 400 {
		return 0, "", false
	}
	text := string(body)
	if _, reason, ok := bytes.Cut(body, []byte(": ")); ok {
		text = string(reason)
	} else if code == http.StatusBadRequest {
		// net/http's bare 400: most often a path with an invalid escape.
		text = "malformed (check that the path's % escapes are each followed by two hex digits)"
	}
	return code, text, true
}
