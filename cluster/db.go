package cluster

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

// migrations are the schema's versions, applied in order by tern; a version,
// once released, is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrateLock is the advisory lock key every airlock node takes, on one session,
// around creating the schema, reading its version and migrating it, so that
// nodes starting at once migrate one after another and the later ones find the
// work done. (tern takes a lock of its own around each of its steps too.)
const migrateLock = int64(0x6169726c6f636b) // "airlock"

// versionTable is where tern keeps the schema's version.
const versionTable = "airlock.schema_version"

// defaultConnectTimeout bounds a connection attempt when the URL names none, so
// that a call made while PostgreSQL is unreachable fails instead of hanging.
const defaultConnectTimeout = 5 * time.Second

// Cluster is a node's handle on the cluster's database. It is safe for
// concurrent use. Every method that fails because PostgreSQL cannot be reached
// returns an error that matches ErrUnavailable.
type Cluster struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// lastUnreachable is when this handle last found PostgreSQL out of reach
	// (Unix nanoseconds; 0: never). Sweep holds back for a lease after it.
	lastUnreachable atomic.Int64
}

// Option changes how Open connects.
type Option func(*options) error

type options struct {
	log      *slog.Logger
	maxConns int32
}

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("nil logger")
		}
		o.log = l
		return nil
	}
}

// WithMaxConns bounds the pool's connections to PostgreSQL (pgxpool's default
// is the larger of 4 and the number of CPUs).
func WithMaxConns(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("max conns %d: must be at least 1", n)
		}
		o.maxConns = int32(n)
		return nil
	}
}

// Open connects to the database at url (a PostgreSQL URL or keyword/value
// string), brings its schema to this version of airlock, and returns the handle.
// Several nodes may Open at once: the migration runs once, under an advisory
// lock. A database whose schema is newer than this airlock knows is refused
// (ErrSchemaNewer) rather than rolled back.
// idleInTransaction is how long a node's transaction may wait on the node
// before PostgreSQL ends its session (see Open).
const idleInTransaction = 5 * time.Second

func Open(ctx context.Context, url string, opts ...Option) (*Cluster, error) {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("open cluster: %w", err)
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	// Every transaction of this package is a few statements with no wait
	// between them. One left open longer is a node that stopped mid-way
	// (SIGSTOP, a frozen VM): PostgreSQL ends its session, so that its row
	// locks do not keep the others' sweep from declaring its jobs lost.
	if _, ok := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.Itoa(int(idleInTransaction.Milliseconds()))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := migrateSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, wrap("migrate schema", err)
	}
	return &Cluster{pool: pool, log: o.log}, nil
}

// Close closes the pool's connections.
func (c *Cluster) Close() { c.pool.Close() }

// SchemaVersion is the schema's version in the database.
func (c *Cluster) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := c.pool.QueryRow(ctx, "select version from "+versionTable).Scan(&v)
	if err != nil {
		return 0, c.wrap("read schema version", err)
	}
	return v, nil
}

func migrateSchema(ctx context.Context, pool *pgxpool.Pool) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection is closed, not returned to the pool, when done: an advisory
	// lock is the session's, and a session that ends releases it whatever
	// happened to the unlock.
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))

	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	if _, err := conn.Exec(ctx, "create schema if not exists airlock"); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return fmt.Errorf("prepare migrator: %w", err)
	}
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	have, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if want := int32(len(m.Migrations)); have > want {
		return fmt.Errorf("%w: the database is at version %d, this airlock knows versions up to %d", ErrSchemaNewer, have, want)
	}
	if err := m.Migrate(ctx); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "select pg_advisory_unlock($1)", migrateLock)
	return err
}

// wrap is the package's wrap, and notes when the database was out of reach.
func (c *Cluster) wrap(op string, err error) error {
	err = wrap(op, err)
	if errors.Is(err, ErrUnavailable) {
		c.lastUnreachable.Store(time.Now().UnixNano())
	}
	return err
}

// sinceUnreachable is how long ago this handle last found the database out of
// reach; a very long time when it never did.
func (c *Cluster) sinceUnreachable() time.Duration {
	t := c.lastUnreachable.Load()
	if t == 0 {
		return math.MaxInt64
	}
	return time.Since(time.Unix(0, t))
}

// wrap names the operation that failed and marks the failures that mean
// PostgreSQL is out of reach with ErrUnavailable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if unreachable(err) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// unreachable tells whether err means the database could not be reached or the
// connection was lost, rather than that the statement was refused.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	case errors.As(err, &pgErr):
		// Class 08 is a connection exception; 57P01..57P03 are an administrator's
		// shutdown, a crash shutdown, and "the database system is starting up".
		return pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}
