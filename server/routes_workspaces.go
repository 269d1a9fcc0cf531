package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// The handlers of /v1/workspaces. Files travel as raw bytes (one file) or tar
// archives (a directory), never as JSON; listings and workspaces are JSON.

// transferTime bounds an upload or download: bodies of hundreds of MiB on a slow link.
const transferTime = 30 * time.Minute

// uploadLimit bounds an upload's body: the largest workspace, plus the
// archive's own headers and padding (the executor refuses an archive whose files
// do not fit the workspace in any case).
func (a *httpAPI) uploadLimit() int64 {
	return 2*a.svc.ex.Config().MaxWorkspaceSize + 1<<20
}

// POST /v1/workspaces
func (a *httpAPI) createWorkspace(w http.ResponseWriter, r *http.Request, tenant string) error {
	var spec executor.WorkspaceSpec
	if err := readJSON(w, r, &spec, smallBody, true); err != nil {
		return err
	}
	extend(w, startTime) // the holder's image may be built first
	ws, err := a.svc.CreateWorkspace(r.Context(), tenant, spec, "http", r.RemoteAddr)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/workspaces/"+ws.ID)
	writeJSON(w, http.StatusCreated, ws)
	return nil
}

// GET /v1/workspaces
func (a *httpAPI) listWorkspaces(w http.ResponseWriter, r *http.Request, tenant string) error {
	list, err := a.svc.Workspaces(r.Context(), tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.WorkspaceList{Workspaces: list})
	return nil
}

// GET /v1/workspaces/{id}
func (a *httpAPI) getWorkspace(w http.ResponseWriter, r *http.Request, tenant string) error {
	ws, err := a.svc.Workspace(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ws)
	return nil
}

// DELETE /v1/workspaces/{id}
func (a *httpAPI) removeWorkspace(w http.ResponseWriter, r *http.Request, tenant string) error {
	if err := a.svc.RemoveWorkspace(r.Context(), tenant, r.PathValue("id"), "http", r.RemoteAddr); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// PUT /v1/workspaces/{id}/files/{path...}?mode=0755: the body is the file.
func (a *httpAPI) putFile(w http.ResponseWriter, r *http.Request, tenant string) error {
	var mode fs.FileMode
	if v := r.URL.Query().Get("mode"); v != "" {
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil || m > 0o777 {
			return api.NewError("invalid_request", "mode", fmt.Sprintf("mode: %q is not octal permission bits (e.g. 0644, 0755)", v))
		}
		mode = fs.FileMode(m)
	}
	extend(w, transferTime)
	body := checkLength(w, r, a.uploadLimit()).streamed(r, transferTime)
	err := a.svc.PutFile(r.Context(), tenant, r.PathValue("id"), r.PathValue("path"), mode, body, "http", r.RemoteAddr)
	return a.uploaded(w, r, body, err)
}

// GET /v1/workspaces/{id}/files/{path...}: a file's bytes, or a directory's
// listing as JSON (for a directory, and for a path ending in / or empty).
func (a *httpAPI) getFile(w http.ResponseWriter, r *http.Request, tenant string) error {
	id, p := r.PathValue("id"), r.PathValue("path")
	if p == "" || strings.HasSuffix(p, "/") {
		return a.listFiles(w, r, tenant, p)
	}
	rc, info, err := a.svc.OpenFile(r.Context(), tenant, id, p)
	if errors.Is(err, executor.ErrWrongType) {
		return a.listFiles(w, r, tenant, p)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	extend(w, transferTime)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("Last-Modified", info.ModTime.Format(http.TimeFormat))
	w.Header().Set("X-Airlock-Mode", info.Mode)
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		a.log.Warn("download cut short", "workspace", id, "path", p, "err", err)
	}
	return nil
}

func (a *httpAPI) listFiles(w http.ResponseWriter, r *http.Request, tenant, p string) error {
	list, err := a.svc.ListFiles(r.Context(), tenant, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// DELETE /v1/workspaces/{id}/files/{path...}
func (a *httpAPI) removeFile(w http.ResponseWriter, r *http.Request, tenant string) error {
	if err := a.svc.RemoveFile(r.Context(), tenant, r.PathValue("id"), r.PathValue("path"), "http", r.RemoteAddr); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// PUT /v1/workspaces/{id}/archive/{path...}: the body is a tar or tar.gz
// archive, extracted at path (created if missing).
func (a *httpAPI) putArchive(w http.ResponseWriter, r *http.Request, tenant string) error {
	extend(w, transferTime)
	body := checkLength(w, r, a.uploadLimit()).streamed(r, transferTime)
	err := a.svc.PutArchive(r.Context(), tenant, r.PathValue("id"), r.PathValue("path"), body, "http", r.RemoteAddr)
	return a.uploaded(w, r, body, err)
}

// GET /v1/workspaces/{id}/archive/{path...}: the directory as a tar archive.
func (a *httpAPI) getArchive(w http.ResponseWriter, r *http.Request, tenant string) error {
	rc, err := a.svc.OpenArchive(r.Context(), tenant, r.PathValue("id"), r.PathValue("path"))
	if err != nil {
		return err
	}
	defer rc.Close()
	extend(w, transferTime)
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		a.log.Warn("archive download cut short", "workspace", r.PathValue("id"), "err", err)
	}
	return nil
}

// uploaded answers an upload that ended with err. A body that disagreed with
// its Content-Length is that, whatever the executor made of the cut stream (an
// archive it could not read, an aborted copy).
func (a *httpAPI) uploaded(w http.ResponseWriter, r *http.Request, body *lengthChecked, err error) error {
	switch {
	case body.fault != nil:
		err = body.fault
	case err != nil:
		err = tooLarge(r, err)
	}
	if body.conn != nil { // taken over at the body's end: the answer goes there
		var e *api.Error
		if err != nil {
			e = a.errorOf(r.Context(), err)
			if e.Status >= 500 {
				a.log.Warn("request failed", "code", e.Code, "err", e.Message)
			}
		}
		body.respond(e)
		return nil
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// tooLarge names the body when an upload passed the server's limit.
func tooLarge(r *http.Request, err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		// r.Pattern is the route with its method: "POST /v1/processes".
		return api.NewError("too_large", "body", fmt.Sprintf("body: larger than the limit of %d bytes for %s", maxErr.Limit, r.Pattern))
	}
	return err
}
