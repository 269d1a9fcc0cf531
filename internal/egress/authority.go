package egress

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Authority is the certificate authority with which the proxy terminates TLS
// for the hosts of a run's secrets, and only for them: it issues a leaf for
// the host a CONNECT named. The sandbox trusts its certificate (CertPEM); its
// key stays in airlock. One Authority serves every session of a process.
type Authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// AuthorityLifetime is how long a new authority is valid; rotate it before.
const AuthorityLifetime = 365 * 24 * time.Hour

// leafLifetime bounds a leaf; a cached one is renewed a day before its end.
const leafLifetime = 7 * 24 * time.Hour

// maxLeaves bounds the cache of leaves; past it, it starts again empty.
const maxLeaves = 4096

// NewAuthority makes a new authority, with a new P-256 key, named name.
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("authority key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"airlock"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(AuthorityLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("authority certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return ParseAuthority(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// ParseAuthority reads an authority from its certificate and its PKCS #8
// key, both PEM, as CertPEM and KeyPEM wrote them.
func ParseAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("authority: certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("authority certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("authority key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, errors.New("authority: not a CA certificate and its signing key")
	}
	return &Authority{cert: cert, key: key, pem: pem.EncodeToMemory(cb), leaves: map[string]*tls.Certificate{}}, nil
}

// CertPEM is the authority's certificate, which a sandbox trusts.
func (a *Authority) CertPEM() []byte { return a.pem }

// KeyPEM is the authority's key, for its owner to store (encrypted).
func (a *Authority) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(a.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// NotAfter is when the authority's certificate ends.
func (a *Authority) NotAfter() time.Time { return a.cert.NotAfter }

// leaf returns a certificate for host signed by the authority, made once and
// kept until a day before it ends.
func (a *Authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if c, ok := a.leaves[host]; ok && now.Add(24*time.Hour).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	end := now.Add(leafLifetime)
	if end.After(a.cert.NotAfter) {
		end = a.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     end,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("leaf for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: leaf}
	if len(a.leaves) >= maxLeaves {
		clear(a.leaves)
	}
	a.leaves[host] = c
	return c, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
