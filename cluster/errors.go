package cluster

import (
	"errors"

	"github.com/airlock-sandbox/airlock/api"
)

// Errors callers branch on. Each is wrapped with what was being done; test with
// errors.Is.
var (
	// ErrUnavailable: PostgreSQL could not be reached, or the connection was lost
	// mid-call. Running sandboxes are not affected; new requests should be
	// answered 503, and the call may be tried again later. It is the API's
	// database_unavailable.
	ErrUnavailable = api.ErrDatabaseUnavailable

	// ErrFenced: a node's write about a job was refused because the job is no
	// longer that node's at that attempt (the cluster gave it to another node,
	// put it back in the queue, or declared it lost). Nothing was changed; the
	// node must stop acting on the job and remove its container.
	ErrFenced = errors.New("job is no longer this node's at this attempt")

	// ErrNotFound: no job, node or workspace has that id.
	ErrNotFound = errors.New("not found")

	// ErrNoWork: nothing in the queue can be placed on the node now.
	ErrNoWork = errors.New("no job can be placed on this node now")

	// ErrNodeUnavailable: the node cannot take work: its lease has expired, or it
	// is draining.
	ErrNodeUnavailable = errors.New("node cannot take work")

	// ErrQueueFull: the tenant already has as many jobs waiting as its limit.
	ErrQueueFull = errors.New("queue full")

	// ErrExists: a job with that id exists already.
	ErrExists = errors.New("job exists already")

	// ErrSchemaNewer: the database's schema is of a newer airlock than this one.
	ErrSchemaNewer = errors.New("database schema is newer than this airlock")

	// ErrInvalid: an argument is out of its range; the message names it.
	ErrInvalid = errors.New("invalid argument")
)
