package server

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// Pages of a job's output, in the encoding the caller asks for.

// encoder returns the function that writes output bytes into a JSON string in
// the named encoding.
func encoder(name string) (func([]byte) string, error) {
	switch name {
	case "", "utf8":
		return utf8Text, nil
	case "base64":
		return base64.StdEncoding.EncodeToString, nil
	}
	return nil, api.NewError("invalid_request", "encoding", fmt.Sprintf("encoding: %q is not utf8 or base64", name))
}

func logsResponse(l executor.Logs, enc func([]byte) string, encoding string, streams string) api.LogsResponse {
	out := api.LogsResponse{ID: l.ID, State: l.State, Encoding: encoding, StdoutSize: l.StdoutSize, StderrSize: l.StderrSize,
		StdoutBytes: l.StdoutBytes, StderrBytes: l.StderrBytes, Truncated: l.Truncated, StdoutNext: l.StdoutNext, StderrNext: l.StderrNext}
	if streams != "stderr" {
		s := enc(l.Stdout)
		out.Stdout = &s
	}
	if streams != "stdout" {
		s := enc(l.Stderr)
		out.Stderr = &s
	}
	return out
}

// utf8Text is b as text: each byte that is not part of valid UTF-8 becomes one
// U+FFFD, exactly as encoding/json writes a Result's output, so that a result, a
// log page and a stream of chunks read the same.
func utf8Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteString("\uFFFD")
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// logsPage answers a api.LogsRequest with a page in the chosen encoding; HTTP and MCP share it.
func (s *Service) logsPage(ctx context.Context, tenant string, req api.LogsRequest) (api.LogsResponse, error) {
	enc, err := encoder(req.Encoding)
	if err != nil {
		return api.LogsResponse{}, err
	}
	l, err := s.Logs(ctx, tenant, req.ID, executor.LogsOptions{Stream: req.Stream, Offset: req.Offset, Limit: req.Limit})
	if err != nil {
		return api.LogsResponse{}, err
	}
	return logsResponse(l, enc, cmp.Or(req.Encoding, "utf8"), req.Stream), nil
}
