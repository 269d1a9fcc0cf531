package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

const (
	defaultLogsLimit = 1 << 20
	maxLogsLimit     = 64 << 20
	followPoll       = 50 * time.Millisecond
)

// Logs returns a job's output from its log files, which outlive its container and
// any airlock process.
func (e *Executor) Logs(ctx context.Context, id string, opts LogsOptions) (Logs, error) {
	streams, err := checkLogs(&opts)
	if err != nil {
		return Logs{}, err
	}
	j, err := e.job(id)
	if err != nil {
		return Logs{}, err
	}
	e.adopt(j)
	if opts.Follow != nil {
		return e.follow(ctx, j, streams, opts)
	}
	out := e.logSizes(j)
	// A stream not asked for is not read: its next page starts where it would have.
	out.StdoutNext, out.StderrNext = opts.Offset, opts.Offset
	for _, s := range streams {
		b, err := readAt(e.logPath(id, s), opts.Offset, opts.Limit)
		if err != nil {
			return Logs{}, fmt.Errorf("%w: read %s log: %v", ErrStore, streamNames[s], err)
		}
		if s == stdoutIdx {
			out.Stdout, out.StdoutNext = b, opts.Offset+int64(len(b))
		} else {
			out.Stderr, out.StderrNext = b, opts.Offset+int64(len(b))
		}
	}
	return out, nil
}

// CheckLogs reports the first invalid field of opts, as Logs would, and reads
// nothing: for a caller that must refuse a follow before it starts answering,
// or that reads the output elsewhere (a cluster's). It returns opts with the
// default limit filled in.
func CheckLogs(opts LogsOptions) (LogsOptions, error) {
	_, err := checkLogs(&opts)
	return opts, err
}

// checkLogs checks opts, fills in the default limit, and returns the streams.
func checkLogs(opts *LogsOptions) ([]int, error) {
	streams, err := chooseStreams(opts.Stream)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Offset < 0:
		return nil, &SpecError{Field: "offset", Reason: "must not be negative"}
	case opts.Limit < 0 || opts.Limit > maxLogsLimit:
		return nil, &SpecError{Field: "limit", Reason: fmt.Sprintf("%d is outside 0..%d", opts.Limit, maxLogsLimit)}
	case opts.Limit == 0:
		opts.Limit = defaultLogsLimit
	}
	return streams, nil
}

// follow delivers the chosen streams from opts.Offset as the files grow, until
// the job has ended and everything is delivered.
func (e *Executor) follow(ctx context.Context, j *job, streams []int, opts LogsOptions) (Logs, error) {
	next := [2]int64{opts.Offset, opts.Offset}
	ended := j.ended()
	lastLoad := time.Now()
	for {
		// Read the record before the files: once it says ended, the files are whole.
		if !ended && time.Since(lastLoad) >= 4*followPoll {
			fresh, err := e.job(j.ID)
			if err != nil {
				return Logs{}, err
			}
			j, ended, lastLoad = fresh, fresh.ended(), time.Now()
			e.adopt(j)
		}
		for _, s := range streams {
			for {
				b, err := readAt(e.logPath(j.ID, s), next[s], defaultLogsLimit)
				if err != nil {
					return Logs{}, fmt.Errorf("%w: read %s log: %v", ErrStore, streamNames[s], err)
				}
				if len(b) == 0 {
					break
				}
				if err := opts.Follow(LogChunk{Stream: streamNames[s], Offset: next[s], Data: b}); err != nil {
					return Logs{}, err
				}
				next[s] += int64(len(b))
			}
		}
		if ended {
			out := e.logSizes(j)
			out.StdoutNext, out.StderrNext = next[stdoutIdx], next[stderrIdx]
			return out, nil
		}
		select {
		case <-ctx.Done():
			out := e.logSizes(j)
			out.StdoutNext, out.StderrNext = next[stdoutIdx], next[stderrIdx]
			return out, context.Cause(ctx)
		case <-time.After(followPoll):
		}
	}
}

// logSizes reports the job's log sizes and totals, with no bytes.
func (e *Executor) logSizes(j *job) Logs {
	var size, total [2]int64
	for s := range size {
		size[s] = fileSize(e.logPath(j.ID, s))
		total[s] = max(j.Log.Total[s], size[s])
	}
	return Logs{
		ID: j.ID, State: j.State,
		StdoutSize: size[stdoutIdx], StderrSize: size[stderrIdx],
		StdoutBytes: total[stdoutIdx], StderrBytes: total[stderrIdx],
		Truncated: total[stdoutIdx] > size[stdoutIdx] || total[stderrIdx] > size[stderrIdx],
	}
}

// result is the job as a Result: the record, with output read from its files.
func (e *Executor) result(j *job) (Result, error) {
	r := j.outcome()
	for s := range streamNames {
		path := e.logPath(j.ID, s)
		size := fileSize(path)
		total := max(j.Log.Total[s], size)
		head, err := readAt(path, 0, j.MaxOutput)
		if err != nil {
			return r, fmt.Errorf("%w: read %s log: %v", ErrStore, streamNames[s], err)
		}
		// The file ends where the stream does unless the stream outgrew the cap;
		// then the watcher's saved tail has the end.
		var tail []byte
		if total > size {
			tail, _ = os.ReadFile(path + ".tail")
		} else {
			tail, _ = readAt(path, max(0, size-minTailBytes), minTailBytes)
		}
		if s == stdoutIdx {
			r.Stdout, r.StdoutTruncated, r.StdoutBytes, r.StdoutTail = string(head), total > int64(len(head)), total, lastLines(tail, j.TailLines)
		} else {
			r.Stderr, r.StderrTruncated, r.StderrBytes, r.StderrTail = string(head), total > int64(len(head)), total, lastLines(tail, j.TailLines)
		}
	}
	return r, nil
}

func (e *Executor) logPath(id string, stream int) string {
	return filepath.Join(e.store.JobDir(id), streamNames[stream])
}

func chooseStreams(name string) ([]int, error) {
	switch name {
	case "", "both":
		return []int{stdoutIdx, stderrIdx}, nil
	case "stdout":
		return []int{stdoutIdx}, nil
	case "stderr":
		return []int{stderrIdx}, nil
	}
	return nil, &SpecError{Field: "stream", Reason: fmt.Sprintf("%q is not stdout, stderr or both", name)}
}

// readAt reads up to limit bytes of the file from offset; a missing file is empty.
func readAt(path string, offset, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if offset >= size || limit <= 0 {
		return nil, nil
	}
	b := make([]byte, min(limit, size-offset))
	n, err := f.ReadAt(b, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
