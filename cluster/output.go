package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// Output is a page of one stream of an ended job's output, as its node stored
// it: readable from any node, after that node is gone.
type Output struct {
	Data []byte
	// Size is how many bytes were kept; Total how many the process wrote.
	Size  int64
	Total int64
	// Next is the offset of the byte after Data.
	Next int64
}

// Truncated tells whether the process wrote more than was kept.
func (o Output) Truncated() bool { return o.Total > o.Size }

// Output reads up to limit bytes (0: all) of stream ("stdout" or "stderr") of
// the job from offset on. A job that has not ended has no output stored yet:
// the answer is empty.
func (c *Cluster) Output(ctx context.Context, id, stream string, offset, limit int64) (Output, error) {
	if stream != "stdout" && stream != "stderr" {
		return Output{}, fmt.Errorf("read output of job %s: %w: stream %q", id, ErrInvalid, stream)
	}
	if offset < 0 || limit < 0 {
		return Output{}, fmt.Errorf("read output of job %s: %w: negative offset or limit", id, ErrInvalid)
	}
	var o Output
	var data []byte
	var size, total *int64
	// substring of a bytea counts in int4 from 1; a bytea is at most 1 GB, so
	// bounding both at MaxInt32 changes nothing. A null length reads to the end.
	from := min(offset, math.MaxInt32-1) + 1
	var n *int64
	if limit > 0 {
		limit = min(limit, math.MaxInt32)
		n = &limit
	}
	err := c.pool.QueryRow(ctx, `
		select substring(o.data from $3::int for coalesce($4::int, octet_length(o.data))),
			octet_length(o.data)::bigint, o.total
		from airlock.jobs j left join airlock.job_output o on o.job = j.id and o.stream = $2
		where j.id = $1`, id, stream, from, n).Scan(&data, &size, &total)
	if errors.Is(err, pgx.ErrNoRows) {
		return Output{}, fmt.Errorf("read output of job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Output{}, c.wrap("read output of job "+id, err)
	}
	if size != nil {
		o.Size, o.Total = *size, *total
	}
	o.Data = data
	o.Next = min(offset, o.Size) + int64(len(data))
	return o, nil
}
