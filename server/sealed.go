package server

import "github.com/airlock-sandbox/airlock/cluster/seal"

// sealKey is the tenant's key for sealing a queued job's env and stdin
// (cluster/seal), or nil when the tenant has no token.
func (s *Service) sealKey(tenant string) ([]byte, error) {
	for _, t := range s.cfg.Tokens {
		if t.Tenant == tenant {
			return seal.Key(t.Token)
		}
	}
	return nil, nil
}
