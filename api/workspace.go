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
	// ErrUnsafePath: the path or an archive entry would reach outside the
	// workspace, through a symbolic link, or is of a kind airlock refuses.
	ErrUnsafePath = errors.New("refused path")
)
