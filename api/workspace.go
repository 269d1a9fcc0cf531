package api

import (
	"errors"
	"time"
)

// WorkspaceSpec asks for a new workspace: a directory that outlives runs,
// mounted read-write at /workspace in every run that names it. Zero values mean
// the operator's defaults.
type WorkspaceSpec struct {
	// Size bounds the bytes the workspace holds; a write past it is ENOSPC.
	Size int64 `json:"size,omitempty" jsonschema:"bytes the workspace may hold (default 268435456, 256 MiB); a write past it fails with ENOSPC"`
	// Inodes bounds the files and directories it holds; 0 means one per 4 KiB of Size.
	Inodes int64 `json:"inodes,omitempty" jsonschema:"files and directories the workspace may hold (default: one per 4 KiB of size)"`
	// TTL, when set, has the workspace removed that long after its creation.
	TTL Seconds `json:"ttl,omitempty" jsonschema:"seconds after which the workspace is removed (default: kept until deleted)"`
	// Labels are the caller's metadata, echoed back.
	Labels map[string]string `json:"labels,omitempty" jsonschema:"your metadata, echoed back"`
}

// Workspace is a workspace as airlock reports it.
type Workspace struct {
	ID        string            `json:"id"`
	Tenant    string            `json:"tenant,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Size      int64             `json:"size"`
	Inodes    int64             `json:"inodes"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
	// UsedBytes and UsedInodes are what its files take now (Get only; omitted in a list).
	UsedBytes  *int64 `json:"used_bytes,omitempty"`
	UsedInodes *int64 `json:"used_inodes,omitempty"`
	// Lost is true when the engine restarted (or its holder was stopped): the
	// files are gone and the workspace can only be deleted.
	Lost bool `json:"lost,omitempty"`
	// InUse counts the runs and jobs on it now (Get only).
	InUse int `json:"in_use,omitempty"`
}

// WorkspaceList answers GET /v1/workspaces.
type WorkspaceList struct {
	Workspaces []Workspace `json:"workspaces"`
}

// FileInfo is one entry of a workspace directory.
type FileInfo struct {
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other" (a fifo, socket or device a run made).
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // permission bits in octal, e.g. "0644"
	ModTime time.Time `json:"mtime"`
	// Target is where a symlink points; airlock never follows it.
	Target string `json:"target,omitempty"`
}

// FileList answers a listing of a workspace directory.
type FileList struct {
	Path  string     `json:"path"`
	Files []FileInfo `json:"files"`
	// Truncated is set when the directory holds more entries than a listing returns.
	Truncated bool `json:"truncated,omitempty"`
}

// Errors of workspaces, matched with errors.Is.
var (
	// ErrWorkspaceNotFound: no workspace of this id belongs to the caller.
	ErrWorkspaceNotFound = errors.New("no such workspace")
	// ErrWorkspaceBusy: a running run or job uses the workspace.
	ErrWorkspaceBusy = errors.New("workspace is in use")
	// ErrWorkspaceFull: the write would pass the workspace's size or inode limit.
	ErrWorkspaceFull = errors.New("workspace is full")
	// ErrWorkspaceLost: the workspace's files were lost with an engine restart.
	ErrWorkspaceLost = errors.New("workspace files were lost")
	// ErrFileNotFound: no such file or directory in the workspace.
	ErrFileNotFound = errors.New("no such file in the workspace")
	// ErrWorkspaceQuota: the tenant's workspaces would pass its count or byte limit.
	ErrWorkspaceQuota = errors.New("workspace limit reached")
	// ErrWrongType: the path is a directory where a file is needed, or the reverse.
	ErrWrongType = errors.New("wrong kind of file")
	// ErrUnsafePath: the path or an archive entry would reach outside the
	// workspace, through a symbolic link, or is of a kind airlock refuses.
	ErrUnsafePath = errors.New("refused path")
)

// The MCP tools' requests and answers for workspaces.

// WorkspaceRequest names a workspace.
type WorkspaceRequest struct {
	Workspace string `json:"workspace" jsonschema:"the workspace id (ws_...)"`
}

// WriteFileRequest is the write_file tool's input.
type WriteFileRequest struct {
	Workspace string `json:"workspace" jsonschema:"the workspace id (ws_...)"`
	Path      string `json:"path" jsonschema:"path relative to /workspace; its directories are created"`
	Content   string `json:"content" jsonschema:"the file's content"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf8 (default) or base64, for binary content"`
	Mode      string `json:"mode,omitempty" jsonschema:"permission bits in octal (default 0644; 0755 for a script)"`
}

// ReadFileRequest is the read_file tool's input.
type ReadFileRequest struct {
	Workspace string `json:"workspace" jsonschema:"the workspace id (ws_...)"`
	Path      string `json:"path" jsonschema:"path of a regular file relative to /workspace"`
	Offset    int64  `json:"offset,omitempty" jsonschema:"byte offset to read from (default 0)"`
	Limit     int64  `json:"limit,omitempty" jsonschema:"bytes to read at most (default and maximum 1048576)"`
}

// ReadFileResult is the read_file tool's answer.
type ReadFileResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode"`
	Offset  int64  `json:"offset"`
	Content string `json:"content"`
	// Encoding is utf8, or base64 when the bytes read are not valid UTF-8.
	Encoding string `json:"encoding"`
	// Next is the offset after the bytes read; it equals Size at the end.
	Next int64 `json:"next"`
}

// ListFilesRequest is the list_files tool's input.
type ListFilesRequest struct {
	Workspace string `json:"workspace" jsonschema:"the workspace id (ws_...)"`
	Path      string `json:"path,omitempty" jsonschema:"directory relative to /workspace (default its root)"`
}

// WriteFileResult is the write_file tool's answer.
type WriteFileResult struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}
