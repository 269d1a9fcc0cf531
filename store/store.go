// Package store keeps airlock's background job records in an embedded bbolt
// database under a data directory, with each job's log files beside it.
//
// Several airlock processes may share one data directory (a server and CLI
// commands, or a process that crashed and the one that replaces it): the database
// is opened for each transaction and closed again, so its file lock is held only
// for the moment a record is read or written.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ErrNotFound is returned for an id the store has no record of.
var ErrNotFound = errors.New("not found")

var (
	jobsBucket  = []byte("jobs")
	metaBucket  = []byte("meta")
	vaultBucket = []byte("vault")
	storeIDKey  = []byte("store_id")
)

// lockTimeout bounds the wait for another process's transaction to finish.
const lockTimeout = 30 * time.Second

// Store is one data directory. It is safe for concurrent use.
type Store struct {
	dir string
	id  string
	// mu serialises this process's transactions: a file lock taken through a
	// second descriptor of the same process would wait for the first.
	mu sync.Mutex
}

// DefaultDir is $AIRLOCK_DATA, or airlock's directory under the user's data home
// ($XDG_DATA_HOME, else ~/.local/share).
func DefaultDir() string {
	if d := os.Getenv("AIRLOCK_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "airlock")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "airlock")
	}
	return filepath.Join(os.TempDir(), "airlock")
}

// Open creates dir and its database if needed, and returns the store.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "jobs"), 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s := &Store{dir: dir}
	err := s.update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(jobsBucket); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(vaultBucket); err != nil {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if id := meta.Get(storeIDKey); id != nil {
			s.id = string(id)
			return nil
		}
		s.id = newStoreID()
		return meta.Put(storeIDKey, []byte(s.id))
	})
	if err != nil {
		return nil, fmt.Errorf("open store in %s: %w", dir, err)
	}
	return s, nil
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

// ID identifies this data directory; it never changes once created. Containers are
// labelled with it so that a store only ever reconciles its own.
func (s *Store) ID() string { return s.id }

// JobDir is where the job's files live.
func (s *Store) JobDir(id string) string { return filepath.Join(s.dir, "jobs", id) }

// Get reads the record of id into a T.
func Get[T any](s *Store, id string) (T, error) {
	var v T
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket).Get([]byte(id))
		if b == nil {
			return ErrNotFound
		}
		return json.Unmarshal(b, &v)
	})
	return v, err
}

// All reads every record.
func All[T any](s *Store) ([]T, error) {
	var all []T
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(jobsBucket).ForEach(func(_, b []byte) error {
			var v T
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			all = append(all, v)
			return nil
		})
	})
	return all, err
}

// Put writes the record of id, replacing any earlier one.
func Put(s *Store, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(jobsBucket).Put([]byte(id), b) })
}

// Update reads the record of id, lets fn change it, and writes it back, all in one
// transaction, so that no other process's change to it is lost. When fn fails
// nothing is written and its error is returned.
func Update[T any](s *Store, id string, fn func(*T) error) (T, error) {
	var v T
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket)
		raw := b.Get([]byte(id))
		if raw == nil {
			return ErrNotFound
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), out)
	})
	return v, err
}

// Delete removes the record of id and the job's files.
func (s *Store) Delete(id string) error {
	err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(jobsBucket).Delete([]byte(id)) })
	if err != nil {
		return err
	}
	return os.RemoveAll(s.JobDir(id))
}

// TryLock takes the job's exclusive lock without waiting. ok is false when another
// holder (this process or another) has it. The operating system drops the lock
// when its process dies, so a crashed owner never keeps a job locked.
func (s *Store) TryLock(id string) (unlock func(), ok bool, err error) {
	dir := s.JobDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}

func (s *Store) view(fn func(*bolt.Tx) error) error {
	return s.with(true, func(db *bolt.DB) error { return db.View(fn) })
}

func (s *Store) update(fn func(*bolt.Tx) error) error {
	return s.with(false, func(db *bolt.DB) error { return db.Update(fn) })
}

// with opens the database for one transaction.
func (s *Store) with(readOnly bool, fn func(*bolt.DB) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, err := bolt.Open(filepath.Join(s.dir, "airlock.db"), 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly})
	if err != nil {
		return err
	}
	err = fn(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func newStoreID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
