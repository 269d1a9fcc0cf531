package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/api"
)

// The handlers of /v1/secrets: write-only. A secret is stored and removed;
// the listing names each with its hosts, and no answer carries a value.

// PUT /v1/secrets/{name}: the body is the secret (value, hosts, and header or
// basic_user); the answer is what was stored, without its value.
func (a *httpAPI) putSecret(w http.ResponseWriter, r *http.Request, tenant string) error {
	var sec api.Secret
	var body bytes.Buffer
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(r.Body, &body), r.Body}
	if err := readJSON(w, r, &sec, smallBody, false); err != nil {
		return err
	}
	if err := checkSecretText(body.Bytes()); err != nil {
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

// checkSecretText refuses a secret whose text fields are not valid UTF-8
// in the body, data: Go's JSON decoder would put U+FFFD in place of each
// invalid byte (and of a lone surrogate escape), and the secret stored
// would not be the one sent. A credential that is bytes goes base64 or
// hex encoded, as the service that takes it expects it.
func checkSecretText(data []byte) error {
	var raw struct {
		Value     json.RawMessage `json:"value"`
		Header    json.RawMessage `json:"header"`
		BasicUser json.RawMessage `json:"basic_user"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil // readJSON decoded it: a field of another type than text is its to refuse
	}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"value", raw.Value}, {"header", raw.Header}, {"basic_user", raw.BasicUser}} {
		if why := invalidText(f.raw); why != "" {
			return badField(f.name, "%s; it would be stored changed (write bytes in base64 or hex, as the host expects them)", why)
		}
	}
	return nil
}

// invalidText says why lit, a JSON string literal (or a whole document,
// whose escapes are all in strings), is not valid UTF-8 text, or "".
func invalidText(lit []byte) string {
	if !utf8.Valid(lit) {
		return "is not valid UTF-8"
	}
	// escape reads the \uXXXX at lit[i:], when there is one.
	escape := func(i int) (uint64, bool) {
		if i+6 > len(lit) || lit[i] != '\\' || lit[i+1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(lit[i+2:i+6]), 16, 16)
		return r, err == nil
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		if !ok {
			i++ // another escape: \\, \", \n...
			continue
		}
		i += 5
		if r >= 0xD800 && r <= 0xDBFF {
			if lo, ok := escape(i + 1); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 6
				continue
			}
		}
		if r >= 0xD800 && r <= 0xDFFF {
			return fmt.Sprintf("holds a lone surrogate escape (\\u%04X), which is no character", r)
		}
	}
	return ""
}
