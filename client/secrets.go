package client

import (
	"context"
	"net/url"

	"github.com/airlock-sandbox/airlock/api"
)

// PutSecret stores the tenant's secret sec.Name: a run that names it in
// Spec.Secrets sees a placeholder, and the server's proxy puts the value
// into its requests to sec.Hosts. The answer is what was stored, without
// the value: no call reads a value back.
func (c *Client) PutSecret(ctx context.Context, sec api.Secret) (api.SecretInfo, error) {
	var info api.SecretInfo
	err := c.call(ctx, "PUT", "/v1/secrets/"+url.PathEscape(sec.Name), nil, sec, &info)
	return info, err
}

// RemoveSecret deletes the tenant's stored secret name.
func (c *Client) RemoveSecret(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/v1/secrets/"+url.PathEscape(name), nil, nil, nil)
}

// Secrets lists the secrets the tenant may name, without their values.
func (c *Client) Secrets(ctx context.Context) ([]api.SecretInfo, error) {
	var list api.SecretList
	err := c.call(ctx, "GET", "/v1/secrets", nil, nil, &list)
	return list.Secrets, err
}
