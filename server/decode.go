package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"mime"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
)

// readJSON reads one JSON object from the body into dst (a pointer to a struct).
// The body must be application/json (415 otherwise: a browser cannot send that
// type across origins without a preflight, which the server never grants), and
// at most limit bytes (413). An empty body leaves dst as it is when optional.
// Keys are matched exactly, as the document spells them; see decodeJSON.
func readJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64, optional bool) error {
	if r.ContentLength != 0 {
		if err := jsonContentType(r.Header.Get("Content-Type")); err != nil {
			return err
		}
	}
	body := checkLength(w, r, limit)
	data, err := io.ReadAll(body)
	var maxErr *http.MaxBytesError
	switch {
	case body.fault != nil:
		return body.fault
	case errors.As(err, &maxErr):
		return tooLarge(r, err)
	case err != nil:
		return badField("body", "could not be read: %v", err)
	case len(bytes.TrimSpace(data)) == 0 && optional:
		return nil
	}
	err = decodeJSON(data, dst)
	var e *api.Error
	if errors.As(err, &e) && e.Message == cutShort && r.ContentLength > 0 {
		// The body ended where its Content-Length said: a longer one was cut there.
		e.Message += fmt.Sprintf(" at the %d bytes of its Content-Length", r.ContentLength)
	}
	return err
}

// lengthChecked is a request's body that tells a body that disagrees with its
// Content-Length from one that failed otherwise. net/http reads exactly
// Content-Length bytes: a body that ends sooner (the client closed its side,
// or went quiet past the server's read timeout) fails its read, and must not
// reach a handler's caller as an internal or engine error.
type lengthChecked struct {
	r      io.Reader
	w      http.ResponseWriter
	length int64
	n      int64
	// fault is the 400 naming the body, once it disagreed with its length.
	fault *api.Error
	// takeConn (an upload) has the connection taken over at the body's end,
	// to look for bytes past it (see surplus); conn is then the connection,
	// on which respond writes the one answer.
	takeConn bool
	conn     net.Conn
	// idle, when set, is how long the body may go without a byte, until the
	// deadline of its whole transfer (see streamed).
	idle  time.Duration
	until time.Time
}

// surplusWait is how long an upload's connection is watched, at the body's
// end, for bytes past its Content-Length that have not yet arrived.
const surplusWait = 10 * time.Millisecond

// surplus looks, once the Content-Length bytes are read, for more on the
// connection. net/http would read them as the next request (and answer that
// with a bare 400), after the upload had stored the body cut at the length:
// the connection is taken over instead, and bytes past the body make it a 400
// with nothing stored. The answer then closes the connection; airlock takes no
// request pipelined after an upload.
func (b *lengthChecked) surplus() {
	conn, brw, err := http.NewResponseController(b.w).Hijack()
	if err != nil {
		b.takeConn = false
		return
	}
	b.conn = conn
	extra := brw.Reader.Buffered() > 0
	if !extra {
		conn.SetReadDeadline(time.Now().Add(surplusWait))
		var one [1]byte
		k, _ := conn.Read(one[:])
		extra = k > 0
		conn.SetReadDeadline(time.Time{})
	}
	if extra {
		b.fault = badField("body", "longer than the %d bytes its Content-Length announced", b.length)
	}
}

// respond writes the answer to an upload whose connection was taken over
// (surplus): e, or 204 when e is nil; then it closes the connection.
func (b *lengthChecked) respond(e *api.Error) {
	var msg string
	if e == nil {
		msg = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
	} else {
		data, _ := json.Marshal(errorBody{e})
		data = append(data, '\n')
		msg = fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			e.Status, http.StatusText(e.Status), len(data), data)
	}
	b.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(b.conn, msg)
	b.conn.Close()
}

// checkLength wraps r's body, bounded by limit (a MaxBytesReader's 413).
func checkLength(w http.ResponseWriter, r *http.Request, limit int64) *lengthChecked {
	return &lengthChecked{r: http.MaxBytesReader(w, r.Body, limit), w: w, length: r.ContentLength}
}

// streamed makes b the body of an upload that may take up to total: the
// server's read timeout (its ReadTimeout, when it has one) then bounds the
// wait for each next byte instead of the whole body.
func (b *lengthChecked) streamed(r *http.Request, total time.Duration) *lengthChecked {
	b.takeConn = true
	b.until = time.Now().Add(total)
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		b.idle = srv.ReadTimeout
	}
	return b
}

func (b *lengthChecked) Read(p []byte) (int, error) {
	if b.idle > 0 {
		// An upload lifted the server's read timeout for its whole transfer;
		// a body that stops arriving is still given up, an idle timeout
		// after its last byte (and at the transfer's end at the latest).
		next := time.Now().Add(b.idle)
		if next.After(b.until) {
			next = b.until
		}
		http.NewResponseController(b.w).SetReadDeadline(next)
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF && b.takeConn && b.conn == nil && b.fault == nil {
		b.surplus()
		if b.fault != nil {
			return n, b.fault
		}
	}
	var maxErr *http.MaxBytesError
	if err == nil || err == io.EOF || b.fault != nil || errors.As(err, &maxErr) {
		return n, err
	}
	// Every other failure to read a body is the client's: a body cut short,
	// one that stopped arriving, chunked framing that does not parse.
	var ne net.Error
	switch {
	case b.length > 0 && errors.Is(err, io.ErrUnexpectedEOF):
		b.fault = badField("body", "%d of the %d bytes its Content-Length announced arrived before the client closed the connection", b.n, b.length)
	case b.length > 0 && errors.As(err, &ne) && ne.Timeout():
		b.fault = badField("body", "%d of the %d bytes its Content-Length announced arrived within the server's read timeout", b.n, b.length)
	case errors.As(err, &ne) && ne.Timeout():
		b.fault = badField("body", "stopped arriving: %d bytes came, then none within the server's read timeout", b.n)
	case errors.Is(err, io.ErrUnexpectedEOF):
		b.fault = badField("body", "cut short: the client closed the connection after %d bytes, before the body's end", b.n)
	default:
		b.fault = badField("body", "could not be read after %d bytes: %v", b.n, err)
	}
	// The read timeout passed, and the write deadline with it: the answer
	// gets a moment of its own.
	http.NewResponseController(b.w).SetWriteDeadline(time.Now().Add(10 * time.Second))
	return n, b.fault
}

// jsonContentType refuses a body that does not say it is JSON.
func jsonContentType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	if ct == "" {
		ct = "none"
	} else {
		ct = strconv.Quote(ct)
	}
	return api.NewError("unsupported_media_type", "Content-Type", fmt.Sprintf("Content-Type: %s; the body must be sent as application/json", ct))
}

func badField(field, format string, args ...any) *api.Error {
	return api.NewError("invalid_request", field, field+": "+fmt.Sprintf(format, args...))
}

// decodeJSON decodes data, one JSON object, into dst, more strictly than
// encoding/json: keys must match a field's JSON name exactly (Go's decoder would
// take "COMMAND" for "command", so one body could say two things), a key may not
// appear twice in an object, and an integer field takes any integral number
// ("1e9", "1073741824.0"). Errors name the field in the API's words, never a Go
// type. A UTF-8 byte order mark before the object is ignored.
func decodeJSON(data []byte, dst any) error {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t := reflect.TypeOf(dst).Elem()
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err, dec)
	}
	if tok != json.Delim('{') {
		return badField("body", "expected a JSON object, got %s", tokenKind(tok))
	}
	v, err := walkObject(dec, t, "")
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return badField("body", "trailing data after the JSON object")
	}
	// The walk checked every key, type and number; the standard decoder fills dst.
	norm, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("re-encode request: %w", err)
	}
	return json.Unmarshal(norm, dst)
}

// cutShort is the message of a body whose JSON object does not end.
const cutShort = "body: the JSON object is cut short"

// syntaxError turns a tokenizer failure into an error about the body.
func syntaxError(err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return badField("body", "empty; expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badField("body", "%s", strings.TrimPrefix(cutShort, "body: "))
	case errors.As(err, &se):
		return badField("body", "invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	return badField("body", "invalid JSON at byte %d: %s", dec.InputOffset(), strings.TrimPrefix(err.Error(), "json: "))
}

// walk reads the value that starts with tok and checks it against t. It returns
// the value as encoding/json would give it to an `any`, with integral numbers
// bound for integer fields rewritten in plain digits.
func walk(dec *json.Decoder, tok json.Token, t reflect.Type, path string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if tok == nil { // null: the zero value, as encoding/json does
		return nil, nil
	}
	want := kindName(t)
	wrong := func() (any, error) {
		return nil, badField(fieldName(path), "expected %s, got %s", want, tokenKind(tok))
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch {
		case tok == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
			return walkObject(dec, t, path)
		case tok == '[' && t.Kind() == reflect.Slice:
			var out []any
			for i := 0; dec.More(); i++ {
				next, err := dec.Token()
				if err != nil {
					return nil, syntaxError(err, dec)
				}
				v, err := walk(dec, next, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(err, dec)
			}
			return out, nil
		}
		// The wrong kind of container: report it, without reading what is inside.
		return wrong()
	case string:
		if t.Kind() != reflect.String {
			return wrong()
		}
		return tok, nil
	case bool:
		if t.Kind() != reflect.Bool {
			return wrong()
		}
		return tok, nil
	case json.Number:
		return number(tok, t, path, want)
	}
	return wrong()
}

// walkObject reads the members of an object whose '{' has been read.
func walkObject(dec *json.Decoder, t reflect.Type, path string) (any, error) {
	var fields map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	out := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err, dec)
		}
		key := tok.(string) // the decoder allows only strings as keys
		sub := key
		if path != "" {
			sub = path + "." + key
		}
		if _, dup := out[key]; dup {
			return nil, badField(fieldName(sub), "appears more than once")
		}
		var ft reflect.Type
		if fields == nil {
			ft = t.Elem()
		} else {
			var ok bool
			if ft, ok = fields[key]; !ok {
				if key == "" {
					return nil, badField(fieldName(path), `unknown field ""`)
				}
				return nil, badField(fieldName(sub), "unknown field")
			}
		}
		if tok, err = dec.Token(); err != nil {
			return nil, syntaxError(err, dec)
		}
		v, err := walk(dec, tok, ft, sub)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(err, dec)
	}
	return out, nil
}

// number checks a JSON number against a numeric field.
func number(n json.Number, t reflect.Type, path, want string) (any, error) {
	field := fieldName(path)
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, badField(field, "%s is out of range", n)
		}
		return n, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return nil, badField(field, "expected %s, got a number", want)
	}
	f, _, err := big.ParseFloat(string(n), 10, 256, big.ToNearestEven)
	if err != nil || !f.IsInt() {
		return nil, badField(field, "%s is not a whole number", n)
	}
	i, _ := f.Int(nil)
	lo, hi := big.NewInt(math.MinInt64), new(big.Int).SetUint64(math.MaxUint64)
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		lo = big.NewInt(0)
	} else {
		hi = big.NewInt(math.MaxInt64)
	}
	if bits := t.Bits(); bits < 64 {
		hi = new(big.Int).Lsh(big.NewInt(1), uint(bits))
		if lo.Sign() < 0 {
			lo = new(big.Int).Neg(new(big.Int).Rsh(hi, 1))
			hi = new(big.Int).Rsh(hi, 1)
		}
		hi.Sub(hi, big.NewInt(1))
	}
	if i.Cmp(lo) < 0 || i.Cmp(hi) > 0 {
		return nil, badField(field, "%s is out of range", n)
	}
	return json.Number(i.String()), nil
}

// jsonFields maps the JSON names of struct t's fields to their types, as
// encoding/json sees them: tags honoured, "-" skipped, embedded structs flattened.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if ft := f.Type; f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(ft))
				continue
			}
		}
		if f.IsExported() {
			out[cmp.Or(name, f.Name)] = f.Type
		}
	}
	return out
}

// kindName is how the API document names the JSON type of a Go type.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}

// tokenKind names the JSON type of what the body holds.
func tokenKind(tok json.Token) string {
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case nil:
		return "null"
	}
	return "a value"
}

// fieldName is the field an error names: the body itself at the top.
func fieldName(path string) string {
	if path == "" {
		return "body"
	}
	return path
}
