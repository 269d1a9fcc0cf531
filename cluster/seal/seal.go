// Package seal keeps a queued job's request in the cluster's queue: the
// admitted spec with the policy's decision on it, its env and stdin (often a
// caller's secrets) sealed.
//
// Any node may run a queued job, so the queue holds its whole request. Its
// env and stdin are encrypted with a key derived from the tenant's token,
// which every node of the cluster holds and the database does not
// (docs/cluster.md, "Env and stdin"). A tenant without a token (a server open
// to anonymous callers) has no secret to derive a key from: its env and stdin
// are stored as sent. Either way they are deleted from the row when the job
// ends.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/policy"
)

// Queued is a request as the queue holds it: the admitted spec with the
// policy's decision on it, taken once on the node that queued it. The node that
// runs it reads both and judges nothing again.
type Queued struct {
	api.Spec
	Decision policy.Decision `json:"decision"`
	// Sealed is the env and stdin (sealedParts as JSON), encrypted with
	// AES-256-GCM: the nonce, then the ciphertext; the job's id is the
	// associated data, so a sealed part cannot be moved to another job.
	Sealed []byte `json:"sealed,omitempty"`
}

type sealedParts struct {
	Env   map[string]string `json:"env,omitempty"`
	Stdin *string           `json:"stdin,omitempty"`
}

// sealInfo names what the derived key is for.
const sealInfo = "airlock: the env and stdin of a queued job"

// Key is the sealing key of the tenant whose token this is.
func Key(token string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(token), nil, sealInfo, 32)
}

// Spec is the queue's copy of job id's admitted spec and decision: its env
// and stdin sealed with key, or as sent when key is nil.
func Spec(key []byte, id string, spec api.Spec, d policy.Decision) (json.RawMessage, error) {
	q := Queued{Spec: spec, Decision: d}
	if key != nil && (len(spec.Env) > 0 || spec.Stdin != nil) {
		plain, err := json.Marshal(sealedParts{Env: spec.Env, Stdin: spec.Stdin})
		if err != nil {
			return nil, err
		}
		aead, err := newAEAD(key)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, aead.NonceSize())
		rand.Read(nonce)
		q.Sealed = aead.Seal(nonce, nonce, plain, []byte(id))
		q.Env, q.Stdin = nil, nil
	}
	return json.Marshal(q)
}

// ErrSealed says why a node cannot open a queued job's env and stdin.
var ErrSealed = errors.New("cannot open the job's env and stdin")

// Open reads job id's spec and decision from the queue, opening its sealed
// env and stdin with key.
func Open(key []byte, id string, raw json.RawMessage) (Queued, error) {
	var q Queued
	if err := json.Unmarshal(raw, &q); err != nil {
		return Queued{}, err
	}
	if q.Sealed == nil {
		return q, nil
	}
	if key == nil {
		return Queued{}, fmt.Errorf("%w: this node has no token for the job's tenant (every node of a cluster needs the same tokens)", ErrSealed)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return Queued{}, err
	}
	n := aead.NonceSize()
	if len(q.Sealed) < n {
		return Queued{}, fmt.Errorf("%w: the sealed part is cut short", ErrSealed)
	}
	plain, err := aead.Open(nil, q.Sealed[:n], q.Sealed[n:], []byte(id))
	if err != nil {
		return Queued{}, fmt.Errorf("%w: they were sealed with another token of the tenant's, or changed", ErrSealed)
	}
	var parts sealedParts
	if err := json.Unmarshal(plain, &parts); err != nil {
		return Queued{}, err
	}
	q.Spec.Env, q.Spec.Stdin = parts.Env, parts.Stdin
	return q, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
