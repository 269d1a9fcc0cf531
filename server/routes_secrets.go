package server

import (
	"fmt"
	"net/http"

	"github.com/airlock-sandbox/airlock/api"
)

// The handlers of /v1/secrets: write-only. A secret is stored and removed;
// the listing names each with its hosts, and no answer carries a value.

// PUT /v1/secrets/{name}: the body is the secret (value, hosts, and header or
// basic_user); the answer is what was stored, without its value.
func (a *httpAPI) putSecret(w http.ResponseWriter, r *http.Request, tenant string) error {
	var sec api.Secret
	if err := readJSON(w, r, &sec, smallBody, false); err != nil {
		return err
	}
	name := r.PathValue("name")
	if sec.Name != "" && sec.Name != name {
		return api.NewError("invalid_request", "name", fmt.Sprintf("name: %q differs from the path's %q", sec.Name, name))
	}
	info, err := a.svc.PutSecret(r.Context(), tenant, name, sec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// DELETE /v1/secrets/{name}
func (a *httpAPI) removeSecret(w http.ResponseWriter, r *http.Request, tenant string) error {
	if err := a.svc.DeleteSecret(r.Context(), tenant, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// GET /v1/secrets
func (a *httpAPI) listSecrets(w http.ResponseWriter, r *http.Request, tenant string) error {
	list, err := a.svc.Secrets(r.Context(), tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.SecretList{Secrets: list})
	return nil
}
