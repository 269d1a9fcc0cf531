package store

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// The vault holds what its caller has sealed (a server's secrets, its
// authority's key), by key. It stores bytes as given: sealing them is the
// caller's, so that no value is ever written here in the clear.

// PutSealed stores sealed under key, replacing what was there.
func (s *Store) PutSealed(key string, sealed []byte) error {
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(vaultBucket).Put([]byte(key), sealed) })
}

// GetSealed returns what is stored under key, or ErrNotFound.
func (s *Store) GetSealed(key string) ([]byte, error) {
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(vaultBucket)
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// DeleteSealed removes key; a key that is not there is not an error.
func (s *Store) DeleteSealed(key string) error {
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(vaultBucket).Delete([]byte(key)) })
}

// SealedKeys lists the keys that begin with prefix, in order.
func (s *Store) SealedKeys(prefix string) ([]string, error) {
	var out []string
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(vaultBucket)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, _ = c.Next() {
			out = append(out, string(k))
		}
		return nil
	})
	return out, err
}
