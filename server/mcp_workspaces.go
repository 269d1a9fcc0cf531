package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// maxReadFile bounds what one read_file returns; larger files are read in pages.
const maxReadFile = 1 << 20

// addWorkspaceTools adds the tools an agent works on its files with: a
// workspace to create and delete, files to write, read and list; run and start
// take the workspace in their workspace field.
func (s *Service) addWorkspaceTools(srv *mcp.Server, tenant string) {
	const via = "mcp"
	mcp.AddTool(srv, &mcp.Tool{Name: "create_workspace", Description: "Create a workspace: a directory kept across runs. " +
		"Give its id as workspace to run and start, and the commands see its files at /workspace (their working directory). " +
		"size is in bytes (default 256 MiB); ttl in seconds removes it later.", Annotations: sandboxed},
		func(ctx context.Context, req *mcp.CallToolRequest, spec executor.WorkspaceSpec) (*mcp.CallToolResult, executor.Workspace, error) {
			w, err := s.CreateWorkspace(ctx, tenant, spec, via, remoteOf(req))
			if err != nil {
				return nil, w, toolError(err)
			}
			return text(fmt.Sprintf("created workspace %s (%d bytes)", w.ID, w.Size)), w, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_workspace", Description: "Delete a workspace and every file in it. " +
		"Refused while a run or process uses it.", Annotations: destructive},
		func(ctx context.Context, req *mcp.CallToolRequest, in api.WorkspaceRequest) (*mcp.CallToolResult, api.WorkspaceRequest, error) {
			if err := s.RemoveWorkspace(ctx, tenant, in.Workspace, via, remoteOf(req)); err != nil {
				return nil, in, toolError(err)
			}
			return text("deleted workspace " + in.Workspace), in, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write a file into a workspace, creating its directories. " +
		"content is text, or base64 with encoding base64; mode is octal (0755 for a script).",
		InputSchema: inputSchema[api.WriteFileRequest](map[string][]any{"encoding": encodingEnum}), Annotations: sandboxed},
		func(ctx context.Context, req *mcp.CallToolRequest, in api.WriteFileRequest) (*mcp.CallToolResult, api.WriteFileResult, error) {
			data, mode, err := decodeWrite(in)
			if err != nil {
				return nil, api.WriteFileResult{}, err
			}
			if err := s.PutFile(ctx, tenant, in.Workspace, in.Path, mode, strings.NewReader(data), via, remoteOf(req)); err != nil {
				return nil, api.WriteFileResult{}, toolError(err)
			}
			return text(fmt.Sprintf("wrote %d bytes to %s", len(data), in.Path)), api.WriteFileResult{Path: in.Path, Bytes: int64(len(data))}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: "Read a file of a workspace, up to 1 MiB from offset; " +
		"next is where the following page starts. Content that is not UTF-8 comes as base64.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in api.ReadFileRequest) (*mcp.CallToolResult, api.ReadFileResult, error) {
			res, err := s.readFile(ctx, tenant, in)
			if err != nil {
				return nil, res, toolError(err)
			}
			msg := fmt.Sprintf("%s: %d bytes", res.Path, res.Size)
			if res.Offset > 0 || res.Next < res.Size {
				msg += fmt.Sprintf(", bytes %d-%d shown; next %d", res.Offset, res.Next, res.Next)
			}
			if res.Encoding == "base64" {
				msg += " (not UTF-8: content is base64)"
			} else {
				msg += "\n" + res.Content
			}
			return text(msg), res, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_files", Description: "List a directory of a workspace: name, type, size, mode, mtime; " +
		"symlinks with their targets (never followed).", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in api.ListFilesRequest) (*mcp.CallToolResult, executor.FileList, error) {
			list, err := s.ListFiles(ctx, tenant, in.Workspace, in.Path)
			if err != nil {
				return nil, list, toolError(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d entries", list.Path, len(list.Files))
			if list.Truncated {
				b.WriteString(" (truncated)")
			}
			for _, f := range list.Files {
				fmt.Fprintf(&b, "\n%s %s %d %q", f.Mode, f.Type, f.Size, f.Name)
				if f.Target != "" {
					fmt.Fprintf(&b, " -> %q", f.Target)
				}
			}
			return text(b.String()), list, nil
		})
}

func decodeWrite(in api.WriteFileRequest) (data string, mode fs.FileMode, err error) {
	data = in.Content
	switch in.Encoding {
	case "", "utf8":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil {
			return "", 0, fmt.Errorf("content: not base64: %v", err)
		}
		data = string(b)
	default:
		return "", 0, fmt.Errorf("encoding: %q is not utf8 or base64", in.Encoding)
	}
	if in.Mode != "" {
		m, err := strconv.ParseUint(in.Mode, 8, 32)
		if err != nil || m > 0o777 {
			return "", 0, fmt.Errorf("mode: %q is not octal permission bits (e.g. 0644, 0755)", in.Mode)
		}
		mode = fs.FileMode(m)
	}
	return data, mode, nil
}

// readFile reads one page of a workspace file for read_file.
func (s *Service) readFile(ctx context.Context, tenant string, in api.ReadFileRequest) (api.ReadFileResult, error) {
	limit := in.Limit
	switch {
	case in.Offset < 0:
		return api.ReadFileResult{}, fmt.Errorf("offset: must not be negative")
	case limit < 0:
		return api.ReadFileResult{}, fmt.Errorf("limit: must not be negative")
	case limit == 0 || limit > maxReadFile:
		limit = maxReadFile
	}
	rc, info, err := s.OpenFile(ctx, tenant, in.Workspace, in.Path)
	if err != nil {
		return api.ReadFileResult{}, err
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, min(in.Offset, info.Size)); err != nil {
		return api.ReadFileResult{}, err
	}
	data, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return api.ReadFileResult{}, err
	}
	res := api.ReadFileResult{Path: in.Path, Size: info.Size, Mode: info.Mode, Offset: min(in.Offset, info.Size), Encoding: "utf8"}
	res.Next = res.Offset + int64(len(data))
	if utf8.Valid(data) {
		res.Content = string(data)
	} else {
		res.Content, res.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return res, nil
}
