package client

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
)

// The workspace methods mirror the executor's: errors match api.ErrWorkspaceNotFound,
// api.ErrFileNotFound, api.ErrUnsafePath, api.ErrWorkspaceFull, api.ErrWorkspaceBusy
// and the rest with errors.Is.

// CreateWorkspace makes a workspace for the client's tenant.
func (c *Client) CreateWorkspace(ctx context.Context, spec api.WorkspaceSpec) (api.Workspace, error) {
	var w api.Workspace
	err := c.call(ctx, "POST", "/v1/workspaces", nil, spec, &w)
	return w, err
}

// Workspace reports one workspace, with what its files take now.
func (c *Client) Workspace(ctx context.Context, id string) (api.Workspace, error) {
	var w api.Workspace
	err := c.call(ctx, "GET", "/v1/workspaces/"+url.PathEscape(id), nil, nil, &w)
	return w, err
}

// Workspaces lists the tenant's workspaces, oldest first.
func (c *Client) Workspaces(ctx context.Context) ([]api.Workspace, error) {
	var list api.WorkspaceList
	err := c.call(ctx, "GET", "/v1/workspaces", nil, nil, &list)
	return list.Workspaces, err
}

// RemoveWorkspace deletes a workspace and its files.
func (c *Client) RemoveWorkspace(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/workspaces/"+url.PathEscape(id), nil, nil, nil)
}

// filesPath is the route of a path in a workspace; each segment is escaped.
func filesPath(kind, id, p string) string {
	segs := strings.Split(strings.TrimLeft(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/v1/workspaces/" + url.PathEscape(id) + "/" + kind + "/" + strings.Join(segs, "/")
}

// PutFile writes content at p in the workspace, with mode's permission bits
// (0644 when 0).
func (c *Client) PutFile(ctx context.Context, id, p string, mode fs.FileMode, content io.Reader) error {
	q := url.Values{}
	if mode != 0 {
		q.Set("mode", fmt.Sprintf("%04o", mode.Perm()))
	}
	resp, err := c.sendRaw(ctx, "PUT", filesPath("files", id, p), q, content, "application/octet-stream", "application/json")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// PutArchive extracts a tar or tar.gz archive at dir in the workspace.
func (c *Client) PutArchive(ctx context.Context, id, dir string, archive io.Reader) error {
	resp, err := c.sendRaw(ctx, "PUT", filesPath("archive", id, dir), nil, archive, "application/x-tar", "application/json")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// OpenFile reads the regular file at p of the workspace; close it when done.
func (c *Client) OpenFile(ctx context.Context, id, p string) (io.ReadCloser, api.FileInfo, error) {
	resp, err := c.send(ctx, "GET", filesPath("files", id, p), nil, nil, "application/octet-stream")
	if err != nil {
		return nil, api.FileInfo{}, err
	}
	if isJSON(resp) { // a directory answers with its listing
		resp.Body.Close()
		return nil, api.FileInfo{}, api.NewError("wrong_type", "path", fmt.Sprintf("%v: %q is a directory; list it, or read it as an archive", api.ErrWrongType, p))
	}
	info := api.FileInfo{Name: p[strings.LastIndex(p, "/")+1:], Type: "file", Size: resp.ContentLength, Mode: resp.Header.Get("X-Airlock-Mode")}
	info.ModTime, _ = time.Parse(http.TimeFormat, resp.Header.Get("Last-Modified"))
	return resp.Body, info, nil
}

// OpenArchive reads the directory dir of the workspace as a tar archive.
func (c *Client) OpenArchive(ctx context.Context, id, dir string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, "GET", filesPath("archive", id, dir), nil, nil, "application/x-tar")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ListFiles lists the directory dir of the workspace.
func (c *Client) ListFiles(ctx context.Context, id, dir string) (api.FileList, error) {
	var list api.FileList
	p := filesPath("files", id, dir)
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	err := c.call(ctx, "GET", p, nil, nil, &list)
	return list, err
}

// RemoveFile deletes the file or directory at p of the workspace.
func (c *Client) RemoveFile(ctx context.Context, id, p string) error {
	return c.call(ctx, "DELETE", filesPath("files", id, p), nil, nil, nil)
}

func isJSON(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
}
